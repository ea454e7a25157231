"""Folding one commit (reducer workspace-rules-v3): v1's item rules, with v3's reviews, checks and answers.

Each item is applied by v1's ``apply_item`` except where v3 differs:

- a ``review`` is a decision on a version: a ``retained`` review makes its proposal current against the
  version it was made against (``based_on_workspace_version``, else the contribution's ``expected_version``),
  not against the version it landed at, so material changes it did not see keep the proposal
  ``requires_revalidation``; every review is kept with that version and the changes it did not cover;
- a ``work_result`` keeps what its query covered; a ``completed`` result whose query did not complete makes
  the request ``incomplete``, never ``completed``;
- an ``answer`` settles its question only when it cites evidence (an observation, or a check that completed);
  an answer without it is kept beside the question, which stays open;
- idempotency keys are kept per principal;
- ``active`` holds what is selected now and nothing else (v1's ``selected`` keeps every id ever selected), so
  that the selection policy's look at the selection costs what is selected, not everything that came and went.

Pure: nothing but the state and the commit.
"""

from __future__ import annotations

from dataclasses import replace

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.reducers.workspace_rules_v1.evolve import apply_item as apply_item_v1
from caseboard.reducers.workspace_rules_v1.evolve import fold_commit
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState
from caseboard.reducers.workspace_rules_v3.state import AnswerRec, CoverageRec, ReviewRec, WorkspaceStateV3, slot

NAME = "workspace-rules-v3"


def initial(workspace_id: str) -> WorkspaceStateV3:
    return WorkspaceStateV3(workspace_id=workspace_id)


def evolve(state: WorkspaceStateV3, commit: Commit) -> WorkspaceStateV3:
    fold_commit(state, commit, apply_item)  # type: ignore[arg-type]
    key = commit.idempotency_key
    if key is not None and commit.digest is not None:  # fold_commit has just put it under the bare key
        state.idempotency[slot(commit.author.principal, key)] = state.idempotency.pop(key)
    return state


def reviewed_version(item: it.Review, commit: Commit) -> int | None:
    """The version a review was made against: its own field, else the contribution's expected version."""
    return item.based_on_workspace_version or commit.expected_version


def settles(state: WorkspaceState, evidence: tuple[str, ...]) -> bool:
    """Evidence that can settle a question: an observation, or a check whose query completed."""
    for ref in evidence:
        if ref in state.observations:
            return True
        work = state.work.get(ref)
        if work is not None and work.status == "completed":
            return True
    return False


def apply_item(state: WorkspaceStateV3, commit: Commit, item: it.Item, decision: Decision) -> None:
    _apply(state, commit, item, decision)
    for ref in decision.get("selected", ()):
        state.active[ref] = True
    for ref in decision.get("deselected", ()):
        if type(state.active) is dict:
            state.active.pop(ref, None)
        else:  # a fork (a ChainMap) cannot delete what its parent holds
            state.active[ref] = False


def _apply(state: WorkspaceStateV3, commit: Commit, item: it.Item, decision: Decision) -> None:
    match item:
        case it.Answer() if not settles(state, item.evidence):
            ref = f"{item.question}@{commit.version}"
            state.unsupported_answers[ref] = AnswerRec(
                ref, item.question, item.text, commit.author.principal, commit.version, tuple(item.evidence)
            )
        case it.Review():
            before = state.proposals[item.proposal]
            apply_item_v1(state, commit, item, decision)
            against = reviewed_version(item, commit)
            if item.decision == "retained" and against is not None:  # v1 made it current as of the landing
                after = state.proposals[item.proposal]
                state.proposals[item.proposal] = replace(after, checked_at=max(before.checked_at, against))
            ref = f"{item.proposal}@{commit.version}"
            state.reviews[ref] = ReviewRec(
                ref,
                item.proposal,
                item.decision,
                commit.author.principal,
                commit.version,
                against,
                tuple(decision.get("unseen_changes", ())),
                item.what_changed,
            )
        case it.WorkResult():
            apply_item_v1(state, commit, item, decision)
            query = item.query
            if query is not None:
                filters = tuple(part for name, value in sorted(query.filters.items()) for part in (name, value))
                state.coverage[item.request_id] = CoverageRec(
                    item.request_id,
                    commit.version,
                    query.time_range[0],
                    query.time_range[1],
                    filters,
                    tuple(query.targets),
                    query.completed,
                    item.observation is not None,
                )
                if item.status == "completed" and not query.completed:
                    request = state.work[item.request_id]
                    state.work[item.request_id] = replace(request, status="incomplete")
        case _:
            apply_item_v1(state, commit, item, decision)
