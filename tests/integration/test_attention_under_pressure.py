"""Issue 22's busy incident, on SQLite and PostgreSQL: capacity limits active material, never the disagreement.

A workspace opened with ``max_selected_items: 50`` gets 300 routine observations; the planner's hypothesis
``h`` and a specialist's challenge ``o-contra`` (with a question about ``h``) must still be selected, a routine
observation deselected with its reason, and the planner's bounded view must carry all three.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caseboard.domain.items import Role
from caseboard.projections.model_view import build_view
from tests.unit.board import Board, hyp, link, obs, question


@pytest.fixture
def busy(durable_url: str) -> Iterator[Board]:
    board = Board("view-1", url=durable_url)
    board.open(max_selected_items=50, max_open_questions=10)
    for start in range(0, 300, 50):  # 300 routine observations, 50 to a contribution
        board.ok("specialist", [obs(f"o{i}", f"routine check {i} passed") for i in range(start, start + 50)])
    board.ok("planner", [hyp("h", "the cache eviction storm starves checkout", supporting_evidence=["o0"])])
    board.ok(
        "specialist",
        [
            obs("o-contra", "cache hit ratio was normal throughout the incident"),
            link("o-contra", "h", "challenges"),
            question("q-h", about="h"),
        ],
    )
    yield board
    board.ledger.close()


def view(board: Board, budget: int) -> Any:
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    commits = list(board.ledger.iter_commits(board.workspace_id))
    return build_view(state, commits, Role.PLANNER, budget, board.coordinator.workspaces.reducer.name)


def test_the_hypothesis_and_its_contradiction_are_selected_and_a_routine_observation_makes_room(busy: Board) -> None:
    projection = busy.show()
    selected = projection["selected_items"]
    assert [h["id"] for h in selected["hypotheses"]] == ["h"]
    assert "o-contra" in selected["observations"]
    assert selected["hypotheses"][0]["challenging_evidence"] == ["o-contra"]
    assert selected["hypotheses"][0]["open_questions"] == ["which hosts were affected?"]
    assert projection["counters"]["selected_items"] == 50
    assert projection["status"] == "investigating"
    hypothesis_commit = next(c for c in busy.ledger.iter_commits("view-1") if c.items[0].type == "hypothesis")
    decision = hypothesis_commit.decisions[0]
    assert decision["selected"] == ["h"]
    (deselected,) = decision["deselected"]
    assert deselected.startswith("o") and deselected not in ("o0", "o-contra")
    assert "room for hypothesis 'h'" in decision["deselection"][0]["reason"]
    assert busy.observation(deselected)["selected"] is False


def test_the_routine_observations_that_stay_are_the_most_recent(busy: Board) -> None:
    selected = busy.show()["selected_items"]["observations"]
    routine = [ref for ref in selected if ref != "o-contra"]
    assert routine == [f"o{i}" for i in range(252, 300)]


def test_the_planners_view_carries_the_hypothesis_its_challenge_and_the_question(busy: Board) -> None:
    shown = view(busy, 3000)
    refs = {entry.ref for entry in shown.entries}
    assert {"h", "o-contra", "q-h"} <= refs, refs
    assert shown.escalate is False


def test_a_budget_too_small_for_the_reserved_material_escalates_and_says_what_was_cut(busy: Board) -> None:
    shown = view(busy, 1000)
    assert shown.escalate is True
    assert shown.reserved_omitted > 0
    assert "escalate" in shown.text
