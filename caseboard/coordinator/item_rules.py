"""The rules for each item type: who may submit it, what it may refer to, what it may change.

``check_item`` raises ``Refusal`` or returns the coordinator's decision for the item (selection, a claim's
generation and lease, an escalation), which is recorded in the commit next to the item. Who may submit each
type is the registry's (``caseboard.domain.items.ITEMS``); each type's rule is registered here with
``@rule(Model)`` under the registry's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NoReturn, TypeVar

from caseboard.coordinator.attention import Room
from caseboard.domain import items as it
from caseboard.domain.citations import CITATION_PREFIX, MAX_EXCERPT_BYTES, CitationFacts, cites, parse_citation
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Reason, Refusal
from caseboard.domain.items import Role
from caseboard.domain.principals import same_principal
from caseboard.reducers import ObservationRec, Reducer, WorkRec, WorkspaceState, tenant_of

Decision = dict[str, Any]
Citations = Mapping[str, CitationFacts | None]
"""What the artifact store holds for each cited ``evidence_ref`` (None: no such artifact in the tenant)."""


class Unresolved(Refusal):
    """An item cites an artifact and no facts about it were given: the service resolves the contribution's
    citations through the store and decides again (a coordinator without a store refuses it as it stands)."""


class OverLimit(Refusal):
    """A question, check (``work_request``) or proposal that would cross its runtime limit. Alone in its
    contribution it is refused ``limit_exceeded``; beside items that land it is held for lack of capacity
    (``held``, ADR 0168): ``decide`` catches it."""

    def __init__(self, name: str, limit: int, count: int, path: str) -> None:
        super().__init__(
            Reason.LIMIT_EXCEEDED,
            f"{path}: {name} is {limit} and {count} are open; escalate or close some first",
            field=path,
        )
        self.limit_name = name
        self.limit = limit
        self.count = count


CONTROLLER_STATUSES = frozenset({"evidence_incomplete", "budget_exhausted", "human_review_required"})
ESCALATION = "human_review_required"
DONE = ("completed", "failed", "incomplete")
"""A request with a result: ``incomplete`` is a result whose query did not complete (reducer v3)."""


def refuse(reason: Reason, path: str, message: str, **details: Any) -> NoReturn:
    raise Refusal(reason, f"{path}: {message}", field=path, **details)


@dataclass(frozen=True)
class Context:
    """What an item's rule reads besides the item: the state it is checked on, the contribution carrying it,
    its path (``items[0]``), the commit's time, the reducer that folded the state and the cited excerpts."""

    state: WorkspaceState
    contribution: Contribution
    path: str
    at: datetime
    reducer: Reducer[WorkspaceState]
    citations: Citations | None
    record: bool = False
    """The state is an imported record (docs/adr/0158): a ``reopen`` opens it whatever its status."""

    @property
    def role(self) -> Role:
        return self.contribution.author.role

    @property
    def principal(self) -> str:
        return self.contribution.author.principal


Rule = Callable[[Any, Context], Decision]
RULES: dict[str, Rule] = {}
"""The coordinator's rule for each item type, by the stored name of the registry (``caseboard.domain.items``);
tests/unit/test_item_registry.py holds it to the registry."""
_NAMES = {entry.model: entry.name for entry in it.REGISTRY}

ItemT = TypeVar("ItemT", bound=it.Frozen)


def rule(model: type[ItemT]) -> Callable[[Callable[[ItemT, Context], Decision]], Callable[[ItemT, Context], Decision]]:
    """Register the decorated function as the rule of ``model``'s item type."""

    def register(check: Callable[[ItemT, Context], Decision]) -> Callable[[ItemT, Context], Decision]:
        name = _NAMES[model]
        assert name not in RULES, f"two rules for {name!r}"
        RULES[name] = check
        return check

    return register


def check_item(
    state: WorkspaceState,
    contribution: Contribution,
    item: it.Item,
    path: str,
    at: datetime,
    reducer: Reducer[WorkspaceState],
    citations: Citations | None = None,
    record: bool = False,
) -> Decision:
    role = contribution.author.role
    allowed = it.ROLES[item.type]
    if role not in allowed:
        names = ", ".join(sorted(allowed))
        refuse(Reason.FORBIDDEN, path, f"a {role.value} may not submit a {item.type!r} item (allowed: {names})")
    return RULES[item.type](item, Context(state, contribution, path, at, reducer, citations, record))


