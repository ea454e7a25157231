"""Folding one commit into the state (reducer workspace-rules-v1).

``evolve(state, commit)`` depends on nothing but its arguments: no clock, no I/O, no randomness. Time comes
from the commit. It takes ownership of ``state`` and returns it updated; a caller that must keep the old
state forks it first (``state.fork()`` is O(1)). The coordinator's decisions recorded in the commit are
applied as recorded, never re-decided.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import assert_never

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.reducers.workspace_rules_v1.state import (
    HypothesisRec,
    IdempotencyRec,
    JudgmentRec,
    LateArrivalRec,
    ObservationRec,
    ProposalRec,
    QuestionRec,
    WorkRec,
    WorkspaceState,
)

NAME = "workspace-rules-v1"


def initial(workspace_id: str) -> WorkspaceState:
    return WorkspaceState(workspace_id=workspace_id)


def evolve(state: WorkspaceState, commit: Commit) -> WorkspaceState:
    return fold_commit(state, commit, apply_item)


ApplyItem = Callable[[WorkspaceState, Commit, it.Item, Decision], None]


def fold_commit(state: WorkspaceState, commit: Commit, apply: ApplyItem) -> WorkspaceState:
    """What every reducer of this state does with a commit: check that it follows the state, ``apply`` each
    item with its decision, then record the commit's version, time, hash and idempotency key."""
    if commit.version != state.version + 1:
        raise ValueError(f"commit {commit.version} cannot follow version {state.version} of {state.workspace_id!r}")
    for item, decision in zip(commit.items, commit.decisions, strict=True):
        apply(state, commit, item, decision)
    state.version = commit.version
    state.at = commit.at
    state.head_hash = commit.hash
    if commit.idempotency_key is not None and commit.digest is not None:
        state.idempotency[commit.idempotency_key] = IdempotencyRec(
            commit.digest, commit.version, tuple(commit.outcome_items())
        )
    return state


def apply_item(state: WorkspaceState, commit: Commit, item: it.Item, decision: Decision) -> None:
    """Apply one item of ``commit`` (also used by the coordinator on a fork, item by item)."""
    author, role, version, at = commit.author.principal, commit.author.role.value, commit.version, commit.at
    match item:
        case it.Open():
            state.scope = item.scope.model_dump()
            state.goal = item.goal
            state.limits = item.runtime_limits.model_dump()
            state.execution_mode = item.execution_mode
            state.status = "investigating"
        case it.Observation():
            _add_observation(state, item, author, role, version, at, None, decision)
        case it.Hypothesis():
            state.ids[item.id] = "hypothesis"
            state.hypotheses[item.id] = HypothesisRec(
                item.id,
                item.statement,
                author,
                version,
                tuple(dict.fromkeys(item.supporting_evidence)),
                tuple(dict.fromkeys(item.challenging_evidence)),
            )
            if item.challenging_evidence:
                state.material[item.id] = version
        case it.Link():
            hyp = state.hypotheses[item.hypothesis]
            if item.relation == "supports":
                if item.observation not in hyp.supporting:
                    state.hypotheses[hyp.id] = replace(hyp, supporting=(*hyp.supporting, item.observation))
            else:
                if item.observation not in hyp.challenging:
                    state.hypotheses[hyp.id] = replace(hyp, challenging=(*hyp.challenging, item.observation))
                state.material[hyp.id] = version
        case it.Question():
            state.ids[item.id] = "question"
            state.questions[item.id] = QuestionRec(item.id, item.text, item.about, author, version)
            state.open_questions += 1
        case it.Answer():
            question = state.questions[item.question]
            state.questions[question.id] = replace(
                question, answer=item.text, answered_by=author, answered_version=version, evidence=item.evidence
            )
            state.open_questions -= 1
        case it.Proposal():
            state.ids[item.id] = "proposal"
            state.proposals[item.id] = ProposalRec(
                item.id,
                item.summary,
                item.based_on_workspace_version,
                tuple(item.depends_on),
                author,
                version,
                checked_at=item.based_on_workspace_version,
            )
            state.active_proposals += 1
        case it.Review():
            _review(state, item, version)
        case it.WorkRequest():
            state.ids[item.request_id] = "work_request"
            state.work[item.request_id] = WorkRec(
                item.request_id, item.kind, item.target, item.question, item.timeout_s, author, version, at
            )
            state.pending_work += 1
        case it.WorkClaim():
            request = state.work[item.request_id]
            state.work[item.request_id] = replace(
                request,
                status="claimed",
                generation=decision["generation"],
                holder=author,
                claimed_at=at,
                lease_expires_at=datetime.fromisoformat(decision["lease_expires_at"]),
            )
        case it.WorkRenew():
            request = state.work[item.request_id]
            state.work[item.request_id] = replace(
                request, lease_expires_at=datetime.fromisoformat(decision["lease_expires_at"])
            )
        case it.WorkResult():
            request = state.work[item.request_id]
            state.work[item.request_id] = replace(
                request,
                status=item.status,
                holder=None,
                lease_expires_at=None,
                result_summary=item.summary,
                result_version=version,
                query_completed=item.query.completed if item.query else None,
            )
            state.pending_work -= 1
            if decision.get("late_arrival"):
                ref = f"{item.request_id}@{version}"
                state.late_arrivals[ref] = LateArrivalRec(ref, "work_result", author, version, at)
            if item.observation is not None:
                _add_observation(state, item.observation, author, role, version, at, item.request_id, decision)
        case it.WorkReclaim():
            request = state.work[item.request_id]
            state.work[item.request_id] = replace(
                request,
                status="awaiting_result",
                holder=None,
                lease_expires_at=None,
                reclaims=request.reclaims + 1,
                last_reclaim_reason=item.reason,
            )
        case it.Verification():
            hyp = state.hypotheses[item.claim]
            if item.result != "inconclusive":
                state.hypotheses[hyp.id] = replace(
                    hyp, verification=item.result, verified_by=author, verified_version=version
                )
            if item.result == "refuted":
                state.material[hyp.id] = version
        case it.Selection():
            pass  # applied from the decision below
        case it.Judgment():
            state.ids[item.invocation_id] = "judgment"
            state.judgments[item.invocation_id] = JudgmentRec(
                item.invocation_id, item.component, item.model, author, item.input_workspace_version, version
            )
        case it.Cycle():
            state.cycles_used = item.number
        case it.StatusChange():
            state.status = item.to.value
            state.status_reason = item.reason
            state.handoff = item.handoff
        case it.Reopen():
            state.status = "investigating"
            state.status_reason = f"reopened by {author}"
            state.handoff = None
            state.owner = item.owner
            state.limits = {**state.limits, **item.runtime_limits.model_dump(exclude_none=True)}
            state.cycles_used = 0
        case it.Constraints():
            if item.goal is not None:
                state.goal = item.goal
            if item.scope is not None:
                state.scope = item.scope.model_dump()
            if item.runtime_limits is not None:
                state.limits = {**state.limits, **item.runtime_limits.model_dump(exclude_none=True)}
            state.constraints_version = version
        case _:
            assert_never(item)
    _apply_selection(state, decision, version)


