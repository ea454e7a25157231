"""Rule 8 of docs/rules-of-evidence.md: a clock that cannot be right is not verified (ADR 0133).

An event time later than its commit's time by more than the skew (5 s) is recorded ``unverified`` with the
flag ``event_time_in_future``; a challenge resting only on such observations changes no status (the order it
claims cannot be established); observations at the same instant are shown as ties. Each case is played
through the command line and over HTTP (reducer workspace-rules-v4).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.evidence_doors import T0, iso, observation, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server


def ahead(obs_id: str, commit_minutes: float, seconds: float) -> dict[str, Any]:
    """An observation claiming a verified event time ``seconds`` after the commit that records it."""
    item = observation(obs_id, commit_minutes, statement="failures before the change")
    return {**item, "event_time": iso(T0 + timedelta(minutes=commit_minutes, seconds=seconds))}


PLANNED = [
    opening(),
    step("specialist-1", "specialist", 1, observation("o-fail", -3)),
    step(
        "planner-1",
        "planner",
        2,
        {"type": "hypothesis", "id": "h-cert", "statement": "the rotation", "supporting_evidence": ["o-fail"]},
        {
            "type": "proposal",
            "id": "p-rollback",
            "summary": "roll back",
            "based_on_workspace_version": 2,
            "depends_on": ["h-cert"],
        },
    ),
]


def challenged_by(obs: dict[str, Any], minutes: float, who: str = "specialist-2") -> dict[str, Any]:
    link = {"type": "link", "observation": obs["id"], "hypothesis": "h-cert", "relation": "challenges"}
    return step(who, "specialist", minutes, obs, link)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield running


Door = Callable[[str, list[dict[str, Any]]], dict[str, Any]]


@pytest.fixture(params=["cli", "http"])
def door(request: pytest.FixtureRequest, tmp_path: Path) -> Door:
    if request.param == "cli":
        return lambda workspace, steps: via_cli(tmp_path, workspace, steps)
    running: RunningServer = request.getfixturevalue("server")
    return lambda workspace, steps: via_http(running, workspace, steps)


def observed(projection: dict[str, Any], obs_id: str) -> dict[str, Any]:
    return next(o for o in projection["observations"] if o["id"] == obs_id)


def statuses(projection: dict[str, Any]) -> dict[str, str]:
    return {e["id"]: e["status"] for e in (*projection["hypotheses"], *projection["proposals"])}


def test_a_challenge_from_an_event_time_82_minutes_ahead_is_unverified_and_changes_nothing(door: Door) -> None:
    projection = door("ws-ahead", [*PLANNED, challenged_by(ahead("o-late", 5, 82 * 60), 5)])
    late = observed(projection, "o-late")
    assert (late["event_time_quality"], late["event_time_flags"]) == ("unverified", ["event_time_in_future"])
    assert statuses(projection) == {"h-cert": "supported", "p-rollback": "current"}
    [hyp] = [h for h in projection["hypotheses"] if h["id"] == "h-cert"]
    assert hyp["status"] == "supported"
    assert projection["selected_items"]["hypotheses"][0]["challenging_evidence"] == ["o-late"]  # still in sight


def test_a_check_result_ahead_of_its_commit_challenging_a_new_hypothesis_leaves_it_unchallenged(door: Door) -> None:
    request = {"type": "work_request", "request_id": "q-1", "kind": "log_query", "target": "auth logs"}
    result = {
        "type": "work_result",
        "request_id": "q-1",
        "generation": 1,
        "status": "completed",
        "summary": "failures earlier",
        "observation": {k: v for k, v in ahead("o-q", 6, 10).items() if k != "type"},
    }
    steps = [
        *PLANNED,
        step("planner-1", "planner", 4, request),
        step("specialist-3", "specialist", 5, {"type": "work_claim", "request_id": "q-1", "lease_s": 300}),
        step("specialist-3", "specialist", 6, result),
        step(
            "planner-2",
            "planner",
            7,
            {"type": "hypothesis", "id": "h-other", "statement": "capacity", "challenging_evidence": ["o-q"]},
        ),
    ]
    projection = door("ws-result-ahead", steps)
    assert observed(projection, "o-q")["event_time_flags"] == ["event_time_in_future"]
    assert statuses(projection) == {"h-cert": "supported", "h-other": "proposed", "p-rollback": "current"}


def test_events_at_one_instant_are_ties_and_a_clock_within_the_skew_is_believed(door: Door) -> None:
    """Three observations at the same instant, arriving in three commits, each list the other two; one 4 s
    ahead of its commit keeps its verified time, and its challenge counts."""
    same = [observation(f"o-{n}", -1) for n in ("a", "b", "c")]
    steps = [
        *PLANNED,
        step("specialist-2", "specialist", 3, same[2]),
        step("specialist-3", "specialist", 4, same[0]),
        step("specialist-2", "specialist", 5, same[1]),
        challenged_by(ahead("o-near", 6, 4), 6),
    ]
    projection = door("ws-ties", steps)
    assert {o: observed(projection, o)["tied_with"] for o in ("o-a", "o-b", "o-c")} == {
        "o-a": ["o-c", "o-b"],
        "o-b": ["o-c", "o-a"],
        "o-c": ["o-a", "o-b"],
    }
    near = observed(projection, "o-near")
    assert (near["event_time_quality"], near["event_time_flags"], near["tied_with"]) == ("verified", [], [])
    assert statuses(projection) == {"h-cert": "challenged", "p-rollback": "requires_revalidation"}
