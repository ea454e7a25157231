"""Folding one commit (reducer workspace-rules-v4): v3's item rules, with v4's rules of evidence.

Pure: nothing but the state and the commit.
"""

from __future__ import annotations

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.reducers.workspace_rules_v3.evolve import apply_item as apply_item_v3
from caseboard.reducers.workspace_rules_v3.evolve import evolve as evolve_v3
from caseboard.reducers.workspace_rules_v4.state import WorkspaceStateV4

NAME = "workspace-rules-v4"


def initial(workspace_id: str) -> WorkspaceStateV4:
    return WorkspaceStateV4(workspace_id=workspace_id)


def evolve(state: WorkspaceStateV4, commit: Commit) -> WorkspaceStateV4:
    evolve_v3(state, commit)
    return state


def apply_item(state: WorkspaceStateV4, commit: Commit, item: it.Item, decision: Decision) -> None:
    apply_item_v3(state, commit, item, decision)
