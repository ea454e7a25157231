"""Examples folded by every registered reducer, and the cases one reducer version decides its own way: what a
proposal rests on, a deselection on a fork, a commit with a key but no digest, v2's unverified challenge."""

from __future__ import annotations

from typing import Any

import pytest

from caseboard.domain.commit import Commit
from caseboard.reducers import REDUCERS, get_reducer, tenant_of
from tests.unit.board import Board, hyp, link, obs, proposal


def folded(name: str, commits: list[Commit], workspace_id: str = "ws-1") -> Any:
    reducer = get_reducer(name)
    return reducer.fold(reducer.initial(workspace_id), commits)


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_proposal_rests_on_its_dependencies_and_the_evidence_under_each_hypothesis(name: str) -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("prop-1", board.head, "hyp-1")])
    state = board.folded(name)
    assert {"hyp-1", "obs-1"} <= set(get_reducer(name).rests_on(state, state.proposals["prop-1"]))


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_deselection_folded_on_a_fork_is_what_a_fold_from_the_start_gives(name: str) -> None:
    board = Board()
    board.open(max_selected_items=2)
    board.ok("specialist", [obs("obs-1")])
    board.ok("specialist", [obs("obs-2")])
    assert board.ok("specialist", [obs("obs-3")])["items"][0]["deselected"] == ["obs-1"]
    commits = board.ledger.read("ws-1")
    reducer = get_reducer(name)
    forked = folded(name, commits[:-1]).fork()
    reducer.evolve(forked, commits[-1])
    assert reducer.render(forked) == reducer.render(folded(name, commits))
    assert reducer.selected_now(forked) == reducer.selected_now(folded(name, commits))


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_commit_with_an_idempotency_key_but_no_digest_folds_and_records_no_retry(name: str) -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")], idempotency_key="obs-1-once")
    commits = board.ledger.read("ws-1")
    assert commits[-1].digest is not None
    undigested = Commit.model_validate({**commits[-1].model_dump(), "digest": None})
    keyed = folded(name, commits)
    state = folded(name, [*commits[:-1], undigested])
    assert state.version == keyed.version == 2
    assert len(state.idempotency) == len(keyed.idempotency) - 1


def test_v2_does_not_mark_a_hypothesis_born_with_an_unverified_challenge_as_a_material_change() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1"), obs("obs-2", event_time_quality="unverified")])
    basis = board.head
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"], challenging_evidence=["obs-2"])])
    board.ok("planner", [proposal("prop-1", basis, "hyp-1")])
    commits = board.ledger.read("ws-1")
    statuses = {}
    for name in ("workspace-rules-v1", "workspace-rules-v2"):
        state = folded(name, commits)
        statuses[name] = get_reducer(name).proposal_status(state, state.proposals["prop-1"], None)
    assert statuses == {"workspace-rules-v1": "requires_revalidation", "workspace-rules-v2": "current"}


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_workspace_belongs_to_no_tenant_until_it_is_opened_and_then_to_its_scopes(name: str) -> None:
    assert tenant_of(get_reducer(name).initial("ws-1")) is None
    board = Board()
    board.open()
    assert tenant_of(board.folded(name)) == board.show()["scope"]["tenant_id"]


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_review_made_against_the_version_of_a_change_saw_it_and_one_before_did_not(name: str) -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("prop-1", board.head, "hyp-1")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    changed = board.head
    state = board.folded(name)
    review_gaps = get_reducer(name).review_gaps
    assert review_gaps(state, state.proposals["prop-1"], changed) == []
    assert review_gaps(state, state.proposals["prop-1"], changed - 1) == [changed]
