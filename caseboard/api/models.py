"""The HTTP bodies: requests built from the contract's item models, and declared response shapes.

Requests reuse the domain's pydantic models (``Item``, ``Scope``, ``RuntimeLimits``), so the HTTP contract
and the command line's contract are one. Responses declare the keys that the contract guarantees and allow
more (the projection has more keys than DESIGN.md §4 requires, and keeps adding them).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from caseboard.domain.contribution import MAX_ITEMS, IdempotencyKey
from caseboard.domain.items import Id, Item, Role, RuntimeLimits, Text, WorkspaceId, bounded_json


class _Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class ContributionRequest(_Request):
    """A contribution as submitted over HTTP. The author comes from the API key, never from the body.

    Parsed by ``caseboard.coordinator.parse.parse_json`` (strict JSON, in one pass). ``items`` is a list, not a
    tuple: pydantic checks a list's length before its elements, so a list over ``MAX_ITEMS`` costs one check
    rather than an error per element; the contribution made from it holds a tuple."""

    workspace_id: WorkspaceId | None = Field(
        None, description="optional; when present it must name the workspace in the path"
    )
    author: dict[str, Any] | None = Field(
        None, description="ignored: the author is the API key's principal and the role it acts in"
    )
    expected_version: Annotated[int, Field(ge=1)] | None = None
    idempotency_key: IdempotencyKey | None = None
    at: AwareDatetime | None = Field(
        None,
        description="honoured only by a server started with --trust-timestamps (recorded incidents)",
    )
    items: Annotated[list[Item], Field(min_length=1, max_length=MAX_ITEMS)]

    @field_validator("author")
    @classmethod
    def _author_is_bounded(cls, author: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if author is None else bounded_json(author, 4096)


class OpenScope(_Request):
    """What an investigation is about; its tenant is the key's."""

    tenant_id: Id | None = None
    """The key's tenant (the default); any other is refused ``forbidden``."""
    environment: Id
    """The environment investigated, e.g. `production`."""
    service: Id
    """The service investigated, e.g. `payments-api`."""


class OpenWorkspaceRequest(_Request):
    """Open a workspace: the operator's ``open`` item, in the key's tenant (``scope.tenant_id`` may be left out;
    given, it must be the key's tenant). The body, e.g.: ``{"workspace_id": "incident-042", "scope":
    {"environment": "production", "service": "payments-api"}, "goal": "...", "runtime_limits":
    {"max_selected_items": 20, "max_investigation_cycles": 8, "max_open_questions": 10, "max_proposals": 10,
    "max_pending_work": 10}}``."""

    workspace_id: WorkspaceId
    scope: OpenScope
    goal: Text
    runtime_limits: RuntimeLimits
    execution_mode: Literal["read_only"] = "read_only"
    idempotency_key: IdempotencyKey | None = None
    at: AwareDatetime | None = None


class AuthorOut(BaseModel):
    principal: str
    role: Role


class Accepted(_Open):
    ok: Literal[True]
    workspace_version: int
    items: list[dict[str, Any]]
    author: AuthorOut
    idempotent_replay: bool = False
    held: list[dict[str, Any]] = []
    """The items held for lack of capacity (``index``, ``type``, ``ref``, ``limit``, ``limit_value``, ``open``,
    ``reason``), absent when none: the others landed, and the workspace went to a person (ADR 0168)."""


class Refusal(_Open):
    """A refusal: nothing was appended. ``reason`` is a stable token (DESIGN.md §3, plus ``unauthenticated``
    and ``unavailable`` for HTTP)."""

    ok: Literal[False]
    reason: str
    message: str
    field: str | None = None


class HypothesisOut(_Open):
    id: str
    statement: str
    status: str
    supporting_evidence: list[str]
    challenging_evidence: list[str]
    open_questions: list[str]


class SelectedItems(_Open):
    observations: list[str]
    hypotheses: list[HypothesisOut]


class ProposalOut(_Open):
    id: str
    based_on_workspace_version: int
    depends_on: list[str]
    status: str


class PendingWorkOut(_Open):
    request_id: str
    status: str


class Projection(_Open):
    """The projection contract (DESIGN.md §4); more keys are present and keep their meaning."""

    schema_version: str
    reducer_version: str
    workspace_id: str
    workspace_version: int
    scope: dict[str, str]
    goal: str
    status: str
    selected_items: SelectedItems
    proposals: list[ProposalOut]
    pending_work: list[PendingWorkOut]
    runtime_limits: dict[str, int]
    execution_mode: str


class CommitOut(_Open):
    """One ledger commit: the items as submitted and the coordinator's decisions."""

    workspace_id: str
    workspace_version: int
    at: str
    author: AuthorOut
    items: list[dict[str, Any]]
    decisions: list[dict[str, Any]]
    hash: str | None = None
    previous_hash: str | None = None


class LedgerPage(BaseModel):
    workspace_id: str
    after: int
    head: int
    commits: list[CommitOut]
    next_after: int | None = Field(None, description="pass as ?after= to read on; absent at the head")


class TimelineEntry(BaseModel):
    event_time: str | None
    event_time_quality: str
    ingested_at: str | None
    recorded_at_version: int
    id: str
    source: dict[str, str]
    statement: str
    late_arrival: bool
    stale: bool
    via_request: str | None = Field(None, description="the work request whose result brought this observation")
    coverage: dict[str, Any] | None = Field(
        None, description="what that result's query covered: time_range, filters, targets, completed"
    )
    tied_with: list[str] = Field(
        default_factory=list, description="the observations at the same instant: a tie, not an order (reducer v4)"
    )
    event_time_flags: list[str] = Field(
        default_factory=list, description="`event_time_in_future`: later than its commit by more than the skew"
    )


class Timeline(BaseModel):
    workspace_id: str
    workspace_version: int
    entries: list[TimelineEntry]


class ChainHealth(BaseModel):
    """What the last re-verification of the chains under this process's cached workspaces found (ADR 0144)."""

    status: Literal["intact", "tampered", "not_checked"]
    tampered: int
    """Cached workspaces whose chain does not hold: their reads answer 409 ``tampered``."""
    checked: int
    """The cached workspaces the last sweep verified."""
    checked_at: str | None
    """When the last sweep ended (ISO 8601), or None before the first."""


class Health(BaseModel):
    """Each store: ``ok``, ``unavailable``, or ``no answer within 0.8 s`` (what the store said is logged)."""

    status: Literal["ok", "unavailable"]
    ledger: str
    keys: str
    artifacts: str
    knowledge: str
    chain: ChainHealth


class Whoami(BaseModel):
    key_id: str
    principal: str
    role: Role
    roles: list[Role]
    tenant_id: str
