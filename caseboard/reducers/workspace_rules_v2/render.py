"""The projection rendered by workspace-rules-v2: v1's document, with v2's proposal statuses.

Only what differs is recomputed: a proposal's status follows its actual dependency path (its direct
dependencies and the evidence *supporting* the hypotheses it depends on); challenging evidence that
expires does not make it stale. Everything else is v1's rendering, unchanged. The statuses shown are the
reducer's it is given (``proposal_status`` below for workspace-rules-v2; ADR 0170).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1.render import is_stale
from caseboard.reducers.workspace_rules_v1.render import proposal_status as proposal_status_v1
from caseboard.reducers.workspace_rules_v1.render import render as render_v1
from caseboard.reducers.workspace_rules_v1.state import ProposalRec, WorkspaceState


def dependency_path(state: WorkspaceState, proposal: ProposalRec) -> list[str]:
    """What a proposal rests on: its dependencies and the evidence supporting the hypotheses among them."""
    path: list[str] = []
    for dep in proposal.depends_on:
        path.append(dep)
        hyp = state.hypotheses.get(dep)
        if hyp is not None:
            path.extend(hyp.supporting)
    return path


def needs_revalidation(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> bool:
    if state.constraints_version > proposal.checked_at:
        return True
    for ref in proposal.depends_on:
        if state.material.get(ref, 0) > proposal.checked_at:
            return True
    for ref in dependency_path(state, proposal):
        obs = state.observations.get(ref)
        if obs is not None and is_stale(obs, as_of):
            return True
    return False


def proposal_status(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> str:
    return proposal_status_v1(state, proposal, as_of, needs_revalidation)


def render(state: WorkspaceState, reducer: Reducer[Any]) -> dict[str, Any]:
    document = render_v1(state, reducer)
    for entry in document["proposals"]:
        entry["status"] = reducer.proposal_status(state, state.proposals[entry["id"]], state.at)
    return document
