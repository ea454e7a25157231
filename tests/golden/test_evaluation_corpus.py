"""The golden evaluation: ``caseboard evaluate corpus/evaluation --arm workspace --arm single-agent``.

``tests/golden/evaluation/corpus.json`` pins the whole result (every run's figures, the totals, the limits).
The pinned file was written by an earlier run, so equality is also the proof that runs are deterministic.
After an intended change (a controller rule, a scenario, a figure), regenerate and review the diff:

    CASEBOARD_UPDATE_GOLDEN=1 .venv/bin/pytest -q tests/golden/test_evaluation_corpus.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from caseboard.replay.audit import checked_file_commits

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "evaluation" / "corpus.json"


def evaluate(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env["CASEBOARD_LOG_LEVEL"] = "warning"
    command = [sys.executable, "-m", "caseboard", "evaluate", str(ROOT / "corpus" / "evaluation"), *extra]
    return subprocess.run(
        [*command, "--out", str(out)], cwd=out.parent, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    out = tmp_path_factory.mktemp("evaluation") / "out"
    done = evaluate(out, "--arm", "workspace", "--arm", "single-agent")
    assert done.returncode == 0, done.stderr
    return out, json.loads((out / "evaluation.json").read_text()), done.stdout


def test_the_evaluation_of_the_corpus_is_the_pinned_one(evaluated: tuple[Path, dict[str, Any], str]) -> None:
    out, result, _ = evaluated
    if os.environ.get("CASEBOARD_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text((out / "evaluation.json").read_text())
    assert GOLDEN.is_file(), f"{GOLDEN} is missing: regenerate with CASEBOARD_UPDATE_GOLDEN=1"
    assert (out / "evaluation.json").read_text() == GOLDEN.read_text()
    assert result["corpus"]["incidents"] >= 20
    assert len(result["runs"]) == 2 * result["corpus"]["incidents"]


def test_every_workspace_run_is_a_recorded_incident_that_verifies_and_replays_to_the_status_scored(
    evaluated: tuple[Path, dict[str, Any], str],
) -> None:
    out, result, _ = evaluated
    for run in result["runs"]:
        if run["arm"] != "workspace":
            continue
        commits = list(checked_file_commits(out / run["record"]))  # ChainBroken on a broken chain
        statuses = [i.to.value for c in commits for i in c.items if i.type == "status"]
        assert (statuses[-1] if statuses else "investigating") == run["status"], run["incident"]


def test_every_single_agent_run_is_recorded_step_by_step_up_to_its_end(
    evaluated: tuple[Path, dict[str, Any], str],
) -> None:
    out, result, _ = evaluated
    for run in result["runs"]:
        if run["arm"] != "single-agent":
            continue
        steps = [json.loads(line) for line in (out / run["record"]).read_text().splitlines()]
        assert steps[-1]["end"] == run["status"]
        calls = sum(len(step.get("calls", [])) for step in steps)
        assert calls == run["tool_calls"], run["incident"]


def test_the_report_has_its_table_its_plots_and_its_limits(evaluated: tuple[Path, dict[str, Any], str]) -> None:
    out, result, stdout = evaluated
    page = (out / "report.html").read_text()
    assert (out / "report.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert "report.png" in page
    assert "scripted stand-ins" in page and "does not show" in page
    for run in result["runs"]:
        assert run["incident"] in page
    assert stdout.startswith("| figure | workspace | single-agent |")
    assert f"| runs | {result['corpus']['incidents']} | {result['corpus']['incidents']} |" in stdout
