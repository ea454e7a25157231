"""Folding one commit (reducer workspace-rules-v2): v1's item rules, then v2's narrower materiality.

Each item is applied by v1's ``apply_item``; where v1 would record a material change that v2 does not
consider material, the previous mark is put back. Pure: nothing but the state and the commit.
"""

from __future__ import annotations

from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.reducers.workspace_rules_v1.evolve import apply_item
from caseboard.reducers.workspace_rules_v1.state import IdempotencyRec, WorkspaceState

NAME = "workspace-rules-v2"


def evolve(state: WorkspaceState, commit: Commit) -> WorkspaceState:
    if commit.version != state.version + 1:
        raise ValueError(
            f"commit {commit.version} cannot follow version {state.version} of {state.workspace_id!r}"
        )
    for item, decision in zip(commit.items, commit.decisions, strict=True):
        kept = _immaterial_mark(state, item)
        apply_item(state, commit, item, decision)
        if kept is not None:
            _restore(state, *kept)
    state.version = commit.version
    state.at = commit.at
    state.head_hash = commit.hash
    if commit.idempotency_key is not None and commit.digest is not None:
        state.idempotency[commit.idempotency_key] = IdempotencyRec(
            commit.digest, commit.version, tuple(commit.outcome_items())
        )
    return state


def _immaterial_mark(state: WorkspaceState, item: it.Item) -> tuple[str, int | None] | None:
    """For an item v1 marks as material but v2 does not: (the key v1 will mark, its value before)."""
    if isinstance(item, it.Link) and item.relation == "challenges":
        if not _verified(state, item.observation):
            return item.hypothesis, state.material.get(item.hypothesis)
    elif isinstance(item, it.Hypothesis) and item.challenging_evidence:
        if not any(_verified(state, obs) for obs in item.challenging_evidence):
            return item.id, None
    elif isinstance(item, it.Constraints) and item.goal is None and item.scope is None:
        return _CONSTRAINTS, state.constraints_version
    return None


_CONSTRAINTS = "\0constraints"


def _restore(state: WorkspaceState, key: str, before: int | None) -> None:
    if key == _CONSTRAINTS:
        state.constraints_version = before or 0
    elif before is None:
        state.material.pop(key, None)
    else:
        state.material[key] = before


def _verified(state: WorkspaceState, observation_id: str) -> bool:
    obs = state.observations.get(observation_id)
    return obs is None or obs.event_time_quality == "verified"
