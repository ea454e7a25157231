"""``caseboard evaluate`` from the command line: budgets, arms, and a user's mistakes as one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus" / "evaluation"


def caseboard(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env["CASEBOARD_LOG_LEVEL"] = "warning"
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def small_corpus(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "corpus" / "incidents"
    folder.mkdir(parents=True)
    for name in names:
        shutil.copy(CORPUS / "incidents" / f"{name}.json", folder)
    return folder.parent


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget", "cycles=0"), "expected cycles=N,tokens=M"),
        (("--budget", "cycles=1000001"), "cycles is at most 1,000,000"),  # before: "unknown workspace 'eval-001-...'"
        (("--participants", "no-such-cast", "--arm", "workspace"), "unknown participant 'no-such-cast'"),
        (("--participants", "scripted-x"), "the single-agent arm runs scripted participants only"),
        (("--price-per-mtok", "-1"), "--price-per-mtok -1.0: a price is a number, 0 or more"),
        (("--price-per-mtok", "nan"), "--price-per-mtok nan: a price is"),  # before: NaN in evaluation.json
    ],
)
def test_a_users_mistake_is_one_line_and_exit_status_2(tmp_path: Path, args: tuple[str, ...], message: str) -> None:
    done = caseboard(tmp_path, "evaluate", str(CORPUS), *args, "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()


def test_an_out_that_cannot_be_written_is_one_line_before_any_run(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    done = caseboard(tmp_path, "evaluate", str(CORPUS), "--out", str(tmp_path / "a-file"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == f"caseboard: cannot write {tmp_path / 'a-file'}: Not a directory\n"


def test_a_directory_that_is_not_a_corpus_is_one_line(tmp_path: Path) -> None:
    done = caseboard(tmp_path, "evaluate", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    assert (done.returncode, done.stderr.count("\n")) == (2, 1)
    assert "no such corpus directory" in done.stderr


def test_the_cycle_budget_holds_in_both_arms_and_failures_stay_in_the_totals(tmp_path: Path) -> None:
    corpus = small_corpus(tmp_path, "eval-001-supported", "eval-004-late-counterevidence")
    done = caseboard(tmp_path, "evaluate", str(corpus), "--budget", "cycles=2", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "out" / "evaluation.json").read_text())
    assert result["budget"] == {"cycles": 2, "tokens": None}
    assert {(r["arm"], r["outcome"]) for r in result["runs"]} == {
        ("workspace", "budget_exhausted"),
        ("single-agent", "budget_exhausted"),
    }
    assert all(r["cycles"] <= 2 for r in result["runs"])
    for arm in ("workspace", "single-agent"):
        assert result["totals"][arm]["unsuccessful"] == 2
        assert result["totals"][arm]["cost"] > 0
        assert result["totals"][arm]["cost_per_supported_outcome"] is None


def test_one_arm_alone_runs_only_that_arm_with_the_token_budget(tmp_path: Path) -> None:
    corpus = small_corpus(tmp_path, "eval-001-supported")
    done = caseboard(
        tmp_path, "evaluate", str(corpus), "--arm", "workspace", "--budget", "tokens=4000", "--out", str(tmp_path / "o")
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "o" / "evaluation.json").read_text())
    assert result["arms"] == ["workspace"] and list(result["totals"]) == ["workspace"]
    (run,) = result["runs"]
    unlimited = caseboard(tmp_path, "evaluate", str(corpus), "--arm", "workspace", "--out", str(tmp_path / "u"))
    assert unlimited.returncode == 0, unlimited.stderr
    (free,) = json.loads((tmp_path / "u" / "evaluation.json").read_text())["runs"]
    assert free["tokens"] > 4000 and free["correct"]
    assert run["outcome"] == "budget_exhausted" and run["tokens"] < free["tokens"]
    assert sorted(p.name for p in (tmp_path / "o" / "runs").iterdir()) == ["eval-001-supported.workspace.jsonl"]
