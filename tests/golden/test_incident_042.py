"""incident-042 from the source document, played through the coordinator on every kind of ledger."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import EventsourcingLedger
from tests.conftest import PACKAGED_SCENARIOS, play, scenario_dir, scenario_lines, stale_install


def contains(actual: Any, expected: Any, path: str = "$") -> list[str]:
    """Every key of ``expected`` is in ``actual`` with exactly its value (lists equal, in order)."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected a mapping, got {actual!r}"]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                problems.append(f"{path}.{key}: missing")
            else:
                problems.extend(contains(actual[key], value, f"{path}.{key}"))
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        return [
            p for i, (a, e) in enumerate(zip(actual, expected, strict=True)) for p in contains(a, e, f"{path}[{i}]")
        ]
    return [] if actual == expected else [f"{path}: expected {expected!r}, got {actual!r}"]


@pytest.fixture
def played(ledger: EventsourcingLedger) -> tuple[Coordinator, dict[str, Any]]:
    coordinator = Coordinator(ledger, trust_timestamps=True)
    lines = scenario_lines()
    outcomes = play(coordinator, lines[:19])
    refused = coordinator.submit(parse_contribution(stale_install()))
    outcomes += play(coordinator, lines[19:])
    assert [o["workspace_version"] for o in outcomes] == list(range(1, 21)), outcomes
    return coordinator, refused


def test_version_20_has_every_key_of_the_source_document(played: tuple[Coordinator, dict[str, Any]]) -> None:
    coordinator, _ = played
    expected = yaml.safe_load((scenario_dir() / "incident-042.v20.yaml").read_text())
    projection = coordinator.workspaces.show("incident-042", 20, expected["reducer_version"])
    assert contains(projection, expected) == []
    current = coordinator.workspaces.show("incident-042", 20)  # the current reducer agrees on every other key
    assert contains(current, {**expected, "reducer_version": current["reducer_version"]}) == []
    assert projection["selected_items"]["hypotheses"][0].keys() == {
        "id",
        "statement",
        "status",
        "supporting_evidence",
        "challenging_evidence",
        "open_questions",
    }


def test_stale_install_is_refused_with_the_summary_of_version_19(played: tuple[Coordinator, dict[str, Any]]) -> None:
    coordinator, refused = played
    assert refused["ok"] is False
    assert refused["reason"] == "version_conflict"
    assert refused["current_version"] == 19
    assert [c["workspace_version"] for c in refused["since"]] == [19]
    assert (
        "link obs-failures-before-change challenges hyp-certificate-initiated-failure" in refused["since"][0]["items"]
    )
    assert coordinator.ledger.head("incident-042") == 20


def test_replay_to_18_shows_support_and_19_shows_the_challenge(played: tuple[Coordinator, dict[str, Any]]) -> None:
    coordinator, _ = played
    v18 = coordinator.workspaces.show("incident-042", 18)["selected_items"]["hypotheses"]
    v19 = coordinator.workspaces.show("incident-042", 19)["selected_items"]["hypotheses"]
    assert [(h["status"], h["challenging_evidence"]) for h in v18] == [("supported", [])]
    assert [(h["status"], h["challenging_evidence"]) for h in v19] == [("challenged", ["obs-failures-before-change"])]
    v17 = coordinator.workspaces.show("incident-042", 17)
    assert v17["selected_items"]["observations"] == ["obs-authentication-failures", "obs-certificate-change"]
    assert v17["selected_items"]["hypotheses"] == []


@pytest.mark.parametrize("basis", [19, 20])
def test_a_proposal_built_on_19_or_later_is_current(played: tuple[Coordinator, dict[str, Any]], basis: int) -> None:
    coordinator, _ = played
    outcome = coordinator.submit(
        parse_contribution(
            {
                "workspace_id": "incident-042",
                "author": {"principal": "planner-1", "role": "planner"},
                "items": [
                    {
                        "type": "proposal",
                        "id": "proposal-009",
                        "summary": "Compare certificate chains first",
                        "based_on_workspace_version": basis,
                        "depends_on": ["hyp-certificate-initiated-failure"],
                    }
                ],
            }
        )
    )
    assert outcome["ok"], outcome
    assert outcome["items"][0]["recorded_status"] == "current"
    statuses = {p["id"]: p["status"] for p in coordinator.workspaces.show("incident-042")["proposals"]}
    assert statuses == {"proposal-008": "requires_revalidation", "proposal-009": "current"}


def test_the_packaged_scenarios_are_the_shared_ones() -> None:
    for name in ("incident-042.jsonl", "incident-042.stale-install.json", "incident-042.v20.yaml"):
        assert (PACKAGED_SCENARIOS / name).read_text() == (scenario_dir() / name).read_text(), name
