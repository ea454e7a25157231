"""The projection contract (DESIGN.md §4) rendered from a workspace-rules-v1 state.

Statuses that depend on time (an observation past ``expires_at``, proposals resting on it) are judged as of
the commit time of the version shown, never the wall clock, so the same version always renders the same.

``render(state, reducer)`` shows the statuses of the reducer it is given (``reducer.proposal_status``,
``reducer.hypothesis_status``) under its name: for workspace-rules-v1 they are the functions below, and a
reducer built on this rendering with a rule of its own shows its own (ADR 0170).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1.state import (
    HypothesisRec,
    ObservationRec,
    ProposalRec,
    WorkspaceState,
)

PROJECTION_SCHEMA = "caseboard.projection/1"
PENDING = ("awaiting_result", "claimed")


def iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def hypothesis_status(hyp: HypothesisRec) -> str:
    """Verified outcomes win; challenging evidence never erases support, it outranks it."""
    if hyp.verification in ("confirmed", "refuted"):
        return hyp.verification
    if hyp.challenging:
        return "challenged"
    if hyp.supporting:
        return "supported"
    return "proposed"


def is_stale(obs: ObservationRec, as_of: datetime | None) -> bool:
    return obs.expires_at is not None and as_of is not None and obs.expires_at <= as_of


def dependency_closure(state: WorkspaceState, proposal: ProposalRec) -> list[str]:
    """What a proposal rests on: its dependencies, the evidence under each hypothesis among them, and, for
    a proposal it builds on, everything that one rests on."""
    closure: list[str] = []
    seen = {proposal.id}
    pending = list(proposal.depends_on)
    while pending:
        dep = pending.pop()
        if dep in seen:
            continue
        seen.add(dep)
        closure.append(dep)
        hyp = state.hypotheses.get(dep)
        if hyp is not None:
            closure.extend(hyp.supporting)
            closure.extend(hyp.challenging)
        underneath = state.proposals.get(dep)
        if underneath is not None:
            pending.extend(underneath.depends_on)
    return closure


def needs_revalidation(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> bool:
    """A material change on what it rests on, committed after the version it was last checked against."""
    if state.constraints_version > proposal.checked_at:
        return True
    for ref in dependency_closure(state, proposal):
        if state.material.get(ref, 0) > proposal.checked_at:
            return True
        obs = state.observations.get(ref)
        if obs is not None and is_stale(obs, as_of):
            return True
    return False


def proposal_status(
    state: WorkspaceState,
    proposal: ProposalRec,
    as_of: datetime | None,
    needs: Callable[[WorkspaceState, ProposalRec, datetime | None], bool] = needs_revalidation,
) -> str:
    """The status of a proposal; ``needs`` is the revalidation rule (another reducer version may pass its own)."""
    if proposal.decision in ("revised", "withdrawn"):
        return proposal.decision
    if needs(state, proposal, as_of):
        return "requires_revalidation"
    return "accepted" if proposal.decision == "accepted" else "current"


def open_questions(state: WorkspaceState) -> dict[str | None, list[str]]:
    by_subject: dict[str | None, list[str]] = {}
    for question in state.questions.values():
        if question.answered_version is None:
            by_subject.setdefault(question.about, []).append(question.text)
    return by_subject


def render(state: WorkspaceState, reducer: Reducer[Any]) -> dict[str, Any]:
    as_of = state.at
    questions = open_questions(state)
    selected = state.selected_ids()
    selected_observations = [i for i in selected if i in state.observations]
    return {
        "schema_version": PROJECTION_SCHEMA,
        "reducer_version": reducer.name,
        "workspace_id": state.workspace_id,
        "workspace_version": state.version,
        "as_of": iso(as_of),
        "scope": dict(state.scope),
        "goal": state.goal,
        "status": state.status,
        "status_detail": {"reason": state.status_reason, "handoff": state.handoff, "owner": state.owner},
        "selected_items": {
            "observations": [i for i in selected_observations if not state.observations[i].derived_from],
            "derived_summaries": [i for i in selected_observations if state.observations[i].derived_from],
            "hypotheses": [
                {
                    "id": hyp.id,
                    "statement": hyp.statement,
                    "status": reducer.hypothesis_status(state, hyp),
                    "supporting_evidence": list(hyp.supporting),
                    "challenging_evidence": list(hyp.challenging),
                    "open_questions": questions.get(hyp.id, []),
                }
                for hyp in (state.hypotheses[i] for i in selected if i in state.hypotheses)
            ],
        },
        "proposals": [
            {
                "id": p.id,
                "based_on_workspace_version": p.basis,
                "depends_on": list(p.depends_on),
                "status": reducer.proposal_status(state, p, as_of),
            }
            for p in state.proposals.values()
        ],
        "pending_work": [
            {"request_id": w.request_id, "status": w.status} for w in state.work.values() if w.status in PENDING
        ],
        "runtime_limits": dict(state.limits),
        "execution_mode": state.execution_mode,
        "cycles_used": state.cycles_used,
        "counters": {
            "selected_items": state.selected_count,
            "open_questions": state.open_questions,
            "active_proposals": state.active_proposals,
            "pending_work": state.pending_work,
        },
        "observations": [_observation(state, o, as_of) for o in state.observations.values()],
        "hypotheses": [
            {
                "id": h.id,
                "status": reducer.hypothesis_status(state, h),
                "author": h.author,
                "recorded_at_version": h.version,
                "selected": state.is_selected(h.id),
                "verified_by": h.verified_by,
            }
            for h in state.hypotheses.values()
        ],
        "questions": [
            {
                "id": q.id,
                "text": q.text,
                "about": q.about,
                "author": q.author,
                "recorded_at_version": q.version,
                "status": "open" if q.answered_version is None else "answered",
            }
            for q in state.questions.values()
        ],
        "proposal_records": [
            {
                "id": p.id,
                "summary": p.summary,
                "author": p.author,
                "recorded_at_version": p.version,
                "last_checked_against_version": p.checked_at,
                "last_review": p.last_review,
                "last_review_version": p.last_review_version,
            }
            for p in state.proposals.values()
        ],
        "work": [
            {
                "request_id": w.request_id,
                "kind": w.kind,
                "target": w.target,
                "status": w.status,
                "requested_by": w.requested_by,
                "generation": w.generation,
                "holder": w.holder,
                "lease_expires_at": iso(w.lease_expires_at),
                "lease_lapsed": w.lease_expires_at is not None and as_of is not None and w.lease_expires_at <= as_of,
                "result_summary": w.result_summary,
                "query_completed": w.query_completed,
                "reclaims": w.reclaims,
            }
            for w in state.work.values()
        ],
        "late_arrivals": [
            {
                "ref": a.ref,
                "type": a.type,
                "author": a.author,
                "recorded_at_version": a.version,
                "ingested_at": iso(a.at),
            }
            for a in state.late_arrivals.values()
        ],
    }


def _observation(state: WorkspaceState, obs: ObservationRec, as_of: datetime | None) -> dict[str, Any]:
    return {
        "id": obs.id,
        "statement": obs.statement,
        "source": {"system": obs.source_system, "instance": obs.source_instance},
        "event_time": iso(obs.event_time),
        "event_time_quality": obs.event_time_quality,
        "ingested_at": iso(obs.ingested_at),
        "recorded_at_version": obs.version,
        "author": obs.author,
        "evidence_ref": obs.evidence_ref,
        "expires_at": iso(obs.expires_at),
        "stale": is_stale(obs, as_of),
        "derived_from": list(obs.derived_from),
        "via_request": obs.via_request,
        "selected": state.is_selected(obs.id),
        "late_arrival": obs.late,
    }
