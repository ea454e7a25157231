"""The workspace state that reducer workspace-rules-v1 folds commits into.

Records are frozen dataclasses; the state's collections are mappings from id to record, so that a change
is always "put a new record under its key". That makes ``fork()`` O(1): a fork layers an empty mapping over
each collection (``collections.ChainMap``), writes land in the new layer, and the parent is never touched.
The coordinator decides a contribution on a fork and throws it away; the cache folds the committed record.
"""

from __future__ import annotations

import dataclasses
from collections import ChainMap
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class ObservationRec:
    id: str
    statement: str
    source_system: str
    source_instance: str
    event_time: datetime
    event_time_quality: str
    evidence_ref: str | None
    instances: tuple[str, ...]
    expires_at: datetime | None
    derived_from: tuple[str, ...]
    author: str
    role: str
    version: int
    ingested_at: datetime
    via_request: str | None
    late: bool


@dataclass(frozen=True, slots=True)
class HypothesisRec:
    id: str
    statement: str
    author: str
    version: int
    supporting: tuple[str, ...]
    challenging: tuple[str, ...]
    verification: str | None = None
    verified_by: str | None = None
    verified_version: int | None = None


@dataclass(frozen=True, slots=True)
class QuestionRec:
    id: str
    text: str
    about: str | None
    author: str
    version: int
    answer: str | None = None
    answered_by: str | None = None
    answered_version: int | None = None
    evidence: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ProposalRec:
    id: str
    summary: str
    basis: int
    depends_on: tuple[str, ...]
    author: str
    version: int
    checked_at: int
    decision: str | None = None
    last_review: str | None = None
    last_review_version: int | None = None


@dataclass(frozen=True, slots=True)
class WorkRec:
    request_id: str
    kind: str
    target: str
    question: str | None
    timeout_s: int | None
    requested_by: str
    version: int
    requested_at: datetime
    status: str = "awaiting_result"
    generation: int = 0
    holder: str | None = None
    claimed_at: datetime | None = None
    lease_expires_at: datetime | None = None
    result_summary: str | None = None
    result_version: int | None = None
    query_completed: bool | None = None
    reclaims: int = 0
    last_reclaim_reason: str | None = None


@dataclass(frozen=True, slots=True)
class JudgmentRec:
    invocation_id: str
    component: str
    model: str
    author: str
    input_workspace_version: int
    version: int


@dataclass(frozen=True, slots=True)
class IdempotencyRec:
    digest: str
    version: int
    items: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class LateArrivalRec:
    ref: str
    type: str
    author: str
    version: int
    at: datetime


RECORDS: dict[str, type[Any]] = {
    "observations": ObservationRec,
    "hypotheses": HypothesisRec,
    "questions": QuestionRec,
    "proposals": ProposalRec,
    "work": WorkRec,
    "judgments": JudgmentRec,
    "idempotency": IdempotencyRec,
    "late_arrivals": LateArrivalRec,
}


@dataclass(slots=True)
class WorkspaceState:
    workspace_id: str
    version: int = 0
    at: datetime | None = None
    scope: dict[str, str] = field(default_factory=dict)
    goal: str = ""
    limits: dict[str, int] = field(default_factory=dict)
    execution_mode: str = "read_only"
    status: str = "investigating"
    status_reason: str | None = None
    handoff: str | None = None
    owner: str | None = None
    cycles_used: int = 0
    constraints_version: int = 0
    open_questions: int = 0
    active_proposals: int = 0
    pending_work: int = 0
    selected_count: int = 0
    head_hash: str | None = None
    ids: MutableMapping[str, str] = field(default_factory=dict)
    observations: MutableMapping[str, ObservationRec] = field(default_factory=dict)
    hypotheses: MutableMapping[str, HypothesisRec] = field(default_factory=dict)
    questions: MutableMapping[str, QuestionRec] = field(default_factory=dict)
    proposals: MutableMapping[str, ProposalRec] = field(default_factory=dict)
    work: MutableMapping[str, WorkRec] = field(default_factory=dict)
    judgments: MutableMapping[str, JudgmentRec] = field(default_factory=dict)
    selected: MutableMapping[str, bool] = field(default_factory=dict)
    material: MutableMapping[str, int] = field(default_factory=dict)
    idempotency: MutableMapping[str, IdempotencyRec] = field(default_factory=dict)
    late_arrivals: MutableMapping[str, LateArrivalRec] = field(default_factory=dict)

    MAPPINGS: ClassVar[tuple[str, ...]] = (
        "ids",
        "observations",
        "hypotheses",
        "questions",
        "proposals",
        "work",
        "judgments",
        "selected",
        "material",
        "idempotency",
        "late_arrivals",
    )

    @property
    def opened(self) -> bool:
        return self.version >= 1

    def fork(self) -> WorkspaceState:
        """A state that starts equal to this one and takes writes without changing it. O(1)."""
        layered: dict[str, Any] = {name: ChainMap({}, getattr(self, name)) for name in self.MAPPINGS}
        return dataclasses.replace(self, scope=dict(self.scope), limits=dict(self.limits), **layered)

    def is_selected(self, item_id: str) -> bool:
        return self.selected.get(item_id, False)

    def selected_ids(self) -> list[str]:
        return [item_id for item_id, on in self.selected.items() if on]
