"""Folding one commit (reducer workspace-rules-v2): v1's item rules, then v2's narrower materiality.

Each item is applied by v1's ``apply_item``; where v1 would record a material change that v2 does not
consider material, the previous mark is put back. Pure: nothing but the state and the commit.
"""

from __future__ import annotations

from collections.abc import Callable

from caseboard.domain import items as it
from caseboard.domain.commit import Commit, Decision
from caseboard.reducers.workspace_rules_v1.evolve import apply_item, fold_commit
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState

NAME = "workspace-rules-v2"


def evolve(state: WorkspaceState, commit: Commit) -> WorkspaceState:
    return fold_commit(state, commit, _apply_item)


def _apply_item(state: WorkspaceState, commit: Commit, item: it.Item, decision: Decision) -> None:
    undo = _not_material(state, item)
    apply_item(state, commit, item, decision)
    if undo is not None:
        undo()


def _not_material(state: WorkspaceState, item: it.Item) -> Callable[[], None] | None:
    """For an item that v1 marks as a material change and v2 does not: how to put the mark back."""
    match item:
        case it.Link(relation="challenges") if not _verified(state, item.observation):
            return _restore_mark(state, item.hypothesis)
        case it.Hypothesis() if item.challenging_evidence and not any(
            _verified(state, obs) for obs in item.challenging_evidence
        ):
            return _restore_mark(state, item.id)
        case it.Constraints(goal=None, scope=None):
            before = state.constraints_version

            def restore_constraints() -> None:
                state.constraints_version = before

            return restore_constraints
        case _:
            return None


def _restore_mark(state: WorkspaceState, key: str) -> Callable[[], None]:
    before = state.material.get(key)

    def restore() -> None:
        if before is None:
            state.material.pop(key, None)
        else:
            state.material[key] = before

    return restore


def _verified(state: WorkspaceState, observation_id: str) -> bool:
    obs = state.observations.get(observation_id)
    return obs is None or obs.event_time_quality == "verified"