@rule(it.Open)
def _open(item: it.Open, c: Context) -> Decision:
    return {}


@rule(it.Observation)
def _observation_item(item: it.Observation, c: Context) -> Decision:
    if c.role is Role.REPORTER and not item.derived_from:
        refuse(
            Reason.FORBIDDEN,
            f"{c.path}.derived_from",
            "a reporter's observation is a summary and must name what it is derived_from",
        )
    if c.role is Role.INTAKE and (item.derived_from or not (item.evidence_ref or "").startswith(CITATION_PREFIX)):
        refuse(
            Reason.FORBIDDEN,
            f"{c.path}.evidence_ref",
            "an intake's observation records an alert: it cites the stored notification and derives from nothing",
        )
    return _observation(c.state, item, c.path, c.reducer, c.citations)


@rule(it.Hypothesis)
def _hypothesis(item: it.Hypothesis, c: Context) -> Decision:
    state, path = c.state, c.path
    _new_id(state, item.id, f"{path}.id")
    _refs(state, item.supporting_evidence, {"observation"}, f"{path}.supporting_evidence")
    _refs(state, item.challenging_evidence, {"observation"}, f"{path}.challenging_evidence")
    room = Room(state, c.reducer, keep=item.challenging_evidence)
    room.admit(item.id, must_stay=True, what="hypothesis", counts=True)
    if room.holds(item.id):
        for obs in item.challenging_evidence:
            _keep_contradiction(room, obs, item.id)
    return room.decision()


@rule(it.Link)
def _link(item: it.Link, c: Context) -> Decision:
    state, path = c.state, c.path
    _refs(state, [item.observation], {"observation"}, f"{path}.observation")
    _refs(state, [item.hypothesis], {"hypothesis"}, f"{path}.hypothesis")
    if item.relation == "challenges":
        room = Room(state, c.reducer, keep=(item.observation,))
        if room.live(item.hypothesis):
            room.admit(item.hypothesis, must_stay=True, what="challenged hypothesis")
            _keep_contradiction(room, item.observation, item.hypothesis)
        return room.decision()
    return {}


@rule(it.Question)
def _question(item: it.Question, c: Context) -> Decision:
    state, path = c.state, c.path
    _new_id(state, item.id, f"{path}.id")
    if item.about is not None:
        _refs(state, [item.about], {"hypothesis", "observation", "proposal"}, f"{path}.about")
    _limit(state.open_questions, state.limits["max_open_questions"], "max_open_questions", path)
    return {}


@rule(it.Answer)
def _answer(item: it.Answer, c: Context) -> Decision:
    state, path = c.state, c.path
    _refs(state, [item.question], {"question"}, f"{path}.question")
    _refs(state, item.evidence, {"observation", "work_request"}, f"{path}.evidence")
    question = state.questions[item.question]
    if question.answered_version is not None:
        refuse(
            Reason.INVALID,
            f"{path}.question",
            f"question {item.question!r} was already answered at version {question.answered_version}",
        )
    return {}


@rule(it.Proposal)
def _proposal(item: it.Proposal, c: Context) -> Decision:
    state, path = c.state, c.path
    _new_id(state, item.id, f"{path}.id")
    _not_ahead(state, item.based_on_workspace_version, f"{path}.based_on_workspace_version", "basis")
    _refs(state, item.depends_on, {"hypothesis", "observation", "proposal"}, f"{path}.depends_on")
    _limit(state.active_proposals, state.limits["max_proposals"], "max_proposals", path)
    return {}


@rule(it.Review)
def _review_item(item: it.Review, c: Context) -> Decision:
    return _review(c.state, c.contribution, item, c.path, c.at, c.reducer)


@rule(it.WorkRequest)
def _work_request(item: it.WorkRequest, c: Context) -> Decision:
    state, path = c.state, c.path
    _new_id(state, item.request_id, f"{path}.request_id")
    _not_stopped(c, "no new work is requested")
    _limit(state.pending_work, state.limits["max_pending_work"], "max_pending_work", path)
    return {}


