"""Rule 11 of docs/rules-of-evidence.md: restating the scope is not a change.

A ``constraints`` item that states the goal, scope and limits the workspace already has is bookkeeping: it
flags no proposal (reducer workspace-rules-v4). One that changes any of them still does. Each case is played
through the command line and over HTTP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import open_item
from tests.e2e.evidence_doors import observation, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server

OPEN = open_item()
SAME = {"goal": OPEN["goal"], "scope": OPEN["scope"], "runtime_limits": OPEN["runtime_limits"]}


def constraints(minutes: float, **fields: Any) -> dict[str, Any]:
    return step("operator-1", "operator", minutes, {"type": "constraints", **fields})


def planned(*, accepted: bool) -> list[dict[str, Any]]:
    """A plan on a supported hypothesis, accepted by the operator or not."""
    steps = [
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
                "summary": "roll back the rotation",
                "based_on_workspace_version": 2,
                "depends_on": ["h-cert"],
            },
        ),
    ]
    if accepted:
        steps.append(
            step(
                "operator-1",
                "operator",
                3,
                {"type": "review", "proposal": "p-rollback", "decision": "accepted"},
                expected_version=3,
            )
        )
    return steps


CASES: dict[str, tuple[list[dict[str, Any]], str]] = {
    # the example: the same scope, goal and limits, restated in full
    "restated-in-full": ([*planned(accepted=False), constraints(5, **SAME)], "current"),
    # an accepted plan, and the scope alone restated
    "scope-restated-after-acceptance": ([*planned(accepted=True), constraints(5, scope=OPEN["scope"])], "accepted"),
    # two restatements, the limits first (one of them), then the goal
    "limit-then-goal": (
        [
            *planned(accepted=False),
            constraints(4, runtime_limits={"max_proposals": 10}),
            constraints(5, goal=OPEN["goal"]),
        ],
        "current",
    ),
    # the control: one limit changes, which is a change of constraints
    "a-limit-changes": (
        [*planned(accepted=True), constraints(5, **{**SAME, "runtime_limits": {"max_proposals": 11}})],
        "requires_revalidation",
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
def test_a_constraints_item_flags_plans_only_when_it_changes_something(door: Door, case: str) -> None:
    steps, status = CASES[case]
    projection = door(f"ws-{case}", steps)
    assert [(p["id"], p["status"]) for p in projection["proposals"]] == [("p-rollback", status)]
    assert projection["goal"] == OPEN["goal"] and projection["scope"] == OPEN["scope"]
