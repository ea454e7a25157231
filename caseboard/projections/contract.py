"""The projection contract (DESIGN.md §4) as a model: the keys every reducer's projection carries.

It validates rendered projections in tests and generates schemas/projection.schema.json. Extra keys are
welcome (``extra="allow"``); these keep their meaning.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Exact(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ScopeView(Open):
    tenant_id: str
    environment: str
    service: str


class HypothesisView(Exact):
    id: str
    statement: str
    status: Literal["proposed", "supported", "challenged", "confirmed", "confirmed_before_challenge", "refuted"]
    supporting_evidence: list[str]
    challenging_evidence: list[str]
    open_questions: list[str]


class SelectedItems(Open):
    observations: list[str]
    hypotheses: list[HypothesisView]


class ProposalView(Exact):
    id: str
    based_on_workspace_version: int
    depends_on: list[str]
    status: Literal["current", "requires_revalidation", "accepted", "revised", "withdrawn"]


class PendingWorkView(Exact):
    request_id: str
    status: Literal["awaiting_result", "claimed"]


class LimitsView(Open):
    max_selected_items: int
    max_investigation_cycles: int


class Projection(Open):
    schema_version: str
    reducer_version: str
    workspace_id: str
    workspace_version: int
    scope: ScopeView
    goal: str
    status: Literal[
        "investigating",
        "evidence_incomplete",
        "budget_exhausted",
        "human_review_required",
        "supported_conclusion",
        "closed",
    ]
    selected_items: SelectedItems
    proposals: list[ProposalView]
    pending_work: list[PendingWorkView]
    runtime_limits: LimitsView
    execution_mode: Literal["read_only"]
