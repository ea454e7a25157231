"""Folding one commit (reducer workspace-rules-v4): v3's item rules, with v4's rules of evidence.

Pure: nothing but the state and the commit.
"""

from __future__ import annotations

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.reducers.workspace_rules_v1.evolve import fold_commit
from caseboard.reducers.workspace_rules_v3.evolve import apply_item as apply_item_v3
from caseboard.reducers.workspace_rules_v4.state import WorkspaceStateV4, slot

NAME = "workspace-rules-v4"


def initial(workspace_id: str) -> WorkspaceStateV4:
    return WorkspaceStateV4(workspace_id=workspace_id)


def evolve(state: WorkspaceStateV4, commit: Commit) -> WorkspaceStateV4:
    fold_commit(state, commit, apply_item)  # type: ignore[arg-type]
    key = commit.idempotency_key
    if key is not None and commit.digest is not None:  # fold_commit has just put it under the bare key
        state.idempotency[slot(commit.author.principal, key)] = state.idempotency.pop(key)
    return state


def apply_item(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    apply_item_v3(state, commit, item, decision)
    match item:
        case it.WorkResult():
            state.check_runners[item.request_id] = commit.author.principal
        case it.StatusChange() if item.to.value == "budget_exhausted" and state.exhausted_at is None:
            state.exhausted_at = commit.version
        case it.Reopen():
            state.exhausted_at = None
