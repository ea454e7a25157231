"""The contribution items of contract v1 (DESIGN.md §3): one closed union, discriminated by ``type``.

Each model is frozen, forbids extra fields and keeps collections as tuples. The ``type`` literal is the
stored name of the item: it is written into the ledger and must never change for a released shape.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

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

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,127}$"
Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
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
MAX_COUNT = 1_000_000
Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=False, use_attribute_docstrings=True)


class Role(StrEnum):
    OPERATOR = "operator"
    PLANNER = "planner"
    SPECIALIST = "specialist"
    REPORTER = "reporter"
    VERIFIER = "verifier"
    CONTROLLER = "controller"
    INTAKE = "intake"
    """An alerting system's key (docs/pilot.md): opens workspaces and records its alerts as observations."""


class Status(StrEnum):
    INVESTIGATING = "investigating"
    EVIDENCE_INCOMPLETE = "evidence_incomplete"
    BUDGET_EXHAUSTED = "budget_exhausted"
    HUMAN_REVIEW_REQUIRED = "human_review_required"
    SUPPORTED_CONCLUSION = "supported_conclusion"
    CLOSED = "closed"


class Scope(Frozen):
    """What an investigation is about. Changed later only by an operator's `constraints` item."""

    tenant_id: Id
    """The tenant that owns the workspace: only API keys of this tenant see it."""
    environment: Id
    """The environment investigated, e.g. `production`."""
    service: Id
    """The service investigated, e.g. `payments-api`."""


class RuntimeLimits(Frozen):
    """The budget and bounds of an investigation, set by the operator at opening (`open`) and changed by `reopen` or
    `constraints`."""

    max_selected_items: Count
    """At most this many top-level observations and hypotheses are selected into the workspace view (derived summaries
    do not count). Contradictions, blocking conditions and open questions are never dropped to make room: the
    workspace escalates to `human_review_required` instead."""
    max_investigation_cycles: Count
    """How many controller cycles the investigation may use; when they run out the status becomes `budget_exhausted`
    and no new work is scheduled."""
    max_open_questions: Count
    """At most this many questions open at once; one more is refused `limit_exceeded`, or held beside other items
    that land while the workspace escalates to `human_review_required` (docs/adr/0168)."""
    max_proposals: Count
    """At most this many proposals in the workspace; one more is refused `limit_exceeded`, or held beside other items
    that land while the workspace escalates to `human_review_required` (docs/adr/0168)."""
    max_pending_work: Count
    """At most this many work requests awaiting a result or claimed at once; one more is refused `limit_exceeded`, or
    held beside other items that land while the workspace escalates to `human_review_required` (docs/adr/0168)."""


class LimitsUpdate(Frozen):
    """A partial change of runtime limits (reopen, constraints): absent fields keep their value."""

    max_selected_items: Count | None = None
    """The new `max_selected_items`; absent keeps the current value."""
    max_investigation_cycles: Count | None = None
    """The new `max_investigation_cycles`; absent keeps the current value."""
    max_open_questions: Count | None = None
    """The new `max_open_questions`; absent keeps the current value."""
    max_proposals: Count | None = None
    """The new `max_proposals`; absent keeps the current value."""
    max_pending_work: Count | None = None
    """The new `max_pending_work`; absent keeps the current value."""


class Source(Frozen):
    """Where an observation was read from."""

    system: Name
    """The system the fact was read from, e.g. `auth-logs`, `change-calendar`."""
    instance: Name
    """The instance within that system, e.g. `payments-api-2`."""


class ObservationScope(Frozen):
    """What an observation covers."""

    instances: Names = ()
    """The instances the observation is about; empty for the whole service."""


Position = Annotated[int, Field(ge=0, le=10**15)]


