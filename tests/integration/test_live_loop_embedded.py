"""The whole loop in one process on the embedded ledger (SQLite, in-process broker)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()  # main() logged to a captured stream that pytest closes


def live(tmp_path: Path, capsys: pytest.CaptureFixture[str], cycles: int) -> tuple[int, str, dict[str, object]]:
    url = f"sqlite:///{tmp_path}/ledger.db"
    code = main(["--database-url", url, "demo", "--live", "--cycles", str(cycles), "--timeout", "40"])
    out = capsys.readouterr().out
    assert main(["--database-url", url, "show", "incident-043"]) == 0
    return code, out, json.loads(capsys.readouterr().out)


def test_scripted_participants_carry_an_investigation_to_the_operator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, projection = live(tmp_path, capsys, cycles=6)
    assert code == 0
    assert projection["status"] == "human_review_required"
    assert [h["status"] for h in projection["hypotheses"]] == ["confirmed"]
    assert projection["cycles_used"] <= 6
    assert '"duplicates_absorbed": 0' in out
    assert '"unprocessed": 0' in out


def test_a_run_that_exhausts_its_budget_ends_budget_exhausted_with_a_handoff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One cycle, the planner's: whatever order the specialists' reports and the controller's next decision take,
    # somebody is still wanted with no cycle left. With two, a slow controller lets the planner's second turn
    # and an unscheduled verification land within the budget, and the run can end in human review instead.
    code, out, projection = live(tmp_path, capsys, cycles=1)
    assert code == 0
    assert projection["status"] == "budget_exhausted"
    assert projection["cycles_used"] == 1
    assert projection["status_detail"]["handoff"].startswith("Unresolved: ")
    assert "Handoff: Unresolved: " in out


def test_a_ledger_that_holds_a_workspace_is_refused_and_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The live loop's controller and scripted cast act on every workspace they are told of, so on the recorded
    # demo's ledger they would append to incident-042 (a stalled status, claims, a verification).
    url = f"sqlite:///{tmp_path}/ledger.db"
    assert main(["--database-url", url, "demo"]) == 0
    capsys.readouterr()
    assert main(["--database-url", url, "log", "incident-042"]) == 0
    before = capsys.readouterr().out
    assert main(["--database-url", url, "demo", "--live", "--cycles", "1", "--timeout", "10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "holds incident-042" in err and "a ledger of its own" in err
    assert main(["--database-url", url, "log", "incident-042"]) == 0
    assert capsys.readouterr().out == before
    assert main(["--database-url", url, "show", "incident-043"]) == 2
