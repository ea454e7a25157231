"""Issue 24's stale review, on SQLite and PostgreSQL: a review is a decision on a version.

v3 hypothesis ``h``; v4 proposal ``p`` on ``h``; v5 ``c1`` challenges ``h``; the planner reads v5, and
meanwhile v6 ``c2`` challenges ``h`` too; v7 the planner's retain, made against v5, lands. ``p`` must stay
``requires_revalidation`` and the outcome must name v6; a retain against v6 then makes it current.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.unit.board import Board, hyp, link, obs, proposal, review


@pytest.fixture
def challenged(durable_url: str) -> Iterator[Board]:
    board = Board("stale-1", url=durable_url)
    board.open()
    board.ok("specialist", [obs("o1", "GC pauses from 14:02")])
    board.ok("planner", [hyp("h", "GC pauses starve the checkout pool", supporting_evidence=["o1"])])
    board.ok("planner", [proposal("p", 3, "h")])
    assert board.proposal_status("p") == "current"
    board.ok("specialist", [obs("c1", "GC pauses began at 13:58"), link("c1", "h", "challenges")])
    assert board.head == 5
    assert board.proposal_status("p") == "requires_revalidation"
    board.ok(
        "specialist",
        [obs("c2", "cache hit ratio was normal throughout"), link("c2", "h", "challenges")],
        "specialist-2",
    )
    assert board.head == 6
    yield board
    board.ledger.close()


def retain(against: int | None = None, **extra: object) -> list[dict[str, object]]:
    item = review("p", "retained", against)
    item["what_changed"] = "GC pauses began earlier (c1)"
    return [item]


def test_a_retain_made_against_an_older_version_keeps_the_proposal_requires_revalidation(challenged: Board) -> None:
    outcome = challenged.ok("planner", retain(5))
    assert outcome["workspace_version"] == 7
    decision = outcome["items"][0]
    assert decision["reviewed_version"] == 5
    assert decision["unseen_changes"] == [6]
    assert "6" in decision["note"] and "requires_revalidation" in decision["note"]
    assert challenged.proposal_status("p") == "requires_revalidation"
    record = next(r for r in challenged.show()["proposal_records"] if r["id"] == "p")
    assert record["last_review_against_version"] == 5
    assert record["last_review_unseen_changes"] == [6]
    reviews = challenged.show()["reviews"]
    assert reviews == [
        {
            "proposal": "p",
            "decision": "retained",
            "author": "planner-1",
            "recorded_at_version": 7,
            "against_version": 5,
            "unseen_changes": [6],
        }
    ]


def test_a_retain_made_against_the_latest_change_makes_it_current_with_its_basis_kept(challenged: Board) -> None:
    challenged.ok("planner", retain(5))
    outcome = challenged.ok("planner", retain(6))
    assert "unseen_changes" not in outcome["items"][0]
    assert challenged.proposal_status("p") == "current"
    entry = next(p for p in challenged.show()["proposals"] if p["id"] == "p")
    assert entry["based_on_workspace_version"] == 3
    record = next(r for r in challenged.show()["proposal_records"] if r["id"] == "p")
    assert record["last_checked_against_version"] == 6


def test_the_contributions_expected_version_states_the_version_of_a_retain(challenged: Board) -> None:
    challenged.ok("planner", retain(), expected_version=6)
    assert challenged.proposal_status("p") == "current"


def test_a_retain_that_states_no_version_is_refused_and_appends_nothing(challenged: Board) -> None:
    outcome = challenged.submit("planner", retain())
    assert outcome["ok"] is False
    assert outcome["reason"] == "invalid"
    assert outcome["field"] == "items[0].based_on_workspace_version"
    assert "version it was made against" in outcome["message"]
    assert challenged.head == 6


def test_a_review_against_a_version_beyond_the_head_is_refused(challenged: Board) -> None:
    outcome = challenged.submit("planner", retain(9))
    assert outcome["reason"] == "invalid"
    assert "beyond the current version 6" in outcome["message"]


def test_a_withdrawal_keeps_the_version_it_was_made_against(challenged: Board) -> None:
    outcome = challenged.ok("planner", [review("p", "withdrawn", 5)])
    assert outcome["items"][0]["unseen_changes"] == [6]
    assert challenged.proposal_status("p") == "withdrawn"
    assert challenged.show()["reviews"][0]["against_version"] == 5