class Citation(Frozen):
    """An exact excerpt of a stored artifact (docs/adr/0081): ``lines`` [A, B] from 1 or ``bytes`` [A, B] from 0,
    both ends included. Submitted as this object (or its string form); stored as the string
    ``sha256:<hex>#lines=A-B``, so an observation's stored shape is unchanged."""

    artifact: Annotated[str, StringConstraints(pattern=f"^{ARTIFACT_ID}$")]
    """The artifact's id, `sha256:<hex>` of its bytes (`caseboard artifacts put`, `POST /artifacts`)."""
    lines: tuple[Position, Position] | None = None
    """The excerpt as lines [A, B], counted from 1, both included."""
    bytes: tuple[Position, Position] | None = None
    """The excerpt as bytes [A, B], counted from 0, both included."""

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
        "artifact": {
            "type": "string",
            "pattern": f"^{ARTIFACT_ID}$",
            "description": Citation.model_fields["artifact"].description,
        },
        "lines": {
            "type": "array",
            "items": {"type": "integer", "minimum": 1, "maximum": 10**15},
            "minItems": 2,
            "maxItems": 2,
            "description": Citation.model_fields["lines"].description,
        },
        "bytes": {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": 10**15},
            "minItems": 2,
            "maxItems": 2,
            "description": Citation.model_fields["bytes"].description,
        },
    },
    "required": ["artifact"],
    "oneOf": [{"required": ["lines"]}, {"required": ["bytes"]}],  # exactly one range (``_one_span``)
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
    """An observation's content: one short factual claim, with its source, when it happened and where the raw evidence
    lives. Also the `observation` of a `work_result`."""

    id: Id
    """The observation's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    statement: Text
    """The observed fact as a short claim (at most 4096 characters); large material lives behind `evidence_ref`."""
    source: Source
    """The system and instance the fact was read from."""
    event_time: AwareDatetime
    """When it happened at the source (ISO 8601 with a time zone). It orders the incident timeline; arrival order never
    does."""
    event_time_quality: Literal["verified", "unverified"]
    """`verified` when the source's clock is trusted, `unverified` when the time is approximate or inferred."""
    evidence_ref: EvidenceRef | None = None
    """Where the raw evidence lives: a URL, an artifact id (`sha256:<hex>`), a saved query (at most 2048 characters)."""
    scope: ObservationScope | None = None
    """The instances the observation covers."""
    expires_at: AwareDatetime | None = None
    """When the fact stops being current (a metric snapshot, a lease): from then on it is shown stale, and proposals
    resting on it, directly or through a hypothesis it supports, require revalidation."""
    derived_from: Ids = ()
    """The ids of the observations this one summarizes. A derived summary is not independent evidence and does not
    count against `max_selected_items`; a reporter may submit only such summaries."""


class Open(Frozen):
    """Opens a workspace: the commit of version 1, alone in its contribution. Submitted by an operator, or by an
    alerting system's `intake` key for the alert group it opens (docs/pilot.md)."""

    type: Literal["open"]
    """The item's type, `open`: its stored name, written into the ledger with it."""
    scope: Scope
    """What the investigation is about: tenant, environment and service."""
    goal: Text
    """What the investigation must find out, as a short sentence."""
    runtime_limits: RuntimeLimits
    """The investigation's budget and bounds."""
    execution_mode: Literal["read_only"]
    """Always `read_only`: participants observe and propose, they never act on systems. Set at opening from trusted
    configuration; no item changes it."""


class Observation(ObservationBody):
    """A fact a participant observed. Submitted by a specialist, by a reporter when it is a summary of other
    observations (`derived_from` not empty), or by an `intake` key for an alert, citing the stored notification."""

    type: Literal["observation"]
    """The item's type, `observation`: its stored name, written into the ledger with it."""


class Hypothesis(Frozen):
    """A candidate explanation, with the evidence for and against it. Submitted by a planner."""

    type: Literal["hypothesis"]
    """The item's type, `hypothesis`: its stored name, written into the ledger with it."""
    id: Id
    """The hypothesis's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    statement: Text
    """The candidate explanation as a short claim."""
    supporting_evidence: Ids = ()
    """Ids of the observations that support it."""
    challenging_evidence: Ids = ()
    """Ids of the observations that challenge it. A challenge never erases support; recording one is a material change
    for proposals that depend on the hypothesis."""


class Link(Frozen):
    """Relates an observation to a hypothesis after both were recorded. Submitted by a planner or a specialist."""

    type: Literal["link"]
    """The item's type, `link`: its stored name, written into the ledger with it."""
    observation: Id
    """The id of a recorded observation."""
    hypothesis: Id
    """The id of a recorded hypothesis."""
    relation: Literal["supports", "challenges"]
    """`supports` or `challenges`. A challenge is a material change for proposals that depend on the hypothesis, and
    selects the observation when the hypothesis is selected."""
    rationale: Text | None = None
    """Why the observation bears on the hypothesis, as a short sentence."""


