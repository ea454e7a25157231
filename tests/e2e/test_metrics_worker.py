"""A real ``caseboard worker`` process on Redis with ``CASEBOARD_WORKER_METRICS_PORT``: dramatiq's Prometheus
middleware counts the messages it processed, and a notification sent twice is counted as a duplicate absorbed."""

from __future__ import annotations

import socket

import httpx
from prometheus_client.parser import text_string_to_metric_families

from caseboard.dispatcher.broker import message_for
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.waking import WakingRedisBroker
from tests.e2e.procs import Cluster, poll

QUEUE = (("actor_name", "caseboard_notify_caseboard_history"), ("queue_name", "caseboard.history"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
    except httpx.TransportError:
        return None
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def history(version: int) -> Notification:
    return Notification(
        id=f"ws-m@{version}/commit", kind="commit", audience="history", workspace_id="ws-m", workspace_version=version
    )


def test_a_worker_serves_its_queue_metrics_and_the_duplicates_it_absorbed(cluster: Cluster) -> None:
    port = free_port()
    worker = cluster.spawn(
        "worker",
        "--passive",
        "--all-tenants",
        CASEBOARD_WORKER_METRICS_PORT=str(port),
        CASEBOARD_WORKER_METRICS_HOST="127.0.0.1",
    )
    poll("the worker's metrics port", lambda: scrape(port))
    broker = WakingRedisBroker(url=cluster.redis_url, namespace=cluster.namespace)
    try:
        for notification in (history(1), history(2), history(1)):  # the third: a duplicate delivery
            broker.enqueue(message_for(notification))
    finally:
        broker.close()

    def counted() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
        page = scrape(port)
        return page if page and page.get(("dramatiq_messages_total", QUEUE)) == 3 else None

    page = poll("three messages counted by dramatiq's middleware", counted, timeout=30)
    assert page[("caseboard_duplicate_deliveries_absorbed_total", ())] == 1
    assert page[("caseboard_dispatch_store_up", ())] == 1
    assert not any("ws-m" in value for (_, labels) in page for _, value in labels)
    cluster.stop(worker)
    assert worker.returncode == 0
    assert scrape(port) is None


def test_a_worker_whose_metrics_port_is_taken_or_host_is_not_here_stops_in_one_line(cluster: Cluster) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for host, setting in (("127.0.0.1", "CASEBOARD_WORKER_METRICS_PORT"), ("192.0.2.1", "_HOST or ")):
            worker = cluster.spawn(
                "worker",
                "--passive",
                "--all-tenants",
                CASEBOARD_WORKER_METRICS_PORT=str(port),
                CASEBOARD_WORKER_METRICS_HOST=host,
            )
            assert worker.wait(timeout=30) == 2
            lines = cluster.logs[worker.pid].read_text().splitlines()
            assert f"caseboard: cannot serve the worker's metrics on {host}:{port}: " in lines[-1], lines
            assert setting in lines[-1] and not any("Traceback" in line for line in lines)
