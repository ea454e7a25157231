"""The health figures as of version N are the same computed live (over the ledger the coordinator wrote, on
SQLite and PostgreSQL) as by replaying a recorded incident to N; and the command line and HTTP say the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import Refusal
from caseboard.ledger import open_ledger
from caseboard.projections.health import FIGURES, health, ledger_health, tenant_health
from caseboard.replay.records import read_file
from caseboard.replay.transfer import export
from tests.conftest import caseboard
from tests.http_server import RunningServer, observation, open_body, running_server

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = sorted((ROOT / "corpus" / "scenarios").glob("*.jsonl"))


def play(url: str, scenario: Path) -> str:
    """Plays a corpus scenario through the coordinator onto the ledger at ``url``; its workspace id."""
    ledger = open_ledger(url)
    try:
        coordinator = Coordinator(ledger, trust_timestamps=True)
        workspace_id = ""
        for line in scenario.read_text(encoding="utf-8").splitlines():
            data = json.loads(line)
            expect = data.pop("expect", None)
            workspace_id = data["workspace_id"]
            try:
                outcome = coordinator.submit(parse_contribution(data))
            except Refusal as refusal:
                outcome = refusal.outcome()
            assert (None if outcome["ok"] else outcome["reason"]) == expect, outcome
        return workspace_id
    finally:
        ledger.close()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_figures_as_of_each_version_equal_those_of_a_replay_to_it(
    durable_url: str, scenario: Path, tmp_path: Path
) -> None:
    workspace_id = play(durable_url, scenario)
    ledger = open_ledger(durable_url)
    try:
        exported = tmp_path / "exported.jsonl"
        with exported.open("w", encoding="utf-8") as handle:
            export(ledger, workspace_id, handle)
        recorded = list(read_file(ROOT / "corpus" / scenario.name))
        replayed = list(read_file(exported))
        head = ledger.head(workspace_id)
        assert head == recorded[-1].version
        for version in range(1, head + 1):
            live = ledger_health(ledger, workspace_id, version)
            assert live == health(replayed, version) == health(recorded, version), version
    finally:
        ledger.close()


def test_the_command_line_reports_the_figures_and_what_each_means(sqlite_url: str) -> None:
    workspace_id = play(sqlite_url, ROOT / "corpus" / "scenarios" / "expired-evidence-044.jsonl")
    shown = caseboard("health", workspace_id, "--format", "json", "--at-version", "8", url=sqlite_url)
    assert shown.returncode == 0, shown.stderr
    document = json.loads(shown.stdout)
    assert document["meaning"] == FIGURES
    del document["meaning"]
    assert document == health(read_file(ROOT / "corpus" / "expired-evidence-044.jsonl"), 8)
    text = caseboard("health", workspace_id, url=sqlite_url)
    assert text.returncode == 0, text.stderr
    assert "stale evidence in use: 2" in text.stdout and "not instrumented" in text.stdout
    assert FIGURES["stale_evidence_in_use"] in text.stdout
    tenants = caseboard("health", "--format", "json", url=sqlite_url)
    assert json.loads(tenants.stdout)["tenants"]["tenant-a"]["stale_evidence_in_use"] == 2


def test_a_mistake_on_the_command_line_is_one_line_and_a_non_zero_exit(sqlite_url: str) -> None:
    play(sqlite_url, ROOT / "corpus" / "scenarios" / "expired-evidence-044.jsonl")
    for args, expected in (
        (("health", "nowhere-1"), "unknown workspace 'nowhere-1'"),
        (("health", "expired-evidence-044", "--at-version", "99"), "version 99 does not exist"),
        (("health", "--at-version", "3"), "--at-version needs a WORKSPACE"),
    ):
        done = caseboard(*args, url=sqlite_url)
        assert done.returncode != 0
        assert expected in done.stderr and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_health_of_a_ledger_that_does_not_exist_is_one_line_and_creates_none(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/absent.db"
    for args in (("health",), ("health", "ws-1", "--format", "json")):
        done = caseboard(*args, url=url)
        assert done.returncode == 2 and "there is no ledger at" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not (tmp_path / "absent.db").exists()


@pytest.fixture
def server(sqlite_url: str) -> Iterator[RunningServer]:
    with running_server(sqlite_url) as running:
        assert running.as_("op", "operator").post("/workspaces", json=open_body("ws-health")).status_code == 201
        yield running


def test_http_health_is_the_ledgers_figures_for_the_keys_tenant_only(server: RunningServer) -> None:
    specialist = server.as_("log-specialist", "specialist")
    assert specialist.post("/workspaces/ws-health/contributions", json={"items": [observation("obs-1")]}).is_success
    reader = server.as_("planner-1", "planner")
    answered = reader.get("/workspaces/ws-health/health")
    assert answered.status_code == 200
    body = answered.json()
    assert body["workspace_version"] == 2 and body["meaning"] == FIGURES
    assert body == {**ledger_health(server.app.ledger, "tenant-a/ws-health"), "meaning": FIGURES}
    assert reader.get("/workspaces/ws-health/health", params={"version": 1}).json()["workspace_version"] == 1
    beyond = reader.get("/workspaces/ws-health/health", params={"version": 9})
    assert beyond.status_code == 422 and beyond.json()["reason"] == "invalid"
    other = server.as_("planner-b", "planner", tenant="tenant-b").get("/workspaces/ws-health/health")
    missing = reader.get("/workspaces/ws-nowhere/health")
    assert other.status_code == missing.status_code == 404
    assert other.json()["reason"] == missing.json()["reason"] == "unknown_workspace"
    assert other.json()["ok"] is False
    assert server.client("not-a-key").get("/workspaces/ws-health/health").status_code == 401


def test_http_tenant_health_sums_the_keys_tenants_workspaces_only(server: RunningServer) -> None:
    other = server.as_("op-b", "operator", tenant="tenant-b")
    assert other.post("/workspaces", json=open_body("ws-health-b", tenant="tenant-b")).status_code == 201
    request = {"type": "work_request", "request_id": "logs-1", "kind": "log_query", "target": "auth logs"}
    planner_b = server.as_("planner-b", "planner", tenant="tenant-b")
    assert planner_b.post("/workspaces/ws-health-b/contributions", json={"items": [request]}).status_code == 201
    reader_a = server.as_("planner-1", "planner")
    body_a = reader_a.get("/tenant/health").json()
    assert body_a["tenant_id"] == "tenant-a" and body_a["workspaces"] == 1
    assert body_a["outstanding_work"]["awaiting_result"] == 0
    assert body_a["refusals_by_reason"] == "not instrumented"
    body_b = planner_b.get("/tenant/health").json()
    expected = tenant_health([ledger_health(server.app.ledger, "tenant-b/ws-health-b")])
    assert body_b == {"tenant_id": "tenant-b", **expected, "meaning": FIGURES}
    assert server.client("not-a-key").get("/tenant/health").status_code == 401