class Question(Frozen):
    """A question the investigation must answer; open until answered. Submitted by a planner, a specialist or a
    reporter; at most `max_open_questions` open at once."""

    type: Literal["question"]
    """The item's type, `question`: its stored name, written into the ledger with it."""
    id: Id
    """The question's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    text: Text
    """The question."""
    about: Id | None = None
    """The id of the hypothesis the question is about, if any."""


class Answer(Frozen):
    """Answers an open question. Submitted by a planner or a specialist."""

    type: Literal["answer"]
    """The item's type, `answer`: its stored name, written into the ledger with it."""
    question: Id
    """The id of the open question answered."""
    text: Text
    """The answer as a short claim."""
    evidence: Ids = ()
    """Ids of the observations the answer rests on; an answer without any is shown as unsupported."""


class Proposal(Frozen):
    """A proposed conclusion or next step, built from the workspace at a version. Submitted by a planner; at most
    `max_proposals`. Recording it is not a material change."""

    type: Literal["proposal"]
    """The item's type, `proposal`: its stored name, written into the ledger with it."""
    id: Id
    """The proposal's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    summary: Text
    """What is proposed, as a short claim."""
    based_on_workspace_version: Annotated[int, Field(ge=1)]
    """The workspace version the proposal was built from (its basis, never changed). A material change to what it
    depends on committed after it makes it `requires_revalidation`, also when it is recorded already stale."""
    depends_on: Ids = ()
    """Ids of the hypotheses and observations the proposal rests on. Material changes to them, or to the evidence under
    those hypotheses, require revalidation."""


Assumption = Annotated[str, StringConstraints(min_length=1, max_length=512)]


class Review(Frozen):
    """Decides on a proposal: `retained` (current again against the reviewed version, the original basis kept on
    record; an earlier acceptance is cleared), `revised` or `withdrawn` (final), or `accepted` (an operator's
    approval). Submitted by a planner; `accepted` by an operator only, in a contribution with `expected_version`,
    and only while the proposal is current."""

    type: Literal["review"]
    """The item's type, `review`: its stored name, written into the ledger with it."""
    proposal: Id
    """The id of the proposal reviewed."""
    decision: Literal["retained", "revised", "withdrawn", "accepted"]
    """`retained`, `revised`, `withdrawn` or `accepted` (see the item)."""
    what_changed: Text | None = None
    """What changed since the proposal's basis, and how the review weighed it."""
    affected_assumptions: Annotated[tuple[Assumption, ...], Field(max_length=MAX_REFS)] = ()
    """The assumptions of the proposal that the change touched: the ids of hypotheses or observations it depends on, or
    the assumptions themselves as short texts (at most 512 characters each, at most 256 of them)."""
    based_on_workspace_version: Annotated[int, Field(ge=1)] | None = None
    """The workspace version the review was made against (default: the contribution's `expected_version`). A `retained`
    or `accepted` review states it; material changes committed after it keep the proposal `requires_revalidation`."""