@rule(it.WorkClaim)
def _work_claim(item: it.WorkClaim, c: Context) -> Decision:
    _not_stopped(c, "no work is claimed")
    return _claim(c.state, c.principal, item, c.path, c.at)


@rule(it.WorkRenew)
def _work_renew(item: it.WorkRenew, c: Context) -> Decision:
    _holder(c.state, c.principal, item.request_id, item.generation, c.path)
    return {"generation": item.generation, "lease_expires_at": lease_expiry(c.at, item.lease_s)}


@rule(it.WorkResult)
def _work_result(item: it.WorkResult, c: Context) -> Decision:
    state, path = c.state, c.path
    _holder(state, c.principal, item.request_id, item.generation, path)
    decision: Decision = {"generation": item.generation}
    if state.status == "closed":
        decision["late_arrival"] = True
    if item.observation is not None:
        observation = _observation(
            state, item.observation, f"{path}.observation", c.reducer, c.citations, item.request_id
        )
        _merge(decision, observation)
    return decision


@rule(it.WorkReclaim)
def _work_reclaim(item: it.WorkReclaim, c: Context) -> Decision:
    request = _request(c.state, item.request_id, f"{c.path}.request_id")
    if request.status == "awaiting_result" and request.holder is None:
        return {"unclaimed": True}  # nobody took it in time: announced again, with its reason (docs/adr/0159)
    if request.status != "claimed":
        refuse(
            Reason.INVALID,
            f"{c.path}.request_id",
            f"request {item.request_id!r} is {request.status}, not claimed: nothing to reclaim",
        )
    return {"fenced_generation": request.generation, "fenced_holder": request.holder}


@rule(it.Verification)
def _verification(item: it.Verification, c: Context) -> Decision:
    state, path = c.state, c.path
    _refs(state, [item.claim], {"hypothesis"}, f"{path}.claim")
    check = _request(state, item.check, f"{path}.check")
    _check_settles(check, item, f"{path}.check")
    if same_principal(state.hypotheses[item.claim].author, c.principal):
        refuse(Reason.FORBIDDEN, f"{path}.claim", f"{c.principal!r} authored {item.claim!r} and may not verify it")
    if item.based_on_workspace_version is not None:
        _not_ahead(state, item.based_on_workspace_version, f"{path}.based_on_workspace_version")
    _independent(c, item, f"{path}.check")
    return {}


def _independent(c: Context, item: it.Verification, path: str) -> None:
    """A verification rests on a check independent of the claim (issue 33, rule 3): not run by the claim's
    author nor by an author of its supporting evidence (or of what that evidence summarizes), and not the
    check that produced that evidence. Who ran a check is its result's author (``Reducer.check_runner``)."""
    state = c.state
    hyp = state.hypotheses[item.claim]
    runner = c.reducer.check_runner(state, item.check)
    if same_principal(runner, hyp.author):
        refuse(
            Reason.FORBIDDEN,
            path,
            f"check {item.check!r} was run by {runner!r}, who authored {item.claim!r}: a verification rests on a "
            "check the claim's author did not run",
        )
    for obs in _evidence_under(state, hyp.supporting):
        if obs.via_request == item.check:
            refuse(
                Reason.FORBIDDEN,
                path,
                f"check {item.check!r} produced {obs.id!r}, which supports {item.claim!r}: the check a claim rests "
                "on cannot also verify it; cite an independent check",
            )
        if same_principal(runner, obs.author):
            refuse(
                Reason.FORBIDDEN,
                path,
                f"check {item.check!r} was run by {runner!r}, who recorded {obs.id!r} supporting {item.claim!r}: "
                "a verification rests on a check the claim's own sources did not run",
            )


def _evidence_under(state: WorkspaceState, refs: Iterable[str]) -> list[ObservationRec]:
    """The observations ``refs`` name, and those they are derived from, each once."""
    found: dict[str, ObservationRec] = {}
    pending = list(refs)
    while pending:
        obs = state.observations.get(pending.pop())
        if obs is not None and obs.id not in found:
            found[obs.id] = obs
            pending.extend(obs.derived_from)
    return list(found.values())


