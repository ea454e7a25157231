"""A commit is at most ``MAX_COMMIT_BYTES`` stored (ADR 0193): the coordinator refuses a longer one, and a reader of
a recorded incident does not read a longer line. A hostile file with a line of tens of megabytes is reported at
that version by ``verify`` and refused by ``import``, in one line, without the line being held in memory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, decide, parse_contribution
from caseboard.domain.commit import MAX_COMMIT_BYTES
from caseboard.ledger import open_ledger
from tests.conftest import caseboard_measured, play, scenario_lines

IMPORTED = "sqlite:///imported.db"
"""The ledger the commands open, in their working folder."""
HUGE = 48 << 20
"""The hostile line: three times a commit's limit (read whole, it costs about five times its size)."""


@pytest.fixture
def hostile_export(tmp_path: Path) -> Path:
    """incident-042's first five commits exported, with a line of ``HUGE`` bytes put in as line 2."""
    ledger = open_ledger(f"sqlite:///{tmp_path}/ledger.db")
    try:
        assert all(outcome["ok"] for outcome in play(Coordinator(ledger, trust_timestamps=True), scenario_lines()[:5]))
        lines = [commit.stored_json for commit in ledger.read("incident-042")]
    finally:
        ledger.close()
    path = tmp_path / "hostile.jsonl"
    with path.open("wb") as out:
        out.write(lines[0] + b"\n" + b'{"pad":"' + b"x" * HUGE + b'"}\n' + b"\n".join(lines[1:]) + b"\n")
    return path


def test_verify_reports_the_line_at_its_version_without_reading_it(hostile_export: Path) -> None:
    returncode, stdout, stderr, peak_kb = caseboard_measured(
        "verify", str(hostile_export), url=IMPORTED, cwd=hostile_export.parent
    )
    assert returncode == 1 and "Traceback" not in stderr, stderr
    assert stdout == (
        f"{hostile_export}: NOT INTACT at version 2 (unreadable): {hostile_export}:2: not a readable commit "
        f"(longer than {MAX_COMMIT_BYTES} bytes, more than any commit; not read)\n"
    )
    assert peak_kb < 160 * 1024, f"peak memory {peak_kb} KB for a line of {HUGE} bytes"


def test_import_refuses_the_file_in_one_line_without_reading_the_line(hostile_export: Path) -> None:
    returncode, stdout, stderr, peak_kb = caseboard_measured(
        "import", str(hostile_export), url=IMPORTED, cwd=hostile_export.parent
    )
    assert returncode == 2 and stdout == "" and len(stderr.splitlines()) == 1, stderr
    assert "version 2 is unreadable" in stderr and "nothing was imported" in stderr
    assert peak_kb < 160 * 1024, f"peak memory {peak_kb} KB for a line of {HUGE} bytes"


def test_the_coordinator_refuses_a_commit_longer_than_a_reader_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the body limit no contribution comes near the limit, so the limit is lowered to reach it."""
    ledger = open_ledger(f"sqlite:///{tmp_path}/ledger.db")
    try:
        coordinator = Coordinator(ledger, trust_timestamps=True)
        assert play(coordinator, scenario_lines()[:1])[0]["ok"]
        observation: dict[str, Any] = json.loads(scenario_lines()[1])
        monkeypatch.setattr(decide, "MAX_COMMIT_BYTES", len(scenario_lines()[1]) // 2)
        refused = coordinator.submit(parse_contribution(json.dumps(observation)))
        assert (refused["ok"], refused["reason"], refused["field"]) == (False, "invalid", "items")
        assert (
            "the commit would be" in refused["message"]
            and "large material lives behind evidence_ref" in refused["message"]
        )
        assert ledger.head("incident-042") == 1  # nothing appended
        monkeypatch.undo()
        assert coordinator.submit(parse_contribution(json.dumps(observation)))["workspace_version"] == 2
    finally:
        ledger.close()