class WorkRequest(Frozen):
    """Asks for work of a kind (a log query, a certificate check, ...): pending until a result arrives. Submitted by a
    planner or the controller; at most `max_pending_work` pending at once."""

    type: Literal["work_request"]
    """The item's type, `work_request`: its stored name, written into the ledger with it."""
    request_id: Id
    """The request's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    kind: Id
    """The kind of work, e.g. `log_query`, `change_calendar`, `certificate_check`: specialists serving that kind are
    told (verifiers too, for kinds ending in `_check`)."""
    target: Text
    """What to look at, as a short description."""
    question: Text | None = None
    """What the work should answer, when the target alone does not say."""
    timeout_s: Seconds | None = None
    """How many seconds a result is waited for once claimed (at most 7 days); then the controller may reclaim the
    request."""


class WorkClaim(Frozen):
    """Claims a work request for a lease: the claim gets the request's next generation (1 for the first claim).
    Submitted by a specialist or a verifier; `lease_held` while another principal holds a live lease."""

    type: Literal["work_claim"]
    """The item's type, `work_claim`: its stored name, written into the ledger with it."""
    request_id: Id
    """The id of the work request claimed."""
    lease_s: Seconds
    """How many seconds the lease lasts from the commit's time (at most 7 days). A lapsed lease does not block a new
    claim, which fences the previous holder as a reclaim does."""


class WorkRenew(Frozen):
    """Extends the lease of a live claim. Submitted by the claim's holder."""

    type: Literal["work_renew"]
    """The item's type, `work_renew`: its stored name, written into the ledger with it."""
    request_id: Id
    """The id of the work request whose lease is renewed."""
    generation: Annotated[int, Field(ge=1)]
    """The generation of the live claim; any other is refused `fenced`."""
    lease_s: Seconds
    """The new lease, in seconds from the commit's time (at most 7 days)."""


class QueryRecord(Frozen):
    """What a query covered: an empty result means something only alongside these."""

    time_range: tuple[AwareDatetime, AwareDatetime]
    """Start and end (ISO 8601 with a time zone) of the period the query covered; the start is not after the end."""
    filters: Annotated[dict[str, Name], Field(max_length=MAX_REFS)] = Field(default_factory=dict)
    """The filters applied, as name -> value (e.g. `{"service": "payments-api"}`)."""
    targets: Names = ()
    """The instances, hosts or data sources queried."""
    completed: bool
    """Whether the query ran to completion: a result of an incomplete query is never shown as a clean result."""
    operation: Name | None = None
    """The read operation run (`range_query`, `chain`, ...), when a source specialist ran it (docs/sources.md)."""
    parameters: Annotated[dict[str, Text], Field(max_length=MAX_REFS)] | None = None
    """The operation's parameters as the source received them, as name -> value."""
    answered: Names | None = None
    """Of `targets`, those that answered; a target asked for and missing here makes the query incomplete."""
    incomplete: Names | None = None
    """Why the query is incomplete: `timeout`, `partial_response`, `source_warning: ...`, `truncated: ...`,
    `missing_target: ...`."""
    elapsed_ms: Annotated[float, Field(ge=0)] | None = None
    """How long the query took, in milliseconds."""
    response: Annotated[str, StringConstraints(pattern=f"^{ARTIFACT_ID}$")] | None = None
    """The artifact (`sha256:<hex>`) holding the raw response, as the source sent it (cut at the guardrail)."""

    @model_validator(mode="after")
    def _range_is_ordered(self) -> QueryRecord:
        if self.time_range[0] > self.time_range[1]:
            raise ValueError("time_range must start before it ends")
        return self


class WorkResult(Frozen):
    """Reports the outcome of claimed work, which ends the request. Submitted by the claim's holder, with the
    generation it claimed under."""

    type: Literal["work_result"]
    """The item's type, `work_result`: its stored name, written into the ledger with it."""
    request_id: Id
    """The id of the work request reported on."""
    generation: Annotated[int, Field(ge=1)]
    """The generation the holder claimed under; an older one is refused `fenced` (claim again first)."""
    status: Literal["completed", "failed"]
    """`completed` or `failed`. Either ends the request; a failed one stays visible and is never shown as a clean
    result."""
    summary: Text
    """What the work found, as a short claim."""
    query: QueryRecord | None = None
    """What the work covered: an empty finding means something only alongside it."""
    observation: ObservationBody | None = None
    """An observation the work produced (the fields of an `observation` item, without `type`), recorded as the
    holder's."""