@rule(it.Selection)
def _selection_item(item: it.Selection, c: Context) -> Decision:
    return _selection(c.state, item, c.path, c.reducer)


@rule(it.Judgment)
def _judgment(item: it.Judgment, c: Context) -> Decision:
    state, path = c.state, c.path
    _new_id(state, item.invocation_id, f"{path}.invocation_id")
    _not_ahead(state, item.input_workspace_version, f"{path}.input_workspace_version")
    _refs(state, item.evidence_revisions, None, f"{path}.evidence_revisions")
    shown = item.input_workspace_version
    for ref, revision in item.evidence_revisions.items():
        recorded = _recorded_at(state, ref)
        if not recorded <= revision <= shown:
            refuse(
                Reason.INVALID,
                f"{path}.evidence_revisions.{ref}",
                f"{ref!r} was recorded at version {recorded}: the model was shown version {shown}, so it read "
                f"{ref!r} at a version from {recorded} to {shown}, not at {revision}"
                if recorded <= shown
                else f"{ref!r} was recorded at version {recorded}, after version {shown} the model was shown",
            )
    return {}


def _recorded_at(state: WorkspaceState, ref: str) -> int:
    """The version that recorded item ``ref`` (an id of ``state.ids``), from the records every reducer's
    state keeps: no history is read."""
    records: dict[str, Mapping[str, Any]] = {
        "observation": state.observations,
        "hypothesis": state.hypotheses,
        "question": state.questions,
        "proposal": state.proposals,
        "work_request": state.work,
        "judgment": state.judgments,
    }
    return int(records[state.ids[ref]][ref].version)


@rule(it.Cycle)
def _cycle(item: it.Cycle, c: Context) -> Decision:
    state, path = c.state, c.path
    if c.reducer.stopped(state) or state.cycles_used >= state.limits["max_investigation_cycles"]:
        refuse(
            Reason.LIMIT_EXCEEDED,
            path,
            f"all {state.limits['max_investigation_cycles']} investigation cycles are used",
        )
    if item.number != state.cycles_used + 1:
        refuse(Reason.INVALID, f"{path}.number", f"the next cycle is {state.cycles_used + 1}, not {item.number}")
    return {"cycles_used": item.number, "cycles_left": state.limits["max_investigation_cycles"] - item.number}


@rule(it.StatusChange)
def _status(item: it.StatusChange, c: Context) -> Decision:
    if c.role is Role.CONTROLLER and item.to.value not in CONTROLLER_STATUSES:
        refuse(
            Reason.FORBIDDEN,
            f"{c.path}.to",
            f"a controller may set {', '.join(sorted(CONTROLLER_STATUSES))}; {item.to.value!r} is an operator's",
        )
    if item.to.value == "investigating" and c.reducer.stopped(c.state):
        refuse(
            Reason.INVALID,
            f"{c.path}.to",
            "the investigation budget was exhausted: work resumes only by a reopen (an operator's 'reopen' item "
            "with an owner and a budget of at least one cycle), not by a status change",
        )
    return {"from": c.state.status}


@rule(it.Reopen)
def _reopen(item: it.Reopen, c: Context) -> Decision:
    state = c.state
    cycles = item.runtime_limits.max_investigation_cycles
    if (state.limits["max_investigation_cycles"] if cycles is None else cycles) < 1:
        refuse(
            Reason.INVALID,
            f"{c.path}.runtime_limits.max_investigation_cycles",
            "a reopen renews the budget: max_investigation_cycles must be at least 1",
        )
    if c.record:  # an imported record goes live again only this way, whatever its status (docs/adr/0158)
        return {"from": state.status, "record": True}
    if state.status not in ("closed", "budget_exhausted") and not c.reducer.stopped(state):
        refuse(Reason.INVALID, c.path, f"only a closed or budget_exhausted workspace reopens; it is {state.status}")
    return {"from": state.status}


def _not_stopped(c: Context, what: str) -> None:
    """Exhausted means stopped (issue 33, rule 10): after ``budget_exhausted`` nothing new is requested or
    claimed until an explicit reopen, whatever status was set since."""
    if c.reducer.stopped(c.state):
        refuse(
            Reason.LIMIT_EXCEEDED,
            c.path,
            f"the investigation budget is exhausted: {what} until an operator reopens the workspace "
            "(a 'reopen' item with an owner and a budget of at least one cycle)",
        )


