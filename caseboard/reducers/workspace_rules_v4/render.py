"""The projection rendered by workspace-rules-v4: v3's document, with v4's rules of evidence.

- Rule 1: every verification or answer that settled nothing for want of coverage is listed under
  ``coverage_insufficient`` (the claim, the checks, what each is missing, the period the claim is about), and
  beside its hypothesis or question.
- Rule 8: an observation whose event time ran ahead of its commit's is ``unverified`` with the flag
  ``event_time_in_future``; a challenge resting only on such observations does not make a hypothesis
  ``challenged``; observations at the same instant list each other under ``tied_with``.
- Rule 10 (its projection side): once the budget is exhausted, ``status_detail.unresolved`` names every check
  that failed, did not complete or timed out (a lease reclaimed), each with what it covered, and every
  question still open, whatever the handoff text says.
- Rule 4: a confirmed hypothesis with a material change after the version its verification was decided on is
  ``confirmed_before_challenge``, not ``confirmed``; each hypothesis shows ``verification_decided_on_version``.
- Rule 6: observations that cite the same excerpt are one source with its copies: each observation shows
  ``copy_of`` (the source it copies, or null) and ``copies``; a hypothesis's ``supporting_sources`` names each
  source once (the first of its copies it cites) and ``supporting_copies`` the other copies under it.
- Rule 2: every late arrival that bears on a closed conclusion (a confirmed hypothesis, an accepted plan) is
  listed under ``late_counterevidence``, once per observation, with what it bears on and why (ADR 0165).
- Rule 5: an observation a fenced writer recorded about its request's target shows ``fenced_writer`` (the
  request, and the live holder's result when there is one); a hypothesis lists it under ``uncounted_support``,
  not among its ``supporting_sources``, and its status does not count it, until the live holder's result
  supports the hypothesis too or a verification settles it (ADR 0167).
- Rule 9: every question, check or proposal held for lack of capacity is listed under ``held`` with the limit
  it would have crossed and the item as submitted (ADR 0168).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1.render import iso
from caseboard.reducers.workspace_rules_v1.state import HypothesisRec, WorkspaceState
from caseboard.reducers.workspace_rules_v3.render import coverage, sources
from caseboard.reducers.workspace_rules_v3.render import hypothesis_status as hypothesis_status_v3
from caseboard.reducers.workspace_rules_v3.render import render as render_v3
from caseboard.reducers.workspace_rules_v4.state import HeldRec, UnsettledRec, WorkspaceStateV4


def hypothesis_status(state: WorkspaceState, hyp: HypothesisRec) -> str:
    """v3's status, except that a confirmation decided before a material change to the hypothesis (a challenge,
    a refutation) is ``confirmed_before_challenge``: it needs a new verification."""
    future = getattr(state, "future_clock", {})
    if hyp.challenging and all(ref in future for ref in hyp.challenging):  # rule 8: an order nobody can know
        hyp = replace(hyp, challenging=())
    pending = uncounted_support(state, hyp)
    if pending:  # rule 5: a fenced writer's word is not support until the live result or a verification settles it
        hyp = replace(hyp, supporting=tuple(ref for ref in hyp.supporting if ref not in pending))
    status = hypothesis_status_v3(state, hyp)
    if status == "confirmed":
        decided = getattr(state, "decided_on", {}).get(hyp.id, hyp.verified_version or 0)
        if state.material.get(hyp.id, 0) > decided:
            return "confirmed_before_challenge"
    return status


def uncounted_support(state: WorkspaceState, hyp: HypothesisRec) -> tuple[str, ...]:
    """Rule 5 (ADR 0167): the observations supporting ``hyp`` that a fenced writer recorded about its request's
    target, and that nothing settled: neither a verification of ``hyp`` nor the live holder's result, whose
    observation would then support ``hyp`` too."""
    writes = getattr(state, "fenced_writes", None)
    if not writes or hyp.verification in ("confirmed", "refuted"):
        return ()
    results = getattr(state, "check_results", {})
    return tuple(
        ref for ref in hyp.supporting if ref in writes and results.get(writes[ref].request_id) not in hyp.supporting
    )


def held_item(rec: HeldRec) -> dict[str, Any]:
    return {
        "ref": rec.ref,
        "type": rec.type,
        "id": rec.item_id,
        "limit": rec.limit,
        "limit_value": rec.limit_value,
        "open": rec.open,
        "author": rec.author,
        "recorded_at_version": rec.version,
        "item": rec.item,
    }


def unsettled(rec: UnsettledRec) -> dict[str, Any]:
    return {
        "kind": rec.kind,
        "claim": rec.claim,
        "checks": list(rec.checks),
        "result": rec.result,
        "author": rec.author,
        "recorded_at_version": rec.version,
        "missing": list(rec.missing),
        "period": None if rec.window_start is None else [iso(rec.window_start), iso(rec.window_end)],
    }


def unresolved(state: WorkspaceStateV4) -> dict[str, Any]:
    """What a person picking up an exhausted workspace must know: every check that failed, did not complete or
    timed out (its lease reclaimed and no result since), with its coverage and last word, and every open
    question."""
    checks = [
        {
            "request_id": w.request_id,
            "kind": w.kind,
            "status": w.status if w.status in ("failed", "incomplete") else "timed_out",
            "summary": w.result_summary if w.status in ("failed", "incomplete") else w.last_reclaim_reason,
            "coverage": coverage(state.coverage.get(w.request_id)),
        }
        for w in state.work.values()
        if w.status in ("failed", "incomplete") or (w.status in ("awaiting_result", "claimed") and w.reclaims)
    ]
    questions = [
        {"id": q.id, "text": q.text, "about": q.about} for q in state.questions.values() if q.answered_version is None
    ]
    return {"checks": checks, "open_questions": questions}


def one_source_each(state: WorkspaceStateV4, refs: tuple[str, ...]) -> tuple[list[str], dict[str, list[str]]]:
    """The sources ``refs`` rest on (v3's, derived summaries resolved), copies of one excerpt counted once: each
    group named by the first of it in ``refs``, with the other copies of it there."""
    named: dict[str, str] = {}  # a group's source: the member that names it
    copies: dict[str, list[str]] = {}
    for ref in sources(state, refs):
        source = state.copy_of.get(ref, ref)
        first = named.setdefault(source, ref)
        if first != ref:
            copies.setdefault(first, []).append(ref)
    return list(named.values()), copies


def late_counterevidence(state: WorkspaceStateV4) -> list[dict[str, Any]]:
    """Each late observation that bears on a closed conclusion, in the order they arrived, with every conclusion
    it bears on and why."""
    found: dict[str, dict[str, Any]] = {}
    for rec in state.late_counter.values():
        obs = state.observations[rec.observation]
        entry = found.setdefault(
            rec.observation,
            {
                "observation": rec.observation,
                "author": obs.author,
                "recorded_at_version": obs.version,
                "event_time": iso(obs.event_time),
                "selected": state.is_selected(obs.id),
                "bears_on": [],
            },
        )
        entry["bears_on"].append({"ref": rec.bears_on, "kind": rec.kind, "why": rec.why, "since_version": rec.version})
    return list(found.values())


def render(state: WorkspaceStateV4, reducer: Reducer[Any]) -> dict[str, Any]:
    document = render_v3(state, reducer)  # the statuses shown are the reducer's (ADR 0170)
    statuses = {hyp.id: reducer.hypothesis_status(state, hyp) for hyp in state.hypotheses.values()}
    for entry in document["selected_items"]["hypotheses"]:
        entry["status"] = statuses[entry["id"]]
    by_claim: dict[str, list[dict[str, Any]]] = {}
    for rec in state.unsettled.values():
        by_claim.setdefault(rec.claim, []).append(unsettled(rec))
    for entry in document["hypotheses"]:
        entry["status"] = statuses[entry["id"]]
        entry["verification_decided_on_version"] = state.decided_on.get(entry["id"])
        entry["supporting_sources"], entry["supporting_copies"] = one_source_each(
            state, state.hypotheses[entry["id"]].supporting
        )
        _fenced_support(state, entry)
    for entry in (*document["hypotheses"], *document["questions"]):
        entry["coverage_insufficient"] = by_claim.get(entry["id"], [])
    document["coverage_insufficient"] = [unsettled(rec) for rec in state.unsettled.values()]
    document["late_counterevidence"] = late_counterevidence(state)
    document["status_detail"]["unresolved"] = unresolved(state) if state.status == "budget_exhausted" else None
    instants: dict[str, list[str]] = {}
    for entry in document["observations"]:
        instants.setdefault(entry["event_time"], []).append(entry["id"])
    for entry in document["observations"]:
        entry["event_time_flags"] = ["event_time_in_future"] if entry["id"] in state.future_clock else []
        entry["tied_with"] = [ref for ref in instants[entry["event_time"]] if ref != entry["id"]]
        entry["copy_of"] = state.copy_of.get(entry["id"])
        entry["copies"] = list(state.copies.get(entry["id"], ()))
        _fenced_writer(state, entry)
    document["held"] = [held_item(rec) for rec in state.held.values()]
    return document


def _fenced_support(state: WorkspaceStateV4, entry: dict[str, Any]) -> None:
    """Rule 5: a hypothesis's support a fenced writer gave, and nothing settled, is listed apart."""
    pending = uncounted_support(state, state.hypotheses[entry["id"]])
    entry["uncounted_support"] = list(pending)
    if pending:
        counted = tuple(ref for ref in state.hypotheses[entry["id"]].supporting if ref not in pending)
        entry["supporting_sources"], entry["supporting_copies"] = one_source_each(state, counted)


def _fenced_writer(state: WorkspaceStateV4, entry: dict[str, Any]) -> None:
    """Rule 5: an observation a fenced writer recorded about its request's target names the request and the
    live holder's result (the observation it carried, once there is one)."""
    rec = state.fenced_writes.get(entry["id"])
    entry["fenced_writer"] = (
        None
        if rec is None
        else {
            "request_id": rec.request_id,
            "recorded_at_version": rec.version,
            "live_result": state.check_results.get(rec.request_id),
        }
    )