class WorkReclaim(Frozen):
    """Takes a work request back from its holder: the next claim gets a new generation, and the old holder's renewals
    and results are `fenced`. Submitted by the controller or an operator."""

    type: Literal["work_reclaim"]
    """The item's type, `work_reclaim`: its stored name, written into the ledger with it."""
    request_id: Id
    """The id of the work request taken back."""
    reason: Text
    """Why it is taken back (a lapsed lease, a stuck holder), as a short sentence."""


class Verification(Frozen):
    """Settles a hypothesis on the strength of a completed check. Submitted by a verifier that is not the hypothesis's
    author."""

    type: Literal["verification"]
    """The item's type, `verification`: its stored name, written into the ledger with it."""
    claim: Id
    """The id of the hypothesis verified."""
    check: Id
    """The `request_id` of a completed work request (a check such as a `certificate_check`) whose result is the
    verification's evidence. It must exist and be completed; a check still pending or failed is refused."""
    result: Literal["confirmed", "refuted", "inconclusive"]
    """`confirmed` or `refuted` settles the hypothesis; `inconclusive` leaves its status as it is."""
    based_on_workspace_version: Annotated[int, Field(ge=1)] | None = None
    """The workspace version the verification was decided on (default: the contribution's `expected_version`, else
    the version before it lands). A material change to the hypothesis after it leaves a confirmation
    `confirmed_before_challenge`, needing a new verification (reducer workspace-rules-v4)."""


class Selection(Frozen):
    """Changes what is selected into the bounded workspace view. Submitted by the controller or an operator; it may not
    deselect a contradiction of a selected hypothesis."""

    type: Literal["selection"]
    """The item's type, `selection`: its stored name, written into the ledger with it."""
    select: Ids = ()
    """Ids of observations and hypotheses to select, within `max_selected_items`."""
    deselect: Ids = ()
    """Ids of observations and hypotheses to deselect."""
    reason: Text
    """Why, as a short sentence."""


class Judgment(Frozen):
    """Records one model invocation made for the contribution that carries it: which model saw which version, with
    which prompt, and what it answered. Any role, about its own invocation."""

    type: Literal["judgment"]
    """The item's type, `judgment`: its stored name, written into the ledger with it."""
    invocation_id: Id
    """The invocation's id. Unique in the workspace: observations, hypotheses, questions, proposals, work requests and
    judgment invocations share one namespace (letters, digits and `._:/@-`, at most 128 characters)."""
    component: Name
    """The part of the participant that called the model, e.g. `planner.propose`."""
    model: Name
    """The model's name, as its provider reports it."""
    prompt_sha256: Sha256
    """The SHA-256 (64 lower-case hex digits) of the exact prompt sent."""
    input_workspace_version: Annotated[int, Field(ge=1)]
    """The workspace version the model was shown."""
    evidence_revisions: Annotated[dict[Id, int], Field(max_length=MAX_REFS)] = Field(default_factory=dict)
    """For each evidence id the prompt quoted, the workspace version at which it was read."""
    output: dict[str, Any] = Field(default_factory=dict)
    """The model's parsed output as a JSON object (at most 64 KiB as compact JSON, 32 levels deep)."""

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
    """Starts a round in which the controller schedules participants, charged against `max_investigation_cycles`.
    Submitted by the controller."""

    type: Literal["cycle"]
    """The item's type, `cycle`: its stored name, written into the ledger with it."""
    number: Annotated[int, Field(ge=1)]
    """The cycle's number: 1 for the first, one more than the last; past `max_investigation_cycles` it is refused
    `limit_exceeded`."""
    scheduled: Ids = ()
    """The principals scheduled in this cycle."""


class StatusChange(Frozen):
    """Changes the workspace status. The controller sets `evidence_incomplete`, `budget_exhausted` and
    `human_review_required`; an operator any status, `supported_conclusion` and `closed` included."""

    type: Literal["status"]
    """The item's type, `status`: its stored name, written into the ledger with it."""
    to: Status
    """The new status."""
    reason: Text
    """Why, as a short sentence."""
    handoff: Text | None = None
    """What a person must pick up, e.g. what is unresolved when the budget is exhausted or the workspace escalates."""