@rule(it.Constraints)
def _constraints(item: it.Constraints, c: Context) -> Decision:
    tenant = c.state.scope.get("tenant_id")
    if item.scope is not None and item.scope.tenant_id != tenant:
        refuse(
            Reason.INVALID,
            f"{c.path}.scope.tenant_id",
            f"a workspace stays in the tenant it was opened in ({tenant!r}); "
            "open a new workspace in the other tenant instead",
        )
    return {}


def _not_ahead(state: WorkspaceState, version: int, path: str, what: str = "version") -> None:
    """A version an item names (a basis, the version a model was shown, the version reviewed) has been reached."""
    if version > state.version:
        refuse(Reason.INVALID, path, f"{what} {version} is beyond the current version {state.version}")


def _new_id(state: WorkspaceState, item_id: str, path: str) -> None:
    kind = state.ids.get(item_id)
    if kind is not None:
        refuse(Reason.DUPLICATE_ID, path, f"id {item_id!r} is already used in this workspace (a {kind})")


def _refs(state: WorkspaceState, refs: Iterable[str], kinds: set[str] | None, path: str) -> None:
    for index, ref in enumerate(refs):
        kind = state.ids.get(ref)
        if kind is None:
            refuse(Reason.UNKNOWN_REFERENCE, f"{path}[{index}]", f"{ref!r} does not exist in this workspace")
        if kinds is not None and kind not in kinds:
            wanted = " or ".join(sorted(kinds))
            refuse(Reason.INVALID, f"{path}[{index}]", f"{ref!r} is a {kind}, expected a {wanted}")


def _limit(count: int, limit: int, name: str, path: str) -> None:
    if count >= limit:
        raise OverLimit(name, limit, count, path)


HOLDS_ESCALATE = frozenset({"investigating", "evidence_incomplete"})
"""The statuses a hold moves to ``human_review_required``: a workspace already handed to a person (or stopped,
or closed) keeps its status, and the held item is listed in it all the same."""


def held(state: WorkspaceState, item: it.Item, over: OverLimit) -> Decision:
    """The decision for an item held for lack of capacity (issue 33, rule 9, ADR 0168): it is recorded in the
    commit as submitted, with this decision, and folded as nothing but it; the workspace escalates to
    ``human_review_required`` so that a person decides what to close to make room."""
    what = it.describe(item)
    decision: Decision = {
        "held": {
            "limit": over.limit_name,
            "limit_value": over.limit,
            "open": over.count,
            "reason": f"held for lack of capacity: {over.limit_name} is {over.limit} and {over.count} are open",
        }
    }
    if state.status in HOLDS_ESCALATE:
        decision["escalated"] = {
            "to": ESCALATION,
            "reason": f"{what} held for lack of capacity ({over.limit_name} is {over.limit}): "
            "a person decides what to close to make room for it",
        }
    return decision


def _request(state: WorkspaceState, request_id: str, path: str) -> WorkRec:
    _refs(state, [request_id], {"work_request"}, path)
    return state.work[request_id]


def _observation(
    state: WorkspaceState,
    body: it.ObservationBody,
    path: str,
    reducer: Reducer[WorkspaceState],
    citations: Citations | None = None,
    request_id: str | None = None,
) -> Decision:
    _new_id(state, body.id, f"{path}.id")
    _refs(state, body.derived_from, {"observation"}, f"{path}.derived_from")
    excerpt = None
    if body.evidence_ref is not None and body.evidence_ref.startswith(CITATION_PREFIX):
        excerpt = _excerpt(body.evidence_ref, citations, f"{path}.evidence_ref")
    if state.status == "closed":
        decision: Decision = {
            "id": body.id,
            "late_arrival": True,
            "selected": [],
            "not_selected": [{"id": body.id, "reason": "late arrival: the workspace is closed"}],
        }
        bears_on = reducer.bears_on(state, body, request_id)  # late counterevidence: announced, and handed to a person
        if bears_on:
            decision["bears_on"] = [{"ref": ref, "kind": kind, "why": why} for ref, kind, why in bears_on]
    else:
        room = Room(state, reducer)
        source = reducer.copied_from(state, excerpt) if excerpt is not None and not body.derived_from else None
        copies = reducer.copy_group(state, source) if source is not None else ()  # one source: counted once
        room.admit(
            body.id,
            must_stay=False,
            what="observation",
            counts=not body.derived_from and not room.shares(copies, body.id),
        )
        decision = {"id": body.id, **room.decision()}
    if excerpt is not None:
        decision["excerpt"] = excerpt
    return decision


