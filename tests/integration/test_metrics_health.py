"""``/metrics`` through prometheus_client: the ledger's coordination health in aggregate, updated as commits
land, with no workspace, tenant or principal in any label; and the queues' metrics where workers run."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from dramatiq.brokers.stub import StubBroker
from prometheus_client.parser import text_string_to_metric_families

from caseboard.dispatcher.broker import message_for
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import ConfigurationError
from caseboard.projections.health import ledger_health, tenant_health
from caseboard.workers.host import ConsumerHost
from caseboard.workers.live import start_worker
from caseboard.workers.queue_metrics import Exposition
from tests.http_server import RunningServer, observation, open_body, running_server

NOW = datetime.now(UTC).replace(microsecond=0)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a text exposition, by name and labels (the parser fails on a malformed page)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.fixture
def server(sqlite_url: str) -> Iterator[RunningServer]:
    with running_server(sqlite_url) as running:
        operator = running.as_("op-a", "operator")
        assert operator.post("/workspaces", json=open_body("ws-metrics-a")).status_code == 201
        other = running.as_("op-b", "operator", tenant="tenant-b")
        assert other.post("/workspaces", json=open_body("ws-metrics-b", tenant="tenant-b")).status_code == 201
        yield running


def test_the_health_figures_are_summed_over_the_ledger_and_follow_new_commits(server: RunningServer) -> None:
    specialist = server.as_("log-specialist", "specialist")
    planner = server.as_("planner-1", "planner")
    expired = (NOW - timedelta(seconds=60)).isoformat().replace("+00:00", "Z")
    base = "/workspaces/ws-metrics-a/contributions"
    assert specialist.post(base, json={"items": [{**observation("obs-1"), "expires_at": expired}]}).status_code == 201
    hypothesis = {"type": "hypothesis", "id": "hyp-1", "statement": "certs", "supporting_evidence": ["obs-1"]}
    assert planner.post(base, json={"items": [hypothesis]}).status_code == 201
    plan = {"type": "proposal", "id": "proposal-1", "summary": "roll back", "based_on_workspace_version": 3}
    plan["depends_on"] = ["hyp-1"]
    assert planner.post(base, json={"expected_version": 3, "items": [plan]}).status_code == 201
    first = samples(httpx.get(f"{server.base_url}/metrics").text)
    assert first[("caseboard_health_up", ())] == 1
    assert first[("caseboard_workspaces", (("status", "investigating"),))] == 2
    assert first[("caseboard_stale_evidence_in_use", ())] == 1  # the plan rests on expired evidence
    assert first[("caseboard_proposal_invalidations_total", (("change", "evidence_expired"),))] == 1
    request = {"type": "work_request", "request_id": "logs-1", "kind": "log_query", "target": "auth logs"}
    assert planner.post(base, json={"items": [request]}).status_code == 201
    second = samples(httpx.get(f"{server.base_url}/metrics").text)
    assert second[("caseboard_outstanding_work", (("state", "awaiting_result"),))] == 1
    reports = [ledger_health(server.app.ledger, ws) for ws in ("tenant-a/ws-metrics-a", "tenant-b/ws-metrics-b")]
    summed = tenant_health(reports)
    for change, count in summed["invalidations"]["by_change"].items():
        assert second[("caseboard_proposal_invalidations_total", (("change", change),))] == count
    assert second[("caseboard_operator_corrections_total", (("kind", "review_withdrawn"),))] == 0
    assert second[("caseboard_time_to_first_outcome_seconds_count", ())] == 0


def test_no_label_names_a_workspace_a_tenant_or_a_principal(server: RunningServer) -> None:
    planner = server.as_("planner-secret-name", "planner")
    question = {"type": "question", "id": "q-1", "text": "Why?"}
    assert planner.post("/workspaces/ws-metrics-a/contributions", json={"items": [question]}).status_code == 201
    text = httpx.get(f"{server.base_url}/metrics").text
    for name in ("ws-metrics-a", "ws-metrics-b", "tenant-a", "tenant-b", "planner-secret-name", "op-a"):
        assert name not in text
    labels = {key for (_, pairs) in samples(text) for key, _ in pairs}
    assert labels <= {"reason", "method", "route", "status", "le", "change", "state", "outcome", "kind"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def history(version: int) -> Notification:
    return Notification(
        id=f"ws-q@{version}/commit", kind="commit", audience="history", workspace_id="ws-q", workspace_version=version
    )


def test_dramatiqs_middleware_counts_the_queues_and_the_duplicate_delivery_absorbed(tmp_path: Path) -> None:
    store = DispatchStore(f"sqlite:///{tmp_path}/ledger.db")
    broker = StubBroker()
    broker.emit_after("process_boot")
    host = ConsumerHost(store, None, {}, kinds=())
    port = free_port()
    worker = start_worker(broker, host, threads=2, metrics=Exposition(port, "127.0.0.1"))
    try:
        for notification in (history(1), history(2), history(1)):  # the third is a duplicate delivery
            broker.enqueue(message_for(notification))
        broker.join("caseboard.history", fail_fast=True)
        worker.join()
        page = samples(httpx.get(f"http://127.0.0.1:{port}/metrics").text)
    finally:
        worker.stop()
        broker.close()
        store.close()
    queue = (("actor_name", "caseboard_notify_caseboard_history"), ("queue_name", "caseboard.history"))
    assert page[("dramatiq_messages_total", queue)] == 3
    assert page[("dramatiq_message_duration_milliseconds_count", queue)] == 3
    assert page[("caseboard_duplicate_deliveries_absorbed_total", ())] == 1
    assert page[("caseboard_dispatch_store_up", ())] == 1
    with pytest.raises(httpx.TransportError):  # the exposition stops with the worker
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2)


def test_the_worker_metrics_port_is_off_unless_configured_and_checked() -> None:
    assert Exposition.from_env({}) is None
    assert Exposition.from_env({"CASEBOARD_WORKER_METRICS_PORT": "9191"}) == Exposition(9191)
    with pytest.raises(ConfigurationError, match="CASEBOARD_WORKER_METRICS_PORT must be a port number"):
        Exposition.from_env({"CASEBOARD_WORKER_METRICS_PORT": "lots"})


def test_a_metrics_page_is_valid_prometheus_text(server: RunningServer) -> None:
    response = httpx.get(f"{server.base_url}/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    families = {family.name for family in text_string_to_metric_families(response.text)}
    assert {"caseboard_commits", "caseboard_proposal_invalidations", "caseboard_outstanding_work"} <= families
    assert json.dumps(sorted(families))  # names only, nothing else to leak