class Reopen(Frozen):
    """Reopens a `closed` or `budget_exhausted` workspace with an owner and a new budget; the cycle count starts
    afresh. Submitted by an operator."""

    type: Literal["reopen"]
    """The item's type, `reopen`: its stored name, written into the ledger with it."""
    owner: Id
    """The principal that owns the reopened investigation."""
    runtime_limits: LimitsUpdate
    """The new limits; absent fields keep their value."""


class Constraints(Frozen):
    """Changes the goal, scope or limits of an investigation: a material change for every proposal. Submitted by an
    operator; changes at least one of its fields."""

    type: Literal["constraints"]
    """The item's type, `constraints`: its stored name, written into the ledger with it."""
    goal: Text | None = None
    """The new goal; absent keeps the current one."""
    scope: Scope | None = None
    """The new scope; absent keeps the current one."""
    runtime_limits: LimitsUpdate | None = None
    """The new limits; absent fields keep their value."""

    model_config = ConfigDict(
        json_schema_extra={  # what ``_changes_something`` checks, for a schema's reader (docs/adr/0173)
            "anyOf": [
                {"required": [name], "properties": {name: {"not": {"type": "null"}, "description": f"{name}, given"}}}
                for name in ("goal", "scope", "runtime_limits")
            ]
        }
    )

    @model_validator(mode="after")
    def _changes_something(self) -> Constraints:
        if self.goal is None and self.scope is None and self.runtime_limits is None:
            raise ValueError("a constraints item changes at least one of goal, scope, runtime_limits")
        return self


class KnowledgeScope(Frozen):
    """Where a promoted finding applies in later incidents (docs/knowledge.md)."""

    service: Id
    """The service it applies to, e.g. `payments-api`."""
    environment: Id
    """The environment it applies to, e.g. `production`."""


class Promote(Frozen):
    """Promotes a verified finding of this workspace into the tenant's knowledge store, for later incidents: a
    hypothesis `confirmed` by a verification, or an observation with a verified event time that supports a
    hypothesis a verification confirmed. Anything else is refused. Submitted by an operator; nothing is ever
    promoted without this item (docs/knowledge.md, docs/adr/0120)."""

    type: Literal["promote"]
    """The item's type, `promote`: its stored name, written into the ledger with it."""
    finding: Id
    """The id of the verified hypothesis or observation promoted."""
    statement: Text
    """The finding as it should read in a later incident, as a short claim."""
    scope: KnowledgeScope
    """The service and environment it applies to."""
    owner: Id
    """The principal that answers for the entry."""
    valid_from: AwareDatetime | None = None
    """Since when it held in the world (default: the commit's time)."""
    valid_until: AwareDatetime | None = None
    """Until when it held in the world, if known; absent while it still holds."""

    @model_validator(mode="after")
    def _ordered(self) -> Promote:
        if self.valid_from is not None and self.valid_until is not None and self.valid_until < self.valid_from:
            raise ValueError("valid_until must not be before valid_from")
        return self


class Retire(Frozen):
    """Retires a knowledge entry of the tenant: it stays readable with its history, never deleted, and is no
    longer served as current. Submitted by an operator, in the workspace of the incident that contradicts it."""

    type: Literal["retire"]
    """The item's type, `retire`: its stored name, written into the ledger with it."""
    entry: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}:[0-9]+:[0-9]+$")]
    """The id of the entry retired: `<workspace>:<version>:<item index>` of the promotion that wrote it."""
    reason: Text
    """Why it no longer holds, as a short sentence."""
    contradicted_by: Id
    """The incident (a workspace id, usually this one) whose findings contradict it."""


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
KNOWLEDGE_ITEMS = frozenset({"promote", "retire"})
"""Item types for the knowledge store (docs/adr/0120): recorded in the ledger, parsed and checked like any item,
written to the store from the ledger, and never folded by a reducer (``Reducer`` leaves them out)."""
if not TYPE_CHECKING:  # the released reducers match the union exhaustively and never see these (ADR 0120)
    Item = Annotated[get_args(Item)[0] | Promote | Retire, Field(discriminator="type")]


def _by(field: str) -> Callable[[Any], str]:
    """An item described by its type and one of its ids: ``hypothesis hyp-1``, ``review prop-1``."""
    return lambda item: f"{item.type} {getattr(item, field)}"


