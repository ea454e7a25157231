"""Folding one commit (reducer workspace-rules-v4): v3's item rules, with v4's rules of evidence.

Each item is applied by v3's ``apply_item`` except where v4 differs (docs/rules-of-evidence.md):

- rule 1, an empty result proves nothing without its coverage: a ``confirmed`` or ``refuted`` verification
  settles its hypothesis only when the check it cites completed with a query that states a time range covering
  the period the hypothesis is about, at least one target, its filters and ``completed: true`` (ADR 0132); an
  answer citing checks settles its question only on such a check (or on an observation). Anything less is
  recorded under ``unsettled`` with what the coverage is missing, and the claim stays as it was;
- rule 4, a verification is a decision on a version: a verification that settles its hypothesis records the
  version it was decided on (its ``based_on_workspace_version``, else the contribution's ``expected_version``,
  else the version before it lands) under ``decided_on``; ``render.hypothesis_status`` reads it;
- rule 11, restating the scope is not a change: a ``constraints`` item whose goal, scope and limits are the
  ones the workspace already has changes nothing and is not material (it flags no proposal);
- rule 8, a clock that cannot be right is not verified: an observation whose event time is later than its
  commit's time by more than ``CLOCK_SKEW`` is recorded ``unverified`` and listed under ``future_clock``
  (ADR 0133); a challenge resting only on such observations is not a material change, and
  ``render.hypothesis_status`` does not count it;
- rule 6, copies of one excerpt are one source: an observation whose excerpt (recorded in its decision) has
  the SHA-256 of an earlier one, or overlaps an earlier one's range of the same artifact in the same unit, is
  a copy of that source (``WorkspaceStateV4.cite``, ADR 0166); a group of copies counts once in
  ``selected_count`` (so once toward ``max_selected_items``), and once among a hypothesis's sources;
- rule 2, late counterevidence reaches someone: an observation recorded as a late arrival (the workspace was
  closed) that bears on a closed conclusion (a confirmed hypothesis, an accepted plan: it or its request names
  it or what it rests on, a later link relates it, or it shares its source and time window; ``late.bearings``, ADR
  0165) is kept under ``late_counter``, one record per conclusion, with why; a ``reopen`` whose limits change
  a value is a change of constraints (material: it flags every proposal, as a ``constraints`` item does);
- each observation's event time widens the workspace's incident window (``first_event_at``,
  ``last_event_at``);
- rule 5, a fenced writer cannot launder its result: an observation whose author's claim on a request was fenced
  (a reclaim, or another's claim after its lease lapsed), and who does not hold it now, is listed under
  ``fenced_writes`` when it is about that request's target (its source or instances are named in the target,
  ADR 0167); ``render`` does not count it as support until the live holder's result corroborates it or a
  verification settles the hypothesis;
- rule 9, nothing submitted in good faith is lost at a limit: an item the coordinator held for lack of capacity
  (its decision has ``held``, ADR 0168) is listed under ``held`` as submitted and folded as nothing else; its
  escalation, when one was decided, is applied.

Pure: nothing but the state and the commit. Each rule reads what the item touches (the check, the claim and
the evidence under it), never the history.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import datetime, timedelta
from itertools import chain
from typing import TypeVar

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.domain.principals import principal_key, same_principal
from caseboard.reducers.workspace_rules_v1.evolve import fold_commit
from caseboard.reducers.workspace_rules_v3.evolve import apply_item as apply_item_v3
from caseboard.reducers.workspace_rules_v4.late import Bearing, bearings, linked
from caseboard.reducers.workspace_rules_v4.state import (
    FencedClaimsRec,
    FencedWriteRec,
    HeldRec,
    LateCounterRec,
    UnsettledRec,
    WorkspaceStateV4,
    slot,
)

NAME = "workspace-rules-v4"
CLOCK_SKEW = timedelta(seconds=5)
"""How far an event time may run ahead of its commit's time and still be believed (ADR 0133)."""
Window = tuple[datetime, datetime] | None


def initial(workspace_id: str) -> WorkspaceStateV4:
    return WorkspaceStateV4(workspace_id=workspace_id)


