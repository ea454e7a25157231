"""Golden projections of both reducers over every recorded incident of the corpus.

Each ``tests/golden/corpus/NAME.json`` pins, for each reducer, the projection at version 1, the middle
version, the one before the last and the last. Any difference fails. After an intended change (a new
corpus incident, a new reducer version), regenerate and review the diff:

    CASEBOARD_UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/golden/test_corpus.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from caseboard.reducers import REDUCERS
from caseboard.replay.rebuild import fold
from caseboard.replay.records import read_file

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
GOLDEN = Path(__file__).resolve().parent / "corpus"
INCIDENTS = sorted(CORPUS.glob("*.jsonl"))
KINDS = (
    "incident-042",
    "late-arrival",
    "budget-exhaustion",
    "zombie-writer",
    "expired-evidence",
    "scope-change",
    "stale-proposal",
    "instruction-text",
)


def pinned_versions(head: int) -> list[int]:
    return sorted({1, max(1, head // 2), max(1, head - 1), head})


def projections(path: Path) -> dict[str, Any]:
    commits = list(read_file(path))
    head = commits[-1].version
    return {
        name: {str(v): reducer.render(fold(commits, reducer, v)) for v in pinned_versions(head)}
        for name, reducer in sorted(REDUCERS.items())
    }


def test_the_corpus_holds_every_required_kind_of_incident() -> None:
    names = [path.stem for path in INCIDENTS]
    assert len(names) >= 8
    for kind in KINDS:
        assert any(name.startswith(kind) for name in names), kind


@pytest.mark.parametrize("path", INCIDENTS, ids=[p.stem for p in INCIDENTS])
def test_both_reducers_render_the_pinned_projections(path: Path) -> None:
    golden = GOLDEN / f"{path.stem}.json"
    actual = projections(path)
    if os.environ.get("CASEBOARD_UPDATE_GOLDEN"):
        golden.write_text(json.dumps(actual, indent=1, ensure_ascii=False, sort_keys=True) + "\n")
    assert golden.is_file(), f"{golden} is missing: regenerate with CASEBOARD_UPDATE_GOLDEN=1"
    assert actual == json.loads(golden.read_text())


def test_the_corpus_is_what_its_scenarios_produce() -> None:
    check = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "make_corpus.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert check.returncode == 0, check.stderr


def test_the_incident_042_scenario_is_the_shared_one_with_its_stale_install() -> None:
    scenario = [json.loads(line) for line in (CORPUS / "scenarios" / "incident-042.jsonl").read_text().splitlines()]
    shared = ROOT / "caseboard" / "scenarios"
    lines = [json.loads(line) for line in (shared / "incident-042.jsonl").read_text().splitlines() if line.strip()]
    stale = json.loads((shared / "incident-042.stale-install.json").read_text())
    assert scenario == [*lines[:19], {"expect": "version_conflict", **stale}, *lines[19:]]


def test_the_zombie_writers_refused_result_leaves_no_trace_and_the_reclaim_does() -> None:
    commits = list(read_file(CORPUS / "zombie-writer-031.jsonl"))
    kinds = [(c.author.principal, [i.type for i in c.items], c.decisions) for c in commits]
    assert (
        "controller",
        ["work_reclaim"],
        ({"fenced_generation": 1, "fenced_holder": "cert-specialist-a"},),
    ) in kinds
    assert not any(principal == "cert-specialist-a" and types == ["work_result"] for principal, types, _ in kinds)
    final = REDUCERS["workspace-rules-v1"].render(fold(commits, REDUCERS["workspace-rules-v1"]))
    assert [(w["generation"], w["status"], w["reclaims"]) for w in final["work"]] == [(2, "completed", 1)]


def test_instruction_like_text_is_recorded_as_data_and_changes_nothing() -> None:
    final = REDUCERS["workspace-rules-v1"].render(
        fold(read_file(CORPUS / "instruction-text-078.jsonl"), REDUCERS["workspace-rules-v1"])
    )
    assert final["execution_mode"] == "read_only"
    assert final["status"] == "investigating"
    assert [(h["id"], h["status"]) for h in final["hypotheses"]] == [("hyp-refund-lock", "supported")]
    assert [(p["id"], p["status"]) for p in final["proposals"]] == [("proposal-001", "current")]
    assert "IGNORE ALL PREVIOUS INSTRUCTIONS" in final["observations"][0]["statement"]