def _type_only(item: Any) -> str:
    return str(item.type)


@dataclass(frozen=True)
class ItemType:
    """One item type of the contract, declared once: its model, the roles that may submit it and how a commit's
    summary names it. The coordinator's rule for it is registered under the same name
    (``caseboard/coordinator/item_rules.py``: ``RULES``), and tests/unit/test_item_registry.py holds the
    registry, the ``Item`` union, the rules and schemas/ to one another (docs/architecture.md, "Adding an item
    type")."""

    model: type[Frozen]
    roles: frozenset[Role]
    describe: Callable[[Any], str] = _type_only
    """The item in a commit's summary (``items`` of a version conflict's ``since``, the log): short, no text."""

    @property
    def name(self) -> str:
        """The stored name: the model's ``type`` literal."""
        return str(get_args(self.model.model_fields["type"].annotation)[0])


ANY_ROLE = frozenset(Role)
REGISTRY: tuple[ItemType, ...] = (
    ItemType(Open, frozenset({Role.OPERATOR, Role.INTAKE})),
    ItemType(Observation, frozenset({Role.SPECIALIST, Role.REPORTER, Role.INTAKE}), _by("id")),
    ItemType(Hypothesis, frozenset({Role.PLANNER}), _by("id")),
    ItemType(
        Link,
        frozenset({Role.PLANNER, Role.SPECIALIST}),
        lambda item: f"link {item.observation} {item.relation} {item.hypothesis}",
    ),
    ItemType(Question, frozenset({Role.PLANNER, Role.SPECIALIST, Role.REPORTER}), _by("id")),
    ItemType(Answer, frozenset({Role.PLANNER, Role.SPECIALIST}), _by("question")),
    ItemType(Proposal, frozenset({Role.PLANNER}), _by("id")),
    ItemType(Review, frozenset({Role.PLANNER, Role.OPERATOR}), _by("proposal")),
    ItemType(WorkRequest, frozenset({Role.PLANNER, Role.CONTROLLER}), _by("request_id")),
    ItemType(WorkClaim, frozenset({Role.SPECIALIST, Role.VERIFIER}), _by("request_id")),
    ItemType(WorkRenew, ANY_ROLE, _by("request_id")),  # the holder's, whatever its role
    ItemType(WorkResult, ANY_ROLE, _by("request_id")),
    ItemType(WorkReclaim, frozenset({Role.CONTROLLER, Role.OPERATOR}), _by("request_id")),
    ItemType(Verification, frozenset({Role.VERIFIER}), lambda item: f"verification {item.claim} {item.result}"),
    ItemType(Selection, frozenset({Role.CONTROLLER, Role.OPERATOR})),
    ItemType(Judgment, ANY_ROLE, _by("invocation_id")),  # about the submitter's own invocation
    ItemType(Cycle, frozenset({Role.CONTROLLER}), lambda item: f"cycle {item.number}"),
    ItemType(StatusChange, frozenset({Role.CONTROLLER, Role.OPERATOR}), lambda item: f"status {item.to.value}"),
    ItemType(Reopen, frozenset({Role.OPERATOR})),
    ItemType(Constraints, frozenset({Role.OPERATOR})),
    ItemType(Promote, frozenset({Role.OPERATOR}), _by("finding")),
    ItemType(Retire, frozenset({Role.OPERATOR}), _by("entry")),
)
"""Every item type of contract v1, in the contract's order. The ``Item`` union above lists the same models."""

ITEMS: dict[str, ItemType] = {entry.name: entry for entry in REGISTRY}
"""The registry by stored name."""
ITEM_TYPES: tuple[str, ...] = tuple(ITEMS)
"""The stored names, in the contract's order."""
ROLES: dict[str, frozenset[Role]] = {name: entry.roles for name, entry in ITEMS.items()}
"""Who may submit each item type (the coordinator refuses anyone else ``forbidden``)."""


def describe(item: Item) -> str:
    """The item in a commit's summary, as its type declares."""
    return ITEMS[item.type].describe(item)
