"""A worker with a backlog in hand takes a handoff before it: a person is waiting on it (dramatiq's StubBroker,
one worker thread, the worker as ``caseboard worker`` starts it)."""

from __future__ import annotations

import threading
import time
from typing import Any

from dramatiq.brokers.stub import StubBroker

from caseboard.dispatcher.broker import message_from
from caseboard.workers.host import HANDOFF_QUEUE
from caseboard.workers.live import start_worker

BACKLOG = 30


class Host:
    """The two queues of a plain worker that matter here; each message takes 5 ms."""

    def __init__(self) -> None:
        self.handled: list[str] = []
        self.started = threading.Event()

    def queues(self) -> list[str]:
        return ["caseboard.snapshot", HANDOFF_QUEUE]

    def handle(self, body: dict[str, Any]) -> None:
        self.started.set()
        time.sleep(0.005)
        self.handled.append(body["id"])


def test_a_handoff_goes_before_the_messages_the_worker_already_holds() -> None:
    broker = StubBroker()
    broker.emit_after("process_boot")
    host = Host()
    broker.declare_queue("caseboard.snapshot")
    for n in range(BACKLOG):
        broker.enqueue(message_from("caseboard.snapshot", f'{{"id": "snapshot-{n}"}}'))
    worker = start_worker(broker, host, threads=1, poll_ms=50)  # type: ignore[arg-type]
    try:
        assert host.started.wait(10)
        time.sleep(0.02)  # the backlog is fetched and in the worker's hands
        broker.enqueue(message_from(HANDOFF_QUEUE, '{"id": "handoff"}'))
        broker.join("caseboard.snapshot", fail_fast=True)
        broker.join(HANDOFF_QUEUE, fail_fast=True)
        worker.join()
    finally:
        worker.stop()
        broker.close()
    assert sorted(host.handled) == sorted(["handoff", *(f"snapshot-{n}" for n in range(BACKLOG))])
    assert host.handled.index("handoff") <= 8, host.handled  # not after the 30 messages held before it