def evolve(state: WorkspaceStateV4, commit: Commit) -> WorkspaceStateV4:
    fold_commit(state, commit, apply_item)  # type: ignore[arg-type]
    key = commit.idempotency_key
    if key is not None and commit.digest is not None:  # fold_commit has just put it under the bare key
        state.idempotency[slot(commit.author.principal, key)] = state.idempotency.pop(key)
    return state


def workspace_window(state: WorkspaceStateV4) -> Window:
    """The event times of every observation so far (kept as they arrive), None before the first."""
    if state.first_event_at is None or state.last_event_at is None:
        return None
    return state.first_event_at, state.last_event_at


def window_of(state: WorkspaceStateV4, claim: str | None) -> Window:
    """The period a claim is about (ADR 0132): the event times of the evidence a hypothesis rests on (its
    supporting and challenging observations), or an observation's own event time; else the workspace's."""
    hyp = state.hypotheses.get(claim) if claim is not None else None
    if hyp is not None:
        times = [state.observations[ref].event_time for ref in (*hyp.supporting, *hyp.challenging)]
        if times:
            return min(times), max(times)
    obs = state.observations.get(claim) if claim is not None else None
    if obs is not None:
        return obs.event_time, obs.event_time
    return workspace_window(state)


def shortfall(state: WorkspaceStateV4, check: str, window: Window) -> tuple[str, ...]:
    """What the coverage of ``check`` is missing to settle a claim about ``window``, as ``check:part``; empty
    when it covers it: a completed check whose query states a time range covering the window, at least one
    target, its filters and ``completed: true``."""
    work = state.work.get(check)
    rec = state.coverage.get(check)
    if work is None or rec is None:
        return (f"{check}:query",)
    missing = []
    if window is not None and (rec.time_range_start > window[0] or rec.time_range_end < window[1]):
        missing.append("time_range")
    if not rec.targets:
        missing.append("targets")
    if not rec.filters:
        missing.append("filters")
    if not rec.completed or work.status != "completed":
        missing.append("completed")
    return tuple(f"{check}:{part}" for part in missing)


def decided_version(item: it.Verification, commit: Commit) -> int:
    """The version a verification was decided on: its own field, else the contribution's expected version, else
    the version it follows (what the verifier could have read)."""
    return item.based_on_workspace_version or commit.expected_version or commit.version - 1


def restates(state: WorkspaceStateV4, item: it.Constraints) -> bool:
    """Whether a ``constraints`` item states only the goal, scope and limits the workspace already has."""
    if item.goal is not None and item.goal != state.goal:
        return False
    if item.scope is not None and item.scope.model_dump() != state.scope:
        return False
    limits = item.runtime_limits.model_dump(exclude_none=True) if item.runtime_limits is not None else {}
    return all(state.limits.get(name) == value for name, value in limits.items())


def _changes_limits(state: WorkspaceStateV4, limits: it.LimitsUpdate) -> bool:
    return any(state.limits.get(name) != value for name, value in limits.model_dump(exclude_none=True).items())


