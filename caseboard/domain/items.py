"""The contribution items of contract v1 (DESIGN.md §3): one closed union, discriminated by ``type``.

Each model is frozen, forbids extra fields and keeps collections as tuples. The ``type`` literal is the
stored name of the item: it is written into the ledger and must never change for a released shape.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from caseboard.domain.citations import ARTIFACT_ID, Span

MAX_TEXT = 4096
"""Statements, summaries, rationales and questions are short claims; large material lives behind a ref."""

Id = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$")]
WORKSPACE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$"
"""A workspace id is an ``Id`` without ``/``: it is one path segment of every route (docs/adr/0046)."""
WorkspaceId = Annotated[str, StringConstraints(pattern=WORKSPACE_ID_PATTERN)]
Text = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=256)]
Ref = Annotated[str, StringConstraints(min_length=1, max_length=2048)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Seconds = Annotated[int, Field(gt=0, le=7 * 24 * 3600)]
MAX_REFS = 256
"""A list of references (evidence, dependencies, targets) names at most this many ids."""
MAX_OUTPUT_CHARS = 65536
"""A recorded judgment's output, as compact JSON, is at most this long; larger material lives behind a ref."""
MAX_DEPTH = 32
"""A free-form value (a judgment's output) nests at most this many arrays and objects (docs/adr/0045)."""
Ids = Annotated[tuple[Id, ...], Field(max_length=MAX_REFS)]
Names = Annotated[tuple[Name, ...], Field(max_length=MAX_REFS)]
Count = Annotated[int, Field(ge=0, le=1_000_000)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False)


class Role(StrEnum):
    OPERATOR = "operator"
    PLANNER = "planner"
    SPECIALIST = "specialist"
    REPORTER = "reporter"
    VERIFIER = "verifier"
    CONTROLLER = "controller"


class Status(StrEnum):
    INVESTIGATING = "investigating"
    EVIDENCE_INCOMPLETE = "evidence_incomplete"
    BUDGET_EXHAUSTED = "budget_exhausted"
    HUMAN_REVIEW_REQUIRED = "human_review_required"
    SUPPORTED_CONCLUSION = "supported_conclusion"
    CLOSED = "closed"


class Scope(Frozen):
    tenant_id: Id
    environment: Id
    service: Id


class RuntimeLimits(Frozen):
    max_selected_items: Count
    max_investigation_cycles: Count
    max_open_questions: Count
    max_proposals: Count
    max_pending_work: Count


class LimitsUpdate(Frozen):
    """A partial change of runtime limits (reopen, constraints): absent fields keep their value."""

    max_selected_items: Count | None = None
    max_investigation_cycles: Count | None = None
    max_open_questions: Count | None = None
    max_proposals: Count | None = None
    max_pending_work: Count | None = None


class Source(Frozen):
    system: Name
    instance: Name


class ObservationScope(Frozen):
    instances: Names = ()


Position = Annotated[int, Field(ge=0, le=10**15)]


class Citation(Frozen):
    """An exact excerpt of a stored artifact (docs/adr/0081): ``lines`` [A, B] from 1 or ``bytes`` [A, B] from 0,
    both ends included. Submitted as this object (or its string form); stored as the string
    ``sha256:<hex>#lines=A-B``, so an observation's stored shape is unchanged."""

    artifact: Annotated[str, StringConstraints(pattern=f"^{ARTIFACT_ID}$")]
    lines: tuple[Position, Position] | None = None
    bytes: tuple[Position, Position] | None = None

    @model_validator(mode="after")
    def _one_span(self) -> Citation:
        spans = [(unit, span) for unit, span in (("lines", self.lines), ("bytes", self.bytes)) if span is not None]
        if len(spans) != 1:
            raise ValueError("a citation names exactly one range: lines [A, B] or bytes [A, B]")
        Span.checked(spans[0][0], *spans[0][1])  # type: ignore[arg-type]
        return self

    @property
    def ref(self) -> str:
        unit, (first, last) = ("lines", self.lines) if self.lines is not None else ("bytes", self.bytes or (0, 0))
        return f"{self.artifact}#{unit}={first}-{last}"


