"""Three source specialists of one kind answer 90 checks of three workspaces at once, on PostgreSQL and Redis. They
lose compare-and-set races to each other by the hundred; one that loses five in a row takes its notification
again half a second later (ADR 0196). Every check completes, and none stays claimed by a specialist that ran
its query and dropped the answer (the tree before gave up on about 25 of them in such a run)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.conftest import contribution, open_item
from tests.e2e.procs import Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WORKSPACES = ("storm-1", "storm-2", "storm-3")
CHECKS = 30


def test_specialists_racing_on_one_kind_answer_every_check(cluster: Cluster, tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    at = datetime.now(UTC) - timedelta(minutes=5)
    (logs / "payments-api-2.log").write_text(f"{at.isoformat()} payments-api-2 auth_failure handshake\n")
    sources = tmp_path / "sources.toml"
    sources.write_text(f'[tenants.tenant-a.sources.auth-logs]\ntype = "logs"\noptions = {{ dirs = ["{logs}"] }}\n')
    env = {"CASEBOARD_SOURCES": str(sources)}
    specialists = [cluster.spawn("specialist", "--source", "auth-logs", "--threads", "4", **env) for _ in range(3)]
    cluster.spawn("worker", "--tenant", "tenant-a")
    cluster.spawn("dispatch", "--poll", "0.1")
    for proc in specialists:
        poll("the specialist's consumers", lambda proc=proc: cluster.saw(proc, "consumers_announced"), timeout=60)
    # the worker's controller passes a cycle at each commit (no planner runs): a budget it cannot spend meanwhile,
    # for an exhausted one refuses every claim still to come
    opening = open_item(max_pending_work=CHECKS, max_investigation_cycles=1000)
    target = json.dumps({"glob": "*.log", "match": "auth_failure"})
    checks = [
        {"type": "work_request", "request_id": f"logs-{n}", "kind": "log_query", "target": target}
        for n in range(CHECKS)
    ]
    ledger = open_ledger(cluster.database_url)
    try:
        coordinator = Coordinator(ledger)
        for workspace in WORKSPACES:
            assert coordinator.submit(parse_contribution(contribution([opening], "op", "operator", workspace)))["ok"]
        for workspace in WORKSPACES:  # all at once: the specialists race on each workspace's head
            assert coordinator.submit(parse_contribution(contribution(checks, workspace_id=workspace)))["ok"]

        def unanswered() -> list[str]:
            works = [(ws, w) for ws in WORKSPACES for w in coordinator.workspaces.show(ws)["work"]]
            return [f"{ws}/{w['request_id']}: {w['status']}" for ws, w in works if w["status"] != "completed"]

        poll("every check completed", lambda: not unanswered() or None, timeout=90, every=0.5)
    finally:
        ledger.close()
    events = [event for proc in specialists for event in cluster.events(proc)]
    assert not [e for e in events if e.get("event") == "participant_gave_up"]
    for proc in specialists:
        assert proc.poll() is None, cluster.logs[proc.pid].read_text()[-2000:]