def _excerpt(ref: str, citations: Citations | None, path: str) -> Decision | None:
    """The record of a cited excerpt (artifact, range, its SHA-256 and length), checked against the store's
    facts; None for a reference that is not a citation (docs/adr/0081)."""
    cited = parse_citation(ref)
    if cited is None:
        if cites(ref):
            refuse(
                Reason.INVALID,
                path,
                "not a citation: expected sha256:<hex>#lines=A-B (from 1) or #bytes=A-B (from 0), with A <= B",
            )
        return None
    if citations is None or ref not in citations:
        raise Unresolved(
            Reason.UNKNOWN_REFERENCE,
            f"{path}: cites artifact {cited.artifact}, and no artifact store was consulted",
            field=path,
        )
    found = citations[ref]
    if found is None:
        refuse(
            Reason.UNKNOWN_REFERENCE,
            path,
            f"artifact {cited.artifact} is not in this workspace's tenant: store it first (caseboard artifacts put)",
        )
    span = cited.span
    if not span.inside(found.size, found.lines):
        refuse(
            Reason.INVALID,
            path,
            f"{span.unit} {span.text()} is outside artifact {cited.artifact}: {span.extent(found.size, found.lines)}",
        )
    if found.excerpt_sha256 is None:
        refuse(Reason.INVALID, path, f"the excerpt is over {MAX_EXCERPT_BYTES} bytes: cite a narrower range")
    return {**cited.record(), "sha256": found.excerpt_sha256, "length": found.excerpt_length}


def _keep_contradiction(room: Room, obs: str, hypothesis: str) -> None:
    """A contradiction is never dropped to make room: select it, or escalate when it cannot fit."""
    reason = f"contradicting evidence {obs!r} does not fit within max_selected_items"
    room.admit(obs, must_stay=True, what=f"evidence challenging {hypothesis!r}", reason=reason)


def lease_expiry(at: datetime, lease_s: int) -> str:
    return (at + timedelta(seconds=lease_s)).isoformat().replace("+00:00", "Z")


def _check_settles(check: WorkRec, item: it.Verification, path: str) -> None:
    """A verification may settle a claim only on a check that completed; ``inconclusive`` may cite any result."""
    if check.status not in DONE:
        refuse(Reason.INVALID, path, f"check {item.check!r} is {check.status}: a verification cites a check's result")
    complete = check.status == "completed" and check.query_completed is not False
    if item.result != "inconclusive" and not complete:
        state = "incomplete (its query did not complete)" if check.status != "failed" else "failed"
        refuse(
            Reason.INVALID,
            path,
            f"check {item.check!r} is {state}: only a completed check can {item.result.removesuffix('ed')} "
            "a claim; record the verification as 'inconclusive', or request the rest of the check",
        )


def _merge(into: Decision, extra: Decision) -> None:
    for key, value in extra.items():
        if isinstance(value, list):
            into[key] = [*into.get(key, []), *value]
        else:
            into[key] = value