def _citation_ref(value: Any) -> Any:
    """An object citation becomes its stored string form; anything else is left to ``Ref``."""
    if isinstance(value, Citation):
        return value.ref
    if isinstance(value, dict):
        try:
            return Citation.model_validate(value).ref
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first.get("loc", ()))
            problem = first["msg"].removeprefix("Value error, ")
            raise ValueError(f"citation{'.' + where if where else ''}: {problem}") from None
    return value


CITATION_SCHEMA: dict[str, Any] = {
    "title": "Citation",
    "type": "object",
    "description": Citation.__doc__,
    "properties": {
        "artifact": {"type": "string", "pattern": f"^{ARTIFACT_ID}$"},
        "lines": {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2},
        "bytes": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
    },
    "required": ["artifact"],
    "additionalProperties": False,
}
EvidenceRef = Annotated[
    Ref,
    BeforeValidator(_citation_ref),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 2048}, CITATION_SCHEMA]}, mode="validation"
    ),
]
"""A free reference (today's strings), or a citation of an artifact's excerpt, stored as its string form."""


class ObservationBody(Frozen):
    id: Id
    statement: Text
    source: Source
    event_time: AwareDatetime
    event_time_quality: Literal["verified", "unverified"]
    evidence_ref: EvidenceRef | None = None
    scope: ObservationScope | None = None
    expires_at: AwareDatetime | None = None
    derived_from: Ids = ()


class Open(Frozen):
    type: Literal["open"]
    scope: Scope
    goal: Text
    runtime_limits: RuntimeLimits
    execution_mode: Literal["read_only"]


class Observation(ObservationBody):
    type: Literal["observation"]


class Hypothesis(Frozen):
    type: Literal["hypothesis"]
    id: Id
    statement: Text
    supporting_evidence: Ids = ()
    challenging_evidence: Ids = ()


class Link(Frozen):
    type: Literal["link"]
    observation: Id
    hypothesis: Id
    relation: Literal["supports", "challenges"]
    rationale: Text | None = None


class Question(Frozen):
    type: Literal["question"]
    id: Id
    text: Text
    about: Id | None = None


class Answer(Frozen):
    type: Literal["answer"]
    question: Id
    text: Text
    evidence: Ids = ()


class Proposal(Frozen):
    type: Literal["proposal"]
    id: Id
    summary: Text
    based_on_workspace_version: Annotated[int, Field(ge=1)]
    depends_on: Ids = ()


Assumption = Annotated[str, StringConstraints(min_length=1, max_length=512)]


class Review(Frozen):
    type: Literal["review"]
    proposal: Id
    decision: Literal["retained", "revised", "withdrawn", "accepted"]
    what_changed: Text | None = None
    affected_assumptions: Annotated[tuple[Assumption, ...], Field(max_length=MAX_REFS)] = ()
    based_on_workspace_version: Annotated[int, Field(ge=1)] | None = None


class WorkRequest(Frozen):
    type: Literal["work_request"]
    request_id: Id
    kind: Id
    target: Text
    question: Text | None = None
    timeout_s: Seconds | None = None


class WorkClaim(Frozen):
    type: Literal["work_claim"]
    request_id: Id
    lease_s: Seconds


class WorkRenew(Frozen):
    type: Literal["work_renew"]
    request_id: Id
    generation: Annotated[int, Field(ge=1)]
    lease_s: Seconds


class QueryRecord(Frozen):
    """What a query covered: an empty result means something only alongside these."""

    time_range: tuple[AwareDatetime, AwareDatetime]
    filters: Annotated[dict[str, Name], Field(max_length=MAX_REFS)] = Field(default_factory=dict)
    targets: Names = ()
    completed: bool

    @model_validator(mode="after")
    def _range_is_ordered(self) -> QueryRecord:
        if self.time_range[0] > self.time_range[1]:
            raise ValueError("time_range must start before it ends")
        return self


