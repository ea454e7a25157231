"""Replay from a recorded incident file: deterministic, offline, equal to show, and clear beyond the head."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.logs import configure_logging
from caseboard.replay.rebuild import replay_file, replay_ledger
from caseboard.replay.transfer import export
from tests.conftest import play, scenario_lines, stale_install

ROOT = Path(__file__).resolve().parents[2]
INCIDENT = ROOT / "corpus" / "incident-042.jsonl"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


def test_two_replays_of_the_same_file_are_identical() -> None:
    assert json.dumps(replay_file(INCIDENT, 19)) == json.dumps(replay_file(INCIDENT, 19))


def test_replay_to_18_shows_support_and_19_shows_the_challenge() -> None:
    def statuses(version: int) -> list[str]:
        return [h["status"] for h in replay_file(INCIDENT, version)["selected_items"]["hypotheses"]]

    assert statuses(18) == ["supported"]
    assert statuses(19) == ["challenged"]
    v20 = replay_file(INCIDENT, 20)
    assert [(p["id"], p["status"]) for p in v20["proposals"]] == [("proposal-008", "requires_revalidation")]


def test_replay_of_a_played_ledger_equals_show_at_every_version(tmp_path: Path) -> None:
    configure_logging("warning", "json", io.StringIO())  # an earlier CLI test may have logged to a closed stream
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger, trust_timestamps=True)
    play(coordinator, scenario_lines()[:19])
    coordinator.submit(parse_contribution(stale_install()))
    play(coordinator, scenario_lines()[19:])
    out = tmp_path / "incident.jsonl"
    with out.open("w") as handle:
        export(ledger, "incident-042", handle)
    for version in range(1, 21):
        shown = coordinator.workspaces.show("incident-042", version)
        assert replay_ledger(ledger, "incident-042", version) == shown
        assert replay_file(out, version) == shown
        assert replay_file(out, version, "workspace-rules-v2") == coordinator.workspaces.show(
            "incident-042", version, "workspace-rules-v2"
        )


def test_cli_replay_of_a_file_prints_the_same_bytes_as_show_of_the_imported_ledger(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOARD_DATABASE_URL", f"sqlite:///{tmp_path}/ledger.db")
    monkeypatch.setenv("CASEBOARD_LOG_LEVEL", "warning")
    assert main(["import", str(INCIDENT)]) == 0
    capsys.readouterr()
    for fmt in ("json", "yaml"):
        for version in (1, 18, 20):
            assert main(["replay", str(INCIDENT), "--to", str(version), "--format", fmt]) == 0
            replayed = capsys.readouterr().out
            assert main(["show", "incident-042", "--at-version", str(version), "--format", fmt]) == 0
            assert replayed == capsys.readouterr().out
            assert main(["replay", "incident-042", "--to", str(version), "--format", fmt]) == 0
            assert replayed == capsys.readouterr().out


def test_replay_beyond_the_head_is_one_clear_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(INCIDENT), "--to", "21"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "caseboard: workspace 'incident-042' has versions 1..20; version 21 does not exist\n"


def test_replay_of_version_0_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replay", str(INCIDENT), "--to", "0"]) == 2
    assert "versions start at 1" in capsys.readouterr().err


def test_replay_of_a_file_with_a_gap_names_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = INCIDENT.read_text().splitlines()
    gapped = tmp_path / "gap.jsonl"
    gapped.write_text("\n".join(lines[:4] + lines[5:]) + "\n")
    assert main(["replay", str(gapped), "--to", "10"]) == 1  # a broken chain, as verify reports it
    assert "not intact at version 5 (missing)" in capsys.readouterr().err
    assert main(["replay", str(gapped), "--to", "10", "--no-verify"]) == 2
    assert "version 6 of 'incident-042' cannot follow version 4" in capsys.readouterr().err


OFFLINE = textwrap.dedent("""
    import socket, sys

    def refuse(*args, **kwargs):
        raise OSError("network refused in this test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = refuse
    from caseboard.cli.main import main
    sys.exit(main(sys.argv[1:]))
""")


def test_replay_of_a_file_runs_with_every_socket_refused(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CASEBOARD_DATABASE_URL": "postgresql://nobody@203.0.113.1:5432/none",
        "CASEBOARD_LOG_LEVEL": "warning",
    }
    offline = subprocess.run(
        [sys.executable, "-c", OFFLINE, "replay", str(INCIDENT), "--to", "19", "--format", "yaml"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert offline.returncode == 0, offline.stderr
    assert "status: challenged" in offline.stdout
    assert list(tmp_path.iterdir()) == []  # no ledger file was created either
    probe = subprocess.run(
        [sys.executable, "-c", OFFLINE, "replay", "incident-042"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert probe.returncode == 2  # naming a workspace needs the (refused) network: the patch is effective
