"""The two examples in examples/ join incident-042 as a specialist against a real server, each on a fresh
ledger: the one over MCP (the official SDK's client) and the one with caseboard.client."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from caseboard.cli.ledger_cmds import submit_line
from tests.conftest import ROOT, scenario_lines
from tests.http_server import RunningServer, running_server


@pytest.fixture
def incident(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/examples.db") as server:
        coordinator = server.app.coordinator(trust_timestamps=True)
        for line in scenario_lines():
            assert submit_line(coordinator, "incident-042", line)["ok"]
        yield server


@pytest.mark.parametrize(("example", "path"), [("mcp_specialist.py", "/mcp"), ("client_specialist.py", "")])
def test_the_example_claims_the_open_request_reports_a_result_and_reads_the_view(
    incident: RunningServer, example: str, path: str
) -> None:
    key = incident.token("tls-specialist", "specialist")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / example), "--url", incident.base_url + path, "--key", key],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    last = json.loads(done.stdout.splitlines()[-1])
    assert last == {"reported_at": 22, "view_version": 22}
    work = {w["request_id"]: w for w in incident.app.workspaces.show("incident-042")["work"]}
    assert work["certificate-check-006"]["status"] == "completed"
    assert "obs-certificate-check-006-tls-specialist" in {
        o["id"] for o in incident.app.workspaces.show("incident-042")["observations"]
    }