class WorkResult(Frozen):
    type: Literal["work_result"]
    request_id: Id
    generation: Annotated[int, Field(ge=1)]
    status: Literal["completed", "failed"]
    summary: Text
    query: QueryRecord | None = None
    observation: ObservationBody | None = None


class WorkReclaim(Frozen):
    type: Literal["work_reclaim"]
    request_id: Id
    reason: Text


class Verification(Frozen):
    type: Literal["verification"]
    claim: Id
    check: Id
    result: Literal["confirmed", "refuted", "inconclusive"]


class Selection(Frozen):
    type: Literal["selection"]
    select: Ids = ()
    deselect: Ids = ()
    reason: Text


class Judgment(Frozen):
    type: Literal["judgment"]
    invocation_id: Id
    component: Name
    model: Name
    prompt_sha256: Sha256
    input_workspace_version: Annotated[int, Field(ge=1)]
    evidence_revisions: Annotated[dict[Id, int], Field(max_length=MAX_REFS)] = Field(default_factory=dict)
    output: dict[str, Any] = Field(default_factory=dict)

    @field_validator("output")
    @classmethod
    def _output_is_bounded(cls, output: dict[str, Any]) -> dict[str, Any]:
        return bounded_json(output, MAX_OUTPUT_CHARS)


def bounded_json(value: dict[str, Any], max_chars: int) -> dict[str, Any]:
    """A free-form value stored as it was submitted, or a ``ValueError``: at most ``max_chars`` as compact JSON,
    at most ``MAX_DEPTH`` levels of nesting, and no NaN or Infinity (JSON has no such numbers: they would be
    stored as null)."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        raise ValueError("holds NaN or Infinity, which JSON cannot carry: send a string or null") from None
    except RecursionError:
        raise ValueError(f"nests more than {MAX_DEPTH} levels of arrays and objects; at most {MAX_DEPTH}") from None
    if len(text) > max_chars:
        raise ValueError(f"is {len(text)} characters as JSON; at most {max_chars} (put the rest behind a ref)")
    # Fewer brackets than the bound (those in strings count too) cannot nest deeper: no walk.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(value) > MAX_DEPTH:
        raise ValueError(f"nests more than {MAX_DEPTH} levels of arrays and objects; at most {MAX_DEPTH}")
    return value


def _depth(value: Any) -> int:
    """How many arrays and objects nest in ``value`` (iteratively: a deep value must not exhaust the stack)."""
    deepest, pending = 0, [(value, 1)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list | tuple) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            return deepest
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list | tuple))
    return deepest


class Cycle(Frozen):
    type: Literal["cycle"]
    number: Annotated[int, Field(ge=1)]
    scheduled: Ids = ()


class StatusChange(Frozen):
    type: Literal["status"]
    to: Status
    reason: Text
    handoff: Text | None = None


class Reopen(Frozen):
    type: Literal["reopen"]
    owner: Id
    runtime_limits: LimitsUpdate


class Constraints(Frozen):
    type: Literal["constraints"]
    goal: Text | None = None
    scope: Scope | None = None
    runtime_limits: LimitsUpdate | None = None

    @model_validator(mode="after")
    def _changes_something(self) -> Constraints:
        if self.goal is None and self.scope is None and self.runtime_limits is None:
            raise ValueError("a constraints item changes at least one of goal, scope, runtime_limits")
        return self


Item = Annotated[
    Open
    | Observation
    | Hypothesis
    | Link
    | Question
    | Answer
    | Proposal
    | Review
    | WorkRequest
    | WorkClaim
    | WorkRenew
    | WorkResult
    | WorkReclaim
    | Verification
    | Selection
    | Judgment
    | Cycle
    | StatusChange
    | Reopen
    | Constraints,
    Field(discriminator="type"),
]

ITEM_TYPES: tuple[str, ...] = (
    "open",
    "observation",
    "hypothesis",
    "link",
    "question",
    "answer",
    "proposal",
    "review",
    "work_request",
    "work_claim",
    "work_renew",
    "work_result",
    "work_reclaim",
    "verification",
    "selection",
    "judgment",
    "cycle",
    "status",
    "reopen",
    "constraints",
)
