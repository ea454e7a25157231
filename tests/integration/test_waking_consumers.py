"""Consumers on Redis sleep until their queue has a message (docs/adr/0184): an idle worker barely calls Redis,
and yet takes a message at once, whether another broker enqueued it, it was delayed, it waited for a free
prefetch slot, or Redis was restarted under the worker; and a worker still stops within its timeout.

Each test runs a worker of its own on a private Redis, with an idle timeout far longer than the times it
asserts, so that only a wake-up can explain them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import redis

from caseboard.dispatcher.broker import BrokerConfig, make_broker, message_from
from caseboard.workers.live import consume
from tests.e2e.procs import poll
from tests.private_services import PrivateRedis, private_redis

pytestmark = [pytest.mark.redis]

QUEUES = [f"caseboard.test-{n}" for n in range(12)]
LONG_MS = 5_000  # the consumers' idle timeout: none of the times below could be reached by it


class Host:
    """Takes every message of its queues, noting when (monotonic) each id arrived."""

    def __init__(self, pause_s: float = 0.0) -> None:
        self.pause_s = pause_s
        self.arrived: dict[str, float] = {}
        self.lock = threading.Lock()

    def own_queues(self, queues: list[str]) -> list[tuple[str, str]]:
        return []

    def handle(self, body: dict[str, Any]) -> None:
        with self.lock:
            self.arrived[body["id"]] = time.monotonic()
        time.sleep(self.pause_s)


@pytest.fixture
def server() -> Iterator[PrivateRedis]:
    with private_redis() as server:
        yield server


def _worker(server: PrivateRedis, host: Host, poll_ms: int = LONG_MS) -> tuple[dramatiq.Broker, dramatiq.Worker]:
    broker = make_broker(BrokerConfig(url=server.url, namespace="wake-test"))
    return broker, consume(broker, host, QUEUES, threads=2, poll_ms=poll_ms)


def _sender(server: PrivateRedis) -> dramatiq.Broker:
    """Another broker on the same Redis, as the dispatcher's process holds."""
    sender = make_broker(BrokerConfig(url=server.url, namespace="wake-test"))
    for queue in QUEUES:
        sender.declare_queue(queue)
    return sender


def _commands(server: PrivateRedis) -> int:
    client = redis.Redis.from_url(server.url)
    try:
        return int(client.info("stats")["total_commands_processed"])
    finally:
        client.close()


def test_an_idle_worker_barely_calls_redis_and_takes_a_message_at_once(server: PrivateRedis) -> None:
    host = Host()
    broker, worker = _worker(server, host, poll_ms=500)  # the default timeout
    sender = _sender(server)
    try:
        time.sleep(1.5)  # every consumer has fetched once and gone idle
        before = _commands(server)
        time.sleep(2.0)
        idle = _commands(server) - before
        # 24 consumers (each queue and its delay queue) fetching every 0.5 s: ~100 calls in 2 s. Polling every
        # 10 ms, as dramatiq's consumer does at the old timeout, took ~9,000 a second.
        assert idle < 400, idle
        sent = time.monotonic()
        sender.enqueue(message_from(QUEUES[7], {"id": "m-1"}))
        poll("m-1 taken", lambda: "m-1" in host.arrived, timeout=5)
        assert host.arrived["m-1"] - sent < 0.2, host.arrived["m-1"] - sent  # not the timeout's 0.5 s
    finally:
        worker.stop()
        broker.close()
        sender.close()


def test_a_delayed_message_is_taken_when_due_and_a_full_prefetch_fetches_again_when_freed(
    server: PrivateRedis,
) -> None:
    host = Host(pause_s=0.05)
    broker, worker = _worker(server, host)
    sender = _sender(server)
    try:
        time.sleep(0.5)
        sent = time.monotonic()
        sender.enqueue(message_from(QUEUES[0], {"id": "late"}), delay=400)
        poll("the delayed message taken", lambda: "late" in host.arrived, timeout=10)
        assert 0.4 <= host.arrived["late"] - sent < 2.0, host.arrived["late"] - sent
        # 150 messages at once: more than a consumer's prefetch (100), so it must fetch again when acks free it
        sent = time.monotonic()
        for n in range(150):
            sender.enqueue(message_from(QUEUES[1], {"id": f"burst-{n}"}))
        poll("the burst taken", lambda: len(host.arrived) == 151, timeout=20)
        assert max(host.arrived.values()) - sent < 10.0  # 150 x 50 ms on 2 threads is ~4 s
    finally:
        worker.stop()
        broker.close()
        sender.close()


def test_a_waiting_worker_stops_within_its_timeout(server: PrivateRedis) -> None:
    broker, worker = _worker(server, Host(), poll_ms=2000)
    try:
        time.sleep(1.0)  # every consumer waits on its bell, for up to 2 s
        started = time.monotonic()
        worker.stop()
        assert time.monotonic() - started < 4.5
    finally:
        broker.close()


def test_after_redis_restarts_a_message_is_taken_at_once_again(server: PrivateRedis) -> None:
    host = Host()
    broker, worker = _worker(server, host)
    try:
        time.sleep(0.5)
        server.restart()  # every message and subscription gone; the consumers reconnect, the bells subscribe again
        time.sleep(3.0)
        sender = _sender(server)
        try:
            sent = time.monotonic()
            sender.enqueue(message_from(QUEUES[3], {"id": "after"}))
            poll("the message after the restart taken", lambda: "after" in host.arrived, timeout=20)
            assert host.arrived["after"] - sent < 1.0, host.arrived["after"] - sent  # not the 5 s timeout
        finally:
            sender.close()
    finally:
        worker.stop()
        broker.close()