def _review(
    state: WorkspaceState,
    contribution: Contribution,
    item: it.Review,
    path: str,
    at: datetime,
    reducer: Reducer[WorkspaceState],
) -> Decision:
    """A review is a decision on a version: the one it states (or the contribution's expected version). A review
    that did not see a later material change is recorded, and the proposal stays ``requires_revalidation``."""
    _refs(state, [item.proposal], {"proposal"}, f"{path}.proposal")
    proposal = state.proposals[item.proposal]
    role = contribution.author.role
    status = reducer.proposal_status(state, proposal, at)
    if item.decision == "accepted":
        if role is not Role.OPERATOR:
            refuse(Reason.FORBIDDEN, f"{path}.decision", "only an operator accepts a proposal")
        if contribution.expected_version is None:
            refuse(
                Reason.INVALID,
                "expected_version",
                "accepting a proposal requires expected_version: acceptance is decided on a known version",
            )
        if status != "current":
            refuse(
                Reason.INVALID,
                f"{path}.proposal",
                f"proposal {item.proposal!r} is {status}; it can be accepted only while current",
            )
    elif role is not Role.PLANNER:
        refuse(Reason.FORBIDDEN, f"{path}.decision", f"a {role.value} may not record a {item.decision!r} review")
    if item.decision == "retained" and status == "accepted":
        refuse(
            Reason.INVALID,
            f"{path}.decision",
            f"proposal {item.proposal!r} is accepted and needs no revalidation; retaining it would revoke "
            "the operator's acceptance (revise or withdraw it instead)",
        )
    if status in ("revised", "withdrawn"):
        refuse(Reason.INVALID, f"{path}.proposal", f"proposal {item.proposal!r} is already {status}")
    against = item.based_on_workspace_version or contribution.expected_version
    if item.decision in ("retained", "accepted") and against is None:
        refuse(
            Reason.INVALID,
            f"{path}.based_on_workspace_version",
            f"a {item.decision!r} review states the version it was made against (based_on_workspace_version, or "
            "the contribution's expected_version): a review that names no version could clear changes nobody saw",
        )
    if against is not None:
        _not_ahead(state, against, f"{path}.based_on_workspace_version")
    decision: Decision = {"previous_status": status}
    if against is not None:
        decision["reviewed_version"] = against
        unseen = reducer.review_gaps(state, proposal, max(against, proposal.checked_at))
        if unseen:
            decision["unseen_changes"] = unseen
            decision["note"] = (
                f"made against version {against}; material changes at version(s) "
                f"{', '.join(map(str, unseen))} were not covered"
                + (", so the proposal stays requires_revalidation" if item.decision == "retained" else "")
                + f": read the changes since version {against} and review again"
            )
    return decision


def _claim(state: WorkspaceState, principal: str, item: it.WorkClaim, path: str, at: datetime) -> Decision:
    request = _request(state, item.request_id, f"{path}.request_id")
    if request.status in DONE:
        refuse(Reason.INVALID, f"{path}.request_id", f"request {item.request_id!r} is already {request.status}")
    live = request.holder is not None and request.lease_expires_at is not None and request.lease_expires_at > at
    if live and not same_principal(request.holder, principal):
        refuse(
            Reason.LEASE_HELD,
            f"{path}.request_id",
            f"request {item.request_id!r} is claimed under a lease until "
            f"{request.lease_expires_at.isoformat() if request.lease_expires_at else '?'}; wait or ask a controller",
            lease_expires_at=request.lease_expires_at.isoformat() if request.lease_expires_at else None,
        )
    if live:
        refuse(
            Reason.INVALID,
            f"{path}.request_id",
            f"{principal!r} already holds {item.request_id!r} (generation {request.generation}); renew it instead",
        )
    decision: Decision = {"generation": request.generation + 1, "lease_expires_at": lease_expiry(at, item.lease_s)}
    if request.holder is not None:
        decision["fenced_generation"] = request.generation
        decision["fenced_holder"] = request.holder
    return decision


def _holder(state: WorkspaceState, principal: str, request_id: str, generation: int, path: str) -> None:
    request = _request(state, request_id, f"{path}.request_id")
    if request.holder is None or generation != request.generation:
        refuse(
            Reason.FENCED,
            f"{path}.generation",
            f"generation {generation} of {request_id!r} is no longer live (the request is {request.status}, "
            f"generation {request.generation}); claim it again before writing",
            current_generation=request.generation,
        )
    if not same_principal(request.holder, principal):
        refuse(Reason.FORBIDDEN, path, f"{principal!r} does not hold {request_id!r}; its holder does")


