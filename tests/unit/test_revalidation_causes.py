"""Why a proposal requires revalidation (``Reducer.revalidation_causes``): each material change since the
version it was checked against, with the reference it touched, a change of constraints, and each observation
it rests on that has expired by the time asked about; nothing for a proposal that is current."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from caseboard.reducers import Reducer, WorkspaceState, get_reducer
from caseboard.reducers.base import Cause
from caseboard.replay.records import read_file
from tests.unit.board import Board, hyp, link, obs, proposal

CORPUS = Path(__file__).resolve().parents[2] / "corpus"


def folded(name: str) -> tuple[Reducer[WorkspaceState], WorkspaceState]:
    reducer = get_reducer()
    commits = list(read_file(CORPUS / f"{name}.jsonl"))
    return reducer, reducer.fold(reducer.initial(commits[0].workspace_id), commits)


def test_a_challenge_after_the_basis_is_named_with_the_dependency_it_touched() -> None:
    reducer, state = folded("incident-042")
    causes = reducer.revalidation_causes(state, state.proposals["proposal-008"], state.at)
    assert causes == [Cause(19, "hyp-certificate-initiated-failure", "material")]


def test_an_observation_expires_at_its_expiry_time_not_after_it() -> None:
    reducer, state = folded("expired-evidence-044")
    prop = state.proposals["proposal-001"]
    expires = state.observations["obs-no-client-change"].expires_at
    assert expires is not None
    at_expiry = reducer.revalidation_causes(state, prop, expires)
    assert at_expiry == [Cause(5, "obs-no-client-change", "expired", expires)]
    assert reducer.revalidation_causes(state, prop, expires - timedelta(microseconds=1)) == []
    assert reducer.revalidation_causes(state, prop, None) == []  # no time asked about: nothing expires


def test_a_change_of_constraints_after_the_basis_is_a_cause_and_one_before_it_is_not() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1"), link("obs-1", "hyp-1")])
    board.ok("operator", [{"type": "constraints", "goal": "find the cause before the next release"}])
    basis = board.head
    board.ok("planner", [proposal("prop-1", basis, "hyp-1")])
    reducer = board.coordinator.workspaces.reducer
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    assert reducer.revalidation_causes(state, state.proposals["prop-1"], state.at) == []
    board.ok("operator", [{"type": "constraints", "goal": "restore logins first"}])
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    causes = reducer.revalidation_causes(state, state.proposals["prop-1"], state.at)
    assert causes == [Cause(board.head, "constraints", "constraints")]
