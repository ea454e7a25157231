"""The projection rendered by workspace-rules-v3: v1's document, with v3's statuses and what v3 keeps.

- A summary is not a source: evidence that names a derived summary counts as the summary's sources; a
  hypothesis whose support is only summaries is ``proposed``, not ``supported``; each hypothesis lists the
  ``supporting_sources`` its support resolves to, each source once.
- A proposal's dependency closure includes the sources of the summaries in it.
- Work: an ``incomplete`` request (its query did not complete) is listed under ``incomplete_work`` with its
  coverage; every result shows what it covered, and a completed query with no observation reads as
  "no findings within ..." rather than as a bare clean result.
- Questions show the answers that cited no evidence; such a question stays open.
- Reviews: each with the version it was made against and the material changes it did not see.

The statuses shown are the reducer's it is given (``reducer.hypothesis_status``, ``reducer.proposal_status``:
the functions below for workspace-rules-v3), under its name (ADR 0170).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1.render import (
    dependency_closure,
    is_stale,
    iso,
)
from caseboard.reducers.workspace_rules_v1.render import proposal_status as proposal_status_v1
from caseboard.reducers.workspace_rules_v1.render import render as render_v1
from caseboard.reducers.workspace_rules_v1.state import HypothesisRec, ProposalRec, WorkspaceState
from caseboard.reducers.workspace_rules_v3.state import CoverageRec, WorkspaceStateV3


def sources(state: WorkspaceState, refs: tuple[str, ...] | list[str]) -> list[str]:
    """What evidence rests on: each observation itself, each derived summary its sources (recursively), once."""
    out: dict[str, None] = {}
    pending, seen = list(reversed(refs)), set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        obs = state.observations.get(ref)
        if obs is not None and obs.derived_from:
            pending.extend(reversed(obs.derived_from))
        else:
            out[ref] = None
    return list(out)


def hypothesis_status(state: WorkspaceState, hyp: HypothesisRec) -> str:
    """v1's order (verified, challenged, supported, proposed); support by summaries alone is not support."""
    if hyp.verification in ("confirmed", "refuted"):
        return hyp.verification
    if hyp.challenging:
        return "challenged"
    if any(not _derived(state, ref) for ref in hyp.supporting):
        return "supported"
    return "proposed"


def closure(state: WorkspaceState, proposal: ProposalRec) -> list[str]:
    """v1's dependency closure, with the sources of every derived summary in it."""
    refs = dependency_closure(state, proposal)
    return refs + [s for s in sources(state, [r for r in refs if _derived(state, r)]) if s not in refs]


def needs_revalidation(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> bool:
    if state.constraints_version > proposal.checked_at:
        return True
    for ref in closure(state, proposal):
        if state.material.get(ref, 0) > proposal.checked_at:
            return True
        obs = state.observations.get(ref)
        if obs is not None and is_stale(obs, as_of):
            return True
    return False


def proposal_status(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> str:
    return proposal_status_v1(state, proposal, as_of, needs_revalidation)


def coverage(rec: CoverageRec | None) -> dict[str, Any] | None:
    if rec is None:
        return None
    filters = dict(zip(rec.filters[::2], rec.filters[1::2], strict=True))
    return {
        "time_range": [iso(rec.time_range_start), iso(rec.time_range_end)],
        "filters": filters,
        "targets": list(rec.targets),
        "completed": rec.completed,
    }


def finding(status: str, summary: str | None, rec: CoverageRec | None) -> str | None:
    """What a result says, with what it covered: never a bare clean result."""
    if status in ("awaiting_result", "claimed"):
        return None
    if rec is None:
        return f"{status}, coverage not recorded: {summary}" if status == "completed" else summary
    span = f"{iso(rec.time_range_start)}..{iso(rec.time_range_end)}"
    filters = ", ".join(f"{k}={v}" for k, v in zip(rec.filters[::2], rec.filters[1::2], strict=True)) or "none"
    targets = ", ".join(rec.targets) or "none named"
    within = f"within {span}, filters {filters}, targets {targets}"
    if status == "incomplete":
        return f"incomplete: the query did not complete {within}: {summary}"
    if status == "completed" and not rec.with_observation:
        return f"no findings {within}: {summary}"
    return f"{status} {within}: {summary}"


def render(state: WorkspaceStateV3, reducer: Reducer[Any]) -> dict[str, Any]:
    document = render_v1(state, reducer)
    as_of = state.at
    statuses = {hyp.id: reducer.hypothesis_status(state, hyp) for hyp in state.hypotheses.values()}
    for entry in document["selected_items"]["hypotheses"]:
        entry["status"] = statuses[entry["id"]]
    for entry in document["hypotheses"]:
        hyp = state.hypotheses[entry["id"]]
        entry["status"] = statuses[hyp.id]
        entry["supporting_sources"] = sources(state, hyp.supporting)
    for entry in document["proposals"]:
        entry["status"] = reducer.proposal_status(state, state.proposals[entry["id"]], as_of)
    answers: dict[str, list[dict[str, Any]]] = {}
    for answer in state.unsupported_answers.values():
        answers.setdefault(answer.question, []).append(
            {"text": answer.text, "author": answer.author, "recorded_at_version": answer.version, "evidence": []}
        )
    for entry in document["questions"]:
        entry["unsupported_answers"] = answers.get(entry["id"], [])
    last_reviews = {review.proposal: review for review in state.reviews.values()}
    for entry in document["proposal_records"]:
        review = last_reviews.get(entry["id"])
        entry["last_review_against_version"] = review.against_version if review else None
        entry["last_review_unseen_changes"] = list(review.unseen_changes) if review else []
    for entry in document["work"]:
        work = state.work[entry["request_id"]]
        rec = state.coverage.get(work.request_id)
        entry["coverage"] = coverage(rec)
        entry["finding"] = finding(work.status, work.result_summary, rec)
    document["incomplete_work"] = [
        {"request_id": w.request_id, "status": w.status, "coverage": coverage(state.coverage.get(w.request_id))}
        for w in state.work.values()
        if w.status == "incomplete"
    ]
    document["reviews"] = [
        {
            "proposal": r.proposal,
            "decision": r.decision,
            "author": r.author,
            "recorded_at_version": r.version,
            "against_version": r.against_version,
            "unseen_changes": list(r.unseen_changes),
        }
        for r in state.reviews.values()
    ]
    return document


def _derived(state: WorkspaceState, ref: str) -> bool:
    obs = state.observations.get(ref)
    return obs is not None and bool(obs.derived_from)
