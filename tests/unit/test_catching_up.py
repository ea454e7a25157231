"""What a writer that fell behind is told (DESIGN §4): a version conflict with the commits since, each summed up."""

from __future__ import annotations

from caseboard.domain.errors import VersionConflict
from caseboard.domain.outcome import Refused
from tests.unit.board import Board, obs


def test_a_stale_writer_gets_each_commit_since_with_its_version_time_author_and_items() -> None:
    board = Board()
    board.open()
    board.clock.advance(60)
    board.ok("specialist", [obs("obs-1")])
    outcome = board.submit("specialist", [obs("obs-2")], expected_version=1)
    assert isinstance(outcome, Refused) and outcome["reason"] == "version_conflict"
    assert outcome["current_version"] == 2
    [since] = outcome["since"]
    assert since == {
        "workspace_version": 2,
        "at": "2026-03-02T14:01:00Z",
        "author": "specialist-1",
        "items": since["items"],
    }
    assert len(since["items"]) == 1 and "obs-1" in since["items"][0]


def test_the_conflict_keeps_what_was_expected_and_what_is_current_for_a_python_caller() -> None:
    conflict = VersionConflict(3, 5, [])
    assert (conflict.expected, conflict.current, conflict.field) == (3, 5, "expected_version")
