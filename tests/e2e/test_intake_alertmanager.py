"""Alert intake from a real Alertmanager: a Prometheus rule over a target whose authentication failures the test
drives fires, Alertmanager posts the group to caseboard again at every group interval, and the alert resolves.
One workspace, one observation of the firing and one of the resolution, nothing else."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caseboard.intake.alerts import AlertGroup
from caseboard.intake.translate import workspace_id
from caseboard.pilot.servers import alertmanager, have_alertmanager, have_prometheus, prometheus, webhook_notifications
from tests.conftest import service_missing
from tests.e2e.procs import poll
from tests.http_server import RunningServer, running_server
from tests.sources.servers import counter_target

RULES = """
groups:
  - name: payments
    interval: 1s
    rules:
      - alert: AuthFailuresHigh
        expr: increase(auth_failures_total[4s]) > 0
        labels: {service: payments-api, env: production}
        annotations: {summary: "authentication failures on {{ $labels.instance }}"}
"""
GROUP = '{}:{alertname="AuthFailuresHigh"}'


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/ledger.db") as running:
        yield running


def ledger_items(server: RunningServer, workspace: str) -> list[dict[str, Any]]:
    reader = server.as_("op", "operator")
    response = reader.get(f"/workspaces/{workspace}/ledger")
    if response.status_code != 200:
        return []
    return [item for commit in response.json()["commits"] for item in commit["items"]]


def test_a_firing_rule_opens_one_workspace_through_re_sends_and_its_resolution(server: RunningServer) -> None:
    if not (have_prometheus() and have_alertmanager()):
        service_missing("prometheus", FileNotFoundError("Debian's prometheus and prometheus-alertmanager"))
    token = server.token("alertmanager", "intake")
    workspace = workspace_id(AlertGroup(source="alertmanager", group=GROUP, labels={}, summary="", alerts=()))
    failing = threading.Event()
    failing.set()
    with counter_target() as (target, failures):

        def fail() -> None:
            while failing.is_set():
                failures.inc()
                time.sleep(0.2)

        driver = threading.Thread(target=fail, daemon=True)
        driver.start()
        with (
            alertmanager(f"{server.base_url}/intake/alertmanager", token) as manager,
            prometheus([target], RULES, manager),
        ):
            poll("the alert's workspace", lambda: ledger_items(server, workspace), timeout=60)
            sent = webhook_notifications(manager)
            poll("two re-sends of the group", lambda: webhook_notifications(manager) >= sent + 2, timeout=30)
            failing.clear()
            driver.join(5)
            poll(
                "the resolution",
                lambda: any("resolved" in i.get("statement", "") for i in ledger_items(server, workspace)),
                timeout=60,
            )
            notifications = webhook_notifications(manager)
    items = ledger_items(server, workspace)
    assert notifications >= 3
    assert [i["type"] for i in items] == ["open", "observation", "observation"]
    opened, firing, resolved = items
    assert opened["scope"] == {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"}
    assert firing["statement"].startswith(f"AuthFailuresHigh firing on {target} since ")
    assert resolved["statement"].startswith(f"AuthFailuresHigh on {target} resolved at ")
    assert firing["source"] == resolved["source"] == {"system": "alertmanager", "instance": target}
    shown = server.as_("op", "operator").get(f"/workspaces/{workspace}").json()
    assert shown["status"] == "investigating" and shown["workspace_version"] == 3
    keys = [key for key in server.app.ledger.keys_named(workspace)]
    assert keys == [f"tenant-a/{workspace}"]
