"""Rule 4 of docs/rules-of-evidence.md: a verification is a decision on a version, like a review.

A verification records the version it was decided on (its ``based_on_workspace_version``, else the
contribution's ``expected_version``, else the version before it lands); a material change to the hypothesis
after that version leaves a confirmation ``confirmed_before_challenge``, needing a new verification (reducer
workspace-rules-v4). Each case is played through the command line and over HTTP.
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

CHECKED = [
    opening(),  # 1
    step("specialist-1", "specialist", 1, observation("o-fail", -3)),  # 2
    step(
        "planner-1",
        "planner",
        2,
        {
            "type": "hypothesis",
            "id": "h-chain",
            "statement": "the rotation broke the chain",
            "supporting_evidence": ["o-fail"],
        },
        {"type": "work_request", "request_id": "chk-1", "kind": "certificate_check", "target": "the chain"},
    ),  # 3
    step("verifier-1", "verifier", 3, {"type": "work_claim", "request_id": "chk-1", "lease_s": 300}),  # 4
    step(
        "verifier-1",
        "verifier",
        4,
        {
            "type": "work_result",
            "request_id": "chk-1",
            "generation": 1,
            "status": "completed",
            "summary": "the chain differs",
            "query": FULL,
        },
    ),  # 5
]


def challenge(principal: str, role: str, minutes: float, obs_id: str) -> dict[str, Any]:
    link = {"type": "link", "observation": obs_id, "hypothesis": "h-chain", "relation": "challenges"}
    if role == "specialist":
        return step(principal, role, minutes, observation(obs_id, -10, statement="failures before the change"), link)
    return step(principal, role, minutes, link)


def confirm(minutes: float, **fields: Any) -> dict[str, Any]:
    envelope = {"expected_version": fields.pop("expected_version")} if "expected_version" in fields else {}
    item = {"type": "verification", "claim": "h-chain", "check": "chk-1", "result": "confirmed", **fields}
    return step("verifier-2", "verifier", minutes, item, **envelope)


CASES: dict[str, tuple[list[dict[str, Any]], str, int]] = {
    # the example: decided on version 5, landing after the version-6 challenge
    "decided-before-a-challenge": (
        [*CHECKED, challenge("specialist-2", "specialist", 5, "o-before"), confirm(6, based_on_workspace_version=5)],
        "confirmed_before_challenge",
        5,
    ),
    # decided on the head (expected_version), then a planner's challenge of an earlier observation
    "challenged-after-the-confirmation": (
        [*CHECKED, confirm(5, expected_version=5), challenge("planner-2", "planner", 6, "o-fail")],
        "confirmed_before_challenge",
        5,
    ),
    # a new verification decided after the challenge confirms again
    "verified-again": (
        [
            *CHECKED,
            confirm(5, expected_version=5),
            challenge("specialist-2", "specialist", 6, "o-before"),
            confirm(7, based_on_workspace_version=7),
        ],
        "confirmed",
        7,
    ),
    # no version stated: decided on what it could read, the challenge before it included
    "no-version-stated": (
        [*CHECKED, challenge("specialist-2", "specialist", 5, "o-before"), confirm(6)],
        "confirmed",
        6,
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
def test_a_confirmation_holds_only_for_the_version_it_was_decided_on(door: Door, case: str) -> None:
    steps, status, decided = CASES[case]
    projection = door(f"ws-{case}", steps)
    [found] = [h for h in projection["hypotheses"] if h["id"] == "h-chain"]
    assert (found["status"], found["verification_decided_on_version"]) == (status, decided)
    assert [h["status"] for h in projection["selected_items"]["hypotheses"]] == [status]
