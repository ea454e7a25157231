"""The Grafana dashboard in docs/ queries only series that caseboard exports, on the server or on a worker's
metrics port; and the operator guide's alerts too."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from dramatiq.brokers.stub import StubBroker
from prometheus_client.parser import text_string_to_metric_families

from caseboard.api.metrics import Metrics
from caseboard.app import build_app
from caseboard.dispatcher.store import DispatchStore
from caseboard.settings import Settings
from caseboard.workers.queue_metrics import Exposition, QueueMetrics
from tests.unit.board import Board, obs, open_item

ROOT = Path(__file__).resolve().parents[2]
SERIES = re.compile(r"\b((?:caseboard|dramatiq)_[a-z_]+)\b")


def sample_names(text: str) -> set[str]:
    return {sample.name for family in text_string_to_metric_families(text) for sample in family.samples}


@pytest.fixture
def exported(tmp_path: Path) -> Iterator[set[str]]:
    """Every sample name of a server's /metrics (with a workspace, a commit and a refusal) and a worker's."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    board = Board("ws-dash", url=url)
    board.ok("operator", [open_item()])
    board.ok("specialist", [obs("obs-1")])
    app = build_app(Settings(), database_url=url)
    metrics = Metrics()
    metrics.watch(app)
    metrics.outcome({"ok": True})
    metrics.outcome({"ok": False, "reason": "invalid"})
    metrics.request("GET", "/health", 200, 0.01)
    server = sample_names(metrics.render())
    store = DispatchStore(url)
    broker = StubBroker()
    queues = QueueMetrics(broker, store, Exposition(0, "127.0.0.1"))
    for name in ("total_messages", "total_errored_messages", "total_retried_messages", "total_rejected_messages"):
        getattr(queues.middleware, name).labels("caseboard.history", "caseboard_notify_caseboard_history").inc()
    queues.middleware.message_durations.labels("caseboard.history", "caseboard_notify_caseboard_history").observe(5)
    try:
        worker = sample_names(prometheus_text(queues))
    finally:
        queues.close()
        broker.close()
        store.close()
        app.close()
        board.ledger.close()
    yield server | worker


def prometheus_text(queues: QueueMetrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(queues.registry).decode()


def test_every_series_the_dashboard_queries_is_exported(exported: set[str]) -> None:
    dashboard = json.loads((ROOT / "docs" / "grafana-dashboard.json").read_text())
    queried = {
        name for panel in dashboard["panels"] for target in panel["targets"] for name in SERIES.findall(target["expr"])
    }
    assert queried, "the dashboard queries nothing"
    assert queried - exported == set()


def test_every_series_the_operator_guide_alerts_on_is_exported(exported: set[str]) -> None:
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    section = guide.split("## Coordination health and alerting", 1)[1].split("\n## ", 1)[0]
    alerted = set(SERIES.findall(section)) - {"caseboard_consumer_stats"}
    assert alerted and alerted - exported == set()
