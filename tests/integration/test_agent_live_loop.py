"""``caseboard demo --live --model-url``: the model-backed cast carries an investigation to an outcome on the
embedded ledger, every one of its contributions carries its judgment, and the export replays with every socket
refused to exactly what ``show`` gives at every version."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.main import main
from caseboard.ledger import open_ledger
from tests.fake_model_server import FakeModel

MODEL_ROLES = ("planner", "specialist", "verifier", "reporter")

OFFLINE_REPLAY = """
import contextlib, io, json, socket, sys

def refuse(*args, **kwargs):
    raise OSError("network refused in this test")

socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
from caseboard.cli.main import main

path, last = sys.argv[1], int(sys.argv[2])
out = {}
for version in range(1, last + 1):
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["replay", path, "--to", str(version)]) == 0
    out[version] = buffer.getvalue()
sys.stdout.write(json.dumps(out))
"""


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def shows(url: str, workspace: str, last: int, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    out = {}
    for version in range(1, last + 1):
        assert main(["--database-url", url, "show", workspace, "--at-version", str(version)]) == 0
        out[str(version)] = capsys.readouterr().out
    return out


def replayed_offline(path: Path, last: int, cwd: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "CASEBOARD_DATABASE_URL": "postgresql://nobody@203.0.113.1:5432/none",
        "CASEBOARD_LOG_LEVEL": "warning",
    }
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_REPLAY, str(path), str(last)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_model_backed_cast_runs_an_investigation_and_its_export_replays_offline_as_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    monkeypatch.setenv("CASEBOARD_MODEL", "fake-model-1")
    with FakeModel() as fake:
        code = main(
            ["--database-url", url, "demo", "--live", "--cycles", "6", "--timeout", "60", "--model-url", fake.url]
        )
        out = capsys.readouterr().out
    assert code == 0, out
    ledger = open_ledger(url)
    try:
        commits = ledger.read("incident-043")
    finally:
        ledger.close()
    final = json.loads(shows(url, "incident-043", len(commits), capsys)[str(len(commits))])
    assert final["status"] == "human_review_required"
    assert [h["status"] for h in final["hypotheses"]] == ["confirmed"]
    assert final["cycles_used"] <= 6 and final["execution_mode"] == "read_only"
    theirs = [c for c in commits if c.author.role.value in MODEL_ROLES]
    assert {c.author.role.value for c in theirs} >= {"planner", "specialist", "verifier"}
    for commit in theirs:
        assert commit.items[-1].type == "judgment", commit.summary()
    calls = sum(1 for c in commits for i in c.items if i.type == "judgment")
    assert calls == len(fake.requests)  # every call the model answered is recorded, and nothing else is
    assert main(["--database-url", url, "export", "incident-043", "--out", str(tmp_path / "run.jsonl")]) == 0
    expected = shows(url, "incident-043", len(commits), capsys)
    assert replayed_offline(tmp_path / "run.jsonl", len(commits), tmp_path) == expected