def _selection(state: WorkspaceState, item: it.Selection, path: str, reducer: Reducer[WorkspaceState]) -> Decision:
    _refs(state, item.select, {"observation", "hypothesis"}, f"{path}.select")
    _refs(state, item.deselect, {"observation", "hypothesis"}, f"{path}.deselect")
    kept = [
        hyp
        for hyp in state.hypotheses.values()
        if (state.is_selected(hyp.id) or hyp.id in item.select) and hyp.id not in item.deselect
    ]
    contradictions = {obs for hyp in kept for obs in hyp.challenging}
    for index, ref in enumerate(item.deselect):
        if ref in contradictions:
            refuse(
                Reason.INVALID,
                f"{path}.deselect[{index}]",
                f"{ref!r} challenges a selected hypothesis: contradictions are never dropped to make room",
            )
    deselected = [ref for ref in dict.fromkeys(item.deselect) if state.is_selected(ref)]
    selected = [ref for ref in dict.fromkeys(item.select) if not state.is_selected(ref)]

    def group(ref: str) -> tuple[str, ...]:
        """What ``ref`` takes room with: itself, or its source and the copies of it (counted once, ADR 0166)."""
        obs = state.observations.get(ref)
        return reducer.copy_group(state, ref) if obs is not None else (ref,)

    def held(refs: tuple[str, ...]) -> bool:
        return any((state.is_selected(ref) or ref in selected) and ref not in deselected for ref in refs)

    def counts(ref: str) -> int:
        obs = state.observations.get(ref)
        return 0 if obs is not None and (obs.derived_from or held(group(ref))) else 1

    def derived(ref: str) -> bool:
        obs = state.observations.get(ref)
        return obs is not None and bool(obs.derived_from)

    changed = {group(ref) for ref in (*selected, *deselected) if not derived(ref)}
    after = state.selected_count + sum(held(refs) - any(map(state.is_selected, refs)) for refs in changed)
    limit = state.limits["max_selected_items"]
    if after > limit and after > state.selected_count:  # shrinking an over-full selection is always allowed
        refuse(
            Reason.LIMIT_EXCEEDED,
            f"{path}.select",
            f"the selection would hold {after} items; max_selected_items is {limit}",
        )
    decision: Decision = {"selected": selected, "deselected": deselected}
    for hyp in [state.hypotheses[ref] for ref in selected if ref in state.hypotheses]:
        for obs in hyp.challenging:  # a newly selected hypothesis brings its contradictions, or escalates
            if state.is_selected(obs) or obs in selected:
                continue
            takes = counts(obs)
            if takes == 0 or after < limit:
                selected.append(obs)
                after += takes
            else:
                reason = f"contradicting evidence {obs!r} does not fit within max_selected_items"
                decision["escalated"] = {"to": ESCALATION, "reason": reason}
    return decision


@rule(it.Promote)
def _promote(item: it.Promote, c: Context) -> Decision:
    """A finding is promoted only when a verification stands behind it (docs/adr/0120); the decision records
    its provenance, which the knowledge store's entry carries and ``caseboard knowledge audit`` checks."""
    path = f"{c.path}.finding"
    found = c.reducer.verified_finding(c.state, item.finding)
    if found.kind == "unknown":
        refuse(Reason.UNKNOWN_REFERENCE, path, f"{item.finding!r} is not a hypothesis or observation of this workspace")
    if not found.promotable:
        why = {
            "unverified_event_time": "its event time is unverified",
            "not_cited_by_a_verification": "no verification confirmed a hypothesis it supports",
        }.get(found.status, "only a hypothesis confirmed by a verification is promoted")
        refuse(
            Reason.INVALID,
            path,
            f"{found.kind} {item.finding!r} is {found.status}, not verified: {why}",
            status=found.status,
        )
    return {
        "tenant_id": tenant_of(c.state),
        "finding_kind": found.kind,
        "verification_version": found.verified_version,
        "verified_by": found.verified_by,
        "verified_hypothesis": found.via_hypothesis or item.finding,
        "evidence": list(found.evidence),
        "evidence_versions": {
            ref: c.state.observations[ref].version for ref in found.evidence if ref in c.state.observations
        },
    }


@rule(it.Retire)
def _retire(item: it.Retire, c: Context) -> Decision:
    """Retiring is recorded in the workspace of the contradicting incident; the knowledge store applies it to
    the tenant's entry, if there is one (a workspace's rules never read the store)."""
    return {"tenant_id": tenant_of(c.state)}
