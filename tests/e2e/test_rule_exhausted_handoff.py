"""Rule 10 of docs/rules-of-evidence.md, its projection side: once the budget is exhausted, the workspace names
every check that failed, did not complete or timed out, with what it covered, and every question still open
(``status_detail.unresolved``, reducer workspace-rules-v4), whatever the handoff's text omits. Each case is
played through the command line and over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.evidence_doors import at, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server

PART = {
    "time_range": [at(-30), at(0)],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-1"],
    "completed": False,
}


def request(request_id: str, kind: str = "certificate_check") -> dict[str, Any]:
    return {"type": "work_request", "request_id": request_id, "kind": kind, "target": "payments-api-1..3"}


def claimed(request_id: str, minutes: float, who: str = "specialist-1") -> dict[str, Any]:
    return step(who, "specialist", minutes, {"type": "work_claim", "request_id": request_id, "lease_s": 300})


def reported(request_id: str, minutes: float, status: str, summary: str, **fields: Any) -> dict[str, Any]:
    item = {"type": "work_result", "request_id": request_id, "generation": 1, "status": status, "summary": summary}
    return step("specialist-1", "specialist", minutes, {**item, **fields})


def exhausted(minutes: float, role: str = "controller") -> dict[str, Any]:
    who = "controller" if role == "controller" else "operator-1"
    status = {"type": "status", "to": "budget_exhausted", "reason": "cycles ran out", "handoff": "cycles ran out"}
    return step(who, role, minutes, status)


QUESTION = {"type": "question", "id": "q-chain", "text": "does the chain differ on instance 3?"}
TIMED_OUT = "timed out after 300 s; 1 of 3 instances read"

CASES: dict[str, tuple[list[dict[str, Any]], list[tuple[str, str, str | None, bool]], list[str]]] = {
    # the example: a check that failed ("timed out ...") and its question, omitted by the handoff
    "failed-check-and-its-question": (
        [
            opening(),
            step("planner-1", "planner", 1, request("chk-a"), QUESTION),
            claimed("chk-a", 2),
            reported("chk-a", 3, "failed", TIMED_OUT, query=PART),
            exhausted(4),
        ],
        [("chk-a", "failed", TIMED_OUT, True)],
        ["q-chain"],
    ),
    # a lease the controller reclaimed (no result since) beside a query that did not complete; the operator
    # exhausts the budget
    "reclaimed-and-incomplete": (
        [
            opening(),
            step("planner-1", "planner", 1, request("chk-a"), request("chk-b", "log_query")),
            claimed("chk-a", 2),
            claimed("chk-b", 2, "specialist-2"),
            step(
                "controller", "controller", 9, {"type": "work_reclaim", "request_id": "chk-b", "reason": "lease lapsed"}
            ),
            reported("chk-a", 10, "completed", "read one instance", query=PART),
            exhausted(11, "operator"),
        ],
        [("chk-a", "incomplete", "read one instance", True), ("chk-b", "timed_out", "lease lapsed", False)],
        [],
    ),
    # an answered question and a completed check are not unresolved; the open one is
    "answered-is-settled": (
        [
            opening(),
            step(
                "planner-1",
                "planner",
                1,
                request("chk-a"),
                QUESTION,
                {"type": "question", "id": "q-other", "text": "other services?"},
            ),
            claimed("chk-a", 2),
            reported("chk-a", 3, "completed", "chains identical", query={**PART, "completed": True}),
            step(
                "planner-1",
                "planner",
                4,
                {"type": "answer", "question": "q-other", "text": "none", "evidence": ["chk-a"]},
            ),
            exhausted(5),
        ],
        [],
        ["q-chain"],
    ),
}


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


@pytest.mark.parametrize("case", list(CASES))
def test_an_exhausted_workspace_names_every_unsettled_check_and_open_question(door: Door, case: str) -> None:
    steps, checks, questions = CASES[case]
    projection = door(f"ws-{case}", steps)
    assert projection["status"] == "budget_exhausted"
    assert projection["status_detail"]["handoff"] == "cycles ran out"
    unresolved = projection["status_detail"]["unresolved"]
    assert [(c["request_id"], c["status"], c["summary"], c["coverage"] is not None) for c in unresolved["checks"]] == (
        checks
    )
    for shown in unresolved["checks"]:
        if shown["coverage"] is not None:
            assert shown["coverage"]["targets"] == ["payments-api-1"]
    assert [q["id"] for q in unresolved["open_questions"]] == questions