def apply_item(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    if "held" in decision:  # rule 9: recorded as held, nothing of the item folded
        _hold(state, commit, item, decision)
        return
    body = item if isinstance(item, it.Observation) else getattr(item, "observation", None)
    excerpt = decision.get("excerpt")
    if excerpt and isinstance(body, it.ObservationBody) and not body.derived_from:
        state.cite(body.id, excerpt)
    groups = _groups(state, decision)
    before = {group: _held(state, group) for group in groups}
    late = _bears_on(state, item, decision)
    _apply(state, commit, item, decision)
    for ref, kind, why in late[1]:
        key = f"{late[0]}>{ref}"
        if key not in state.late_counter:
            state.late_counter[key] = LateCounterRec(
                key, late[0], ref, kind, why, commit.author.principal, commit.version
            )
    for group, held in before.items():  # v1 counted each member; a group of copies is one source
        after = _held(state, group)
        state.selected_count += (after > 0) - (held > 0) - (after - held)
    _fenced_facts(state, commit, item, decision)


def _bears_on(state: WorkspaceStateV4, item: it.Item, decision: Decision) -> tuple[str, list[Bearing]]:
    """The late observation ``item`` records or links, and the closed conclusions it bears on (rule 2), judged
    on the state it lands on."""
    if isinstance(item, it.Observation):
        return item.id, bearings(state, item) if decision.get("late_arrival") else []
    if isinstance(item, it.WorkResult) and item.observation is not None:
        body = item.observation
        return body.id, bearings(state, body, item.request_id) if decision.get("late_arrival") else []
    if isinstance(item, it.Link):
        obs = state.observations.get(item.observation)
        if obs is not None and obs.late:
            return obs.id, linked(state, obs.id, item.hypothesis)
    return "", []


def _groups(state: WorkspaceStateV4, decision: Decision) -> set[tuple[str, ...]]:
    """The groups of copies whose selection ``decision`` changes (only those with more than one member)."""
    if not state.copy_of:
        return set()
    refs = chain(decision.get("selected", ()), decision.get("deselected", ()))
    return {group for group in map(state.copy_group, refs) if len(group) > 1}


def _held(state: WorkspaceStateV4, group: tuple[str, ...]) -> int:
    return sum(map(state.is_selected, group))


def _apply(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    match item:
        case it.Verification() if item.result != "inconclusive":
            window = window_of(state, item.claim)
            missing = shortfall(state, item.check, window)
            if missing:
                _unsettled(state, commit, "verification", item.claim, (item.check,), item.result, missing, window)
                item = item.model_copy(update={"result": "inconclusive"})  # recorded, settles nothing
            else:
                state.decided_on[item.claim] = decided_version(item, commit)
            apply_item_v3(state, commit, item, decision)
        case it.Answer() if item.evidence and not any(ref in state.observations for ref in item.evidence):
            question = state.questions[item.question]
            window = window_of(state, question.about)
            checks = tuple(ref for ref in item.evidence if ref in state.work)
            gaps = [shortfall(state, ref, window) for ref in checks]
            if all(gaps):
                missing = tuple(chain.from_iterable(gaps))
                _unsettled(state, commit, "answer", item.question, checks, item.text, missing, window)
                apply_item_v3(state, commit, item.model_copy(update={"evidence": ()}), decision)  # kept, open
                ref = f"{item.question}@{commit.version}"
                state.unsupported_answers[ref] = replace(state.unsupported_answers[ref], evidence=item.evidence)
            else:
                apply_item_v3(state, commit, item, decision)
        case it.Constraints() if restates(state, item):
            before = state.constraints_version
            apply_item_v3(state, commit, item, decision)  # the same goal, scope and limits: nothing moves
            state.constraints_version = before
        case it.Reopen() if _changes_limits(state, item.runtime_limits):
            apply_item_v3(state, commit, item, decision)
            state.constraints_version = commit.version  # new limits: a change of constraints (rule 2)
        case it.Observation():
            apply_item_v3(state, commit, _believable(state, commit, item), decision)
            _widen(state, item.event_time)
        case it.WorkResult() if item.observation is not None:
            observation = _believable(state, commit, item.observation)
            apply_item_v3(state, commit, item.model_copy(update={"observation": observation}), decision)
            _widen(state, item.observation.event_time)
        case it.Link() if item.relation == "challenges" and item.observation in state.future_clock:
            marked = state.material.get(item.hypothesis)
            apply_item_v3(state, commit, item, decision)  # recorded and shown; no order it claims is known
            _restore(state, item.hypothesis, marked)
        case it.Hypothesis() if item.challenging_evidence and all(
            ref in state.future_clock for ref in item.challenging_evidence
        ):
            apply_item_v3(state, commit, item, decision)
            _restore(state, item.id, None)
        case _:
            apply_item_v3(state, commit, item, decision)
    _coordinator_facts(state, commit, item)


def _coordinator_facts(state: WorkspaceStateV4, commit: Commit, item: it.Item) -> None:
    """What the coordinator reads of a v4 state (ADR 0135): who ran each check, and the stop of an exhausted
    budget until a reopen."""
    match item:
        case it.WorkResult():
            state.check_runners[item.request_id] = commit.author.principal
        case it.StatusChange() if item.to.value == "budget_exhausted" and state.exhausted_at is None:
            state.exhausted_at = commit.version
        case it.Reopen():
            state.exhausted_at = None


Body = TypeVar("Body", bound=it.ObservationBody)


def _believable(state: WorkspaceStateV4, commit: Commit, body: Body) -> Body:
    """``body`` as v4 records it: ``unverified`` when its event time is later than the commit's time by more
    than the skew (the commit's own item is never changed: the ledger keeps what was submitted)."""
    if body.event_time - commit.at <= CLOCK_SKEW:
        return body
    state.future_clock[body.id] = commit.version
    return body.model_copy(update={"event_time_quality": "unverified"})


def _restore(state: WorkspaceStateV4, ref: str, before: int | None) -> None:
    """Put back the material mark of ``ref`` as it was before an item that changed no order the clocks know."""
    if before is None and type(state.material) is dict:
        state.material.pop(ref, None)
    else:  # a fork (a ChainMap) cannot delete what its parent holds: 0 marks nothing
        state.material[ref] = before or 0


def _widen(state: WorkspaceStateV4, moment: datetime) -> None:
    if state.first_event_at is None or moment < state.first_event_at:
        state.first_event_at = moment
    if state.last_event_at is None or moment > state.last_event_at:
        state.last_event_at = moment


def _unsettled(
    state: WorkspaceStateV4,
    commit: Commit,
    kind: str,
    claim: str,
    checks: tuple[str, ...],
    result: str,
    missing: tuple[str, ...],
    window: Window,
) -> None:
    ref = f"{claim}@{commit.version}"
    start, end = window if window is not None else (None, None)
    state.unsettled[ref] = UnsettledRec(
        ref, kind, claim, checks, result, commit.author.principal, commit.version, missing, start, end
    )


def _hold(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    """Rule 9 (ADR 0168): an item held for lack of capacity is listed as submitted, with the limit it would have
    crossed; the workspace takes the escalation the coordinator decided with it, as for a selection's."""
    held = decision["held"]
    item_id = str(getattr(item, "id", None) or getattr(item, "request_id", ""))
    ref = f"{item.type} {item_id}@{commit.version}"
    state.held[ref] = HeldRec(
        ref,
        item.type,
        item_id,
        held["limit"],
        held["limit_value"],
        held["open"],
        commit.author.principal,
        commit.version,
        item.model_dump(mode="json", exclude_none=True),
    )
    escalation = decision.get("escalated")
    if escalation:
        state.status = escalation["to"]
        state.status_reason = escalation["reason"]


def _fenced_facts(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    """Rule 5 (ADR 0167): who was fenced from which request, the observation each check's result carried, and
    each observation a fenced principal records about the target of a request it no longer holds."""
    author = commit.author.principal
    match item:
        case it.WorkClaim() | it.WorkReclaim() if decision.get("fenced_holder"):
            fenced = str(decision["fenced_holder"])
            if not same_principal(fenced, author):
                known = state.fenced_claims.get(principal_key(fenced))
                requests = known.requests if known is not None else ()
                if item.request_id not in requests:
                    rec = FencedClaimsRec(principal_key(fenced), (*requests, item.request_id))
                    state.fenced_claims[rec.principal] = rec
        case it.WorkResult() if item.observation is not None:
            state.check_results[item.request_id] = item.observation.id
        case it.Observation() if state.fenced_claims:
            claims = state.fenced_claims.get(principal_key(author))
            for request_id in claims.requests if claims is not None else ():
                work = state.work[request_id]
                if not same_principal(work.holder, author) and about_target(work.target, item):
                    state.fenced_writes[item.id] = FencedWriteRec(item.id, request_id, author, commit.version)
                    return


def about_target(target: str, body: it.ObservationBody) -> bool:
    """Whether an observation is about a request's target: the target (a short description) names the system or
    instance it was read from, or an instance it covers, as a word of its own (case-insensitively)."""
    words = set(re.split(r"[^\w.:/@-]+", target.casefold()))
    named = (body.source.system, body.source.instance, *(body.scope.instances if body.scope else ()))
    return any(name.casefold() in words for name in named)