def _add_observation(
    state: WorkspaceState,
    body: it.ObservationBody,
    author: str,
    role: str,
    version: int,
    at: datetime,
    via_request: str | None,
    decision: Decision,
) -> None:
    late = bool(decision.get("late_arrival"))
    state.ids[body.id] = "observation"
    state.observations[body.id] = ObservationRec(
        body.id,
        body.statement,
        body.source.system,
        body.source.instance,
        body.event_time,
        body.event_time_quality,
        body.evidence_ref,
        body.scope.instances if body.scope else (),
        body.expires_at,
        tuple(body.derived_from),
        author,
        role,
        version,
        at,
        via_request,
        late,
    )
    if late:
        state.late_arrivals[body.id] = LateArrivalRec(body.id, "observation", author, version, at)


def _review(state: WorkspaceState, item: it.Review, version: int) -> None:
    proposal = state.proposals[item.proposal]
    if item.decision == "retained":
        proposal = replace(proposal, checked_at=version, decision=None)
    elif item.decision == "accepted":
        proposal = replace(proposal, decision="accepted")
    else:
        proposal = replace(proposal, decision=item.decision)
        state.active_proposals -= 1
        state.material[proposal.id] = version
    state.proposals[proposal.id] = replace(proposal, last_review=item.decision, last_review_version=version)


def _apply_selection(state: WorkspaceState, decision: Decision, version: int) -> None:
    for item_id in decision.get("selected", ()):
        if not state.is_selected(item_id):
            state.selected[item_id] = True
            state.selected_count += _counts(state, item_id)
    for item_id in decision.get("deselected", ()):
        if state.is_selected(item_id):
            state.selected[item_id] = False
            state.selected_count -= _counts(state, item_id)
    escalation = decision.get("escalated")
    if escalation:
        state.status = escalation["to"]
        state.status_reason = escalation["reason"]


def _counts(state: WorkspaceState, item_id: str) -> int:
    """Top-level observations and hypotheses count against max_selected_items; derived summaries do not."""
    observation = state.observations.get(item_id)
    return 0 if observation is not None and observation.derived_from else 1


def lease_expiry(at: datetime, lease_s: int) -> str:
    return (at + timedelta(seconds=lease_s)).isoformat().replace("+00:00", "Z")
