"""The timeline orders by source event time, never by arrival, and shows what a result's query covered."""

from __future__ import annotations

from datetime import timedelta

from caseboard.projections.timeline import timeline
from tests.unit.board import T0, Board, claim, iso, obs, result, work_request

QUERY = {
    "time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"],
    "filters": {"level": "error"},
    "targets": ["auth-1"],
    "completed": False,
}


def test_entries_follow_source_event_time_and_a_results_observation_carries_its_coverage() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("late-seen", event_time=iso(T0 + timedelta(minutes=5)))])
    board.ok("planner", [work_request("req-1")])
    generation = board.ok("specialist", [claim("req-1")])["items"][0]["generation"]
    found = obs("early-found", event_time=iso(T0 - timedelta(minutes=5)))
    del found["type"]
    board.ok("specialist", [result("req-1", generation, query=QUERY, observation=found)])
    entries = timeline(board.show())
    assert [e["id"] for e in entries] == ["early-found", "late-seen"]
    first, second = entries
    assert first["via_request"] == "req-1"
    assert first["coverage"] == {
        "time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"],
        "filters": {"level": "error"},
        "targets": ["auth-1"],
        "completed": False,
    }
    assert second["via_request"] is None and second["coverage"] is None
