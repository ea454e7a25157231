"""Golden health reports over every recorded incident of the corpus (docs/health.md).

Each ``tests/golden/health/NAME.json`` pins the incident's health report as of every version. Any difference
fails. After an intended change (a new incident, a new figure), regenerate and review the diff:

    CASEBOARD_UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/golden/test_health_corpus.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from caseboard.projections.health import NOT_INSTRUMENTED, health
from caseboard.replay.records import read_file

ROOT = Path(__file__).resolve().parents[2]
INCIDENTS = sorted((ROOT / "corpus").glob("*.jsonl"))
GOLDEN = Path(__file__).resolve().parent / "health"


def reports(path: Path) -> dict[str, Any]:
    commits = list(read_file(path))
    return {str(version): health(commits, version) for version in range(1, commits[-1].version + 1)}


@pytest.mark.parametrize("path", INCIDENTS, ids=[p.stem for p in INCIDENTS])
def test_every_incident_has_its_pinned_health_report_at_every_version(path: Path) -> None:
    golden = GOLDEN / f"{path.stem}.json"
    actual = reports(path)
    if os.environ.get("CASEBOARD_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(json.dumps(actual, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    assert golden.is_file(), f"{golden} is missing: regenerate with CASEBOARD_UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text())


def head(name: str) -> dict[str, Any]:
    return health(read_file(ROOT / "corpus" / f"{name}.jsonl"))


def at(name: str, version: int) -> dict[str, Any]:
    return health(read_file(ROOT / "corpus" / f"{name}.jsonl"), version)


def test_incident_042s_proposal_recorded_already_stale_is_an_invalidation_by_contradictory_evidence() -> None:
    events = head("incident-042")["invalidations"]["events"]
    assert events == [
        {"proposal": "proposal-008", "version": 20, "change": "contradictory_evidence", "was": "recorded_stale"}
    ]


def test_expired_evidence_under_proposals_is_stale_evidence_in_use_and_two_invalidations_by_expiry() -> None:
    figures = head("expired-evidence-044")
    assert figures["invalidations"]["by_change"]["evidence_expired"] == 2
    assert [o["observation"] for o in figures["stale_evidence_in_use"]["observations"]] == [
        "obs-no-client-change",
        "obs-token-health",
    ]
    assert at("expired-evidence-044", 7)["stale_evidence_in_use"]["total"] == 0  # before the clock passed it


def test_the_exhausted_budget_is_an_outcome_and_the_reopen_resets_the_cycles_used() -> None:
    figures = head("budget-exhaustion-023")
    assert [o["outcome"] for o in figures["outcomes"]["reached"]] == ["budget_exhausted"]
    assert figures["outcomes"]["seconds_to_first"] == 150.0
    assert figures["cycles"]["reopens"] == 1
    assert figures["cycles"]["scheduled_since_open"] > figures["cycles"]["used"]


def test_the_scope_change_invalidates_by_changed_constraints_and_the_accepted_plan_stays_uncorrected() -> None:
    figures = head("scope-change-051")
    assert figures["invalidations"]["by_change"]["constraints_changed"] == 2
    assert figures["operator_corrections"]["accepted_then_revalidation"] == []


def test_the_stale_proposal_accepted_then_challenged_is_an_operator_correction() -> None:
    assert head("stale-proposal-066")["operator_corrections"]["accepted_then_revalidation"] == ["proposal-004"]


def test_the_zombie_writers_reclaimed_request_is_claimed_again_then_done() -> None:
    works = [at("zombie-writer-031", v)["outstanding_work"] for v in range(2, 7)]
    assert [(w["awaiting_result"], w["claimed"]) for w in works] == [(1, 0), (0, 1), (1, 0), (0, 1), (0, 0)]


@pytest.mark.parametrize("path", INCIDENTS, ids=[p.stem for p in INCIDENTS])
def test_refusals_and_duplicate_deliveries_are_never_reported_as_zero(path: Path) -> None:
    figures = health(read_file(path))
    assert figures["refusals_by_reason"] == NOT_INSTRUMENTED
    assert figures["duplicate_deliveries_absorbed"] == NOT_INSTRUMENTED
