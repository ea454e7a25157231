"""Rule 1 of docs/rules-of-evidence.md: an empty result proves nothing without its coverage (ADR 0132).

A verification settles its hypothesis, and an answer its question, only on a check whose query states a time
range covering the period the claim is about, at least one target, its filters and ``completed: true``.
Anything less is recorded and shown under ``coverage_insufficient`` with what is missing, and the claim stays
as it was. Each case is played through the command line and over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.evidence_doors import at, observation, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server

FULL = {
    "time_range": [at(-30), at(30)],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
    "completed": True,
}
"""A query that covers the evidence of the cases below (event times T0-3 min and T0)."""


def checked(query: dict[str, Any] | None, verifier: str = "verifier-1", role: str = "verifier") -> list[dict[str, Any]]:
    """A hypothesis resting on two observations, and a check of it, completed by ``verifier`` with ``query``
    and the summary of an empty result."""
    result: dict[str, Any] = {
        "type": "work_result",
        "request_id": "chk-1",
        "generation": 1,
        "status": "completed",
        "summary": "no chain mismatch found",
    }
    if query is not None:
        result["query"] = query
    return [
        opening(),
        step("specialist-1", "specialist", 1, observation("o-fail", -3), observation("o-rotated", 0)),
        step(
            "planner-1",
            "planner",
            2,
            {
                "type": "hypothesis",
                "id": "h-chain",
                "statement": "the rotation broke the chain",
                "supporting_evidence": ["o-fail", "o-rotated"],
            },
            {"type": "question", "id": "q-chain", "text": "does the chain differ?", "about": "h-chain"},
            {"type": "work_request", "request_id": "chk-1", "kind": "certificate_check", "target": "the chain"},
        ),
        step(verifier, role, 3, {"type": "work_claim", "request_id": "chk-1", "lease_s": 300}),
        step(verifier, role, 4, result),
    ]


def verified(result: str) -> dict[str, Any]:
    return step(
        "verifier-2", "verifier", 5, {"type": "verification", "claim": "h-chain", "check": "chk-1", "result": result}
    )


def answered(who: str = "specialist-2", role: str = "specialist") -> dict[str, Any]:
    return step(
        who,
        role,
        5,
        {"type": "answer", "question": "q-chain", "text": "no, the chain is the same", "evidence": ["chk-1"]},
    )


CASES: dict[str, tuple[list[dict[str, Any]], str, list[str]]] = {
    # the example: no query record, a verifier refutes
    "no-query-refutes": ([*checked(None), verified("refuted")], "supported", ["chk-1:query"]),
    # a query of the day before the incident, confirming
    "day-before-confirms": (
        [*checked({**FULL, "time_range": [at(-24 * 60 - 30), at(-24 * 60 + 30)]}), verified("confirmed")],
        "supported",
        ["chk-1:time_range"],
    ),
    # a range that ends before the last evidence, no filters, run by a specialist
    "short-range-no-filters": (
        [
            *checked({**FULL, "time_range": [at(-30), at(-1)], "filters": {}}, "specialist-3", "specialist"),
            verified("refuted"),
        ],
        "supported",
        ["chk-1:time_range", "chk-1:filters"],
    ),
}


def hypothesis(projection: dict[str, Any]) -> dict[str, Any]:
    return next(h for h in projection["hypotheses"] if h["id"] == "h-chain")


def question(projection: dict[str, Any]) -> dict[str, Any]:
    return next(q for q in projection["questions"] if q["id"] == "q-chain")


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
def test_a_verification_on_a_check_that_does_not_cover_the_claim_settles_nothing(door: Door, case: str) -> None:
    steps, status, missing = CASES[case]
    projection = door(f"ws-{case}", steps)
    found = hypothesis(projection)
    assert found["status"] == status
    assert found["verified_by"] is None
    [entry] = found["coverage_insufficient"]
    assert (entry["kind"], entry["checks"], entry["missing"]) == ("verification", ["chk-1"], missing)
    assert entry["period"] == [at(-3), at(0)]  # the event times of the evidence the hypothesis rests on
    assert projection["coverage_insufficient"] == [entry]


def test_an_answer_on_a_check_with_no_targets_leaves_its_question_open(door: Door) -> None:
    projection = door("ws-no-targets", [*checked({**FULL, "targets": []}), answered()])
    found = question(projection)
    assert found["status"] == "open"
    assert [a["text"] for a in found["unsupported_answers"]] == ["no, the chain is the same"]
    assert [(e["kind"], e["checks"], e["missing"]) for e in found["coverage_insufficient"]] == [
        ("answer", ["chk-1"], ["chk-1:targets"])
    ]
    assert projection["counters"]["open_questions"] == 1


def test_a_check_that_covers_the_claim_settles_it_at_every_door(door: Door) -> None:
    """The control: the same steps on a check with its full coverage refute the hypothesis and answer the
    question, and nothing is listed as insufficient."""
    projection = door("ws-covered", [*checked(FULL), verified("refuted"), answered("planner-1", "planner")])
    assert (hypothesis(projection)["status"], hypothesis(projection)["verified_by"]) == ("refuted", "verifier-2")
    assert question(projection)["status"] == "answered"
    assert projection["coverage_insufficient"] == []
