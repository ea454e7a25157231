"""Consumers on dramatiq's StubBroker: each notification processed once, duplicates absorbed and counted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
from dramatiq.brokers.stub import StubBroker

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.broker import declare_consumer, message_for
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.items import Role
from caseboard.workers.host import ConsumerHost
from caseboard.workers.runtime import View
from tests.unit.test_worker_runtime import TURN, opened


@pytest.fixture
def store(sqlite_dispatch_store: DispatchStore) -> DispatchStore:
    return sqlite_dispatch_store


@pytest.fixture
def broker() -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.emit_after("process_boot")
    yield broker
    broker.close()


def run(broker: StubBroker, host: ConsumerHost, notifications: list[Notification]) -> None:
    for queue in host.queues():
        declare_consumer(broker, queue, host.handle)
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=50)
    worker.start()
    try:
        for notification in notifications:
            broker.enqueue(message_for(notification))
        for queue in host.queues():  # each with its delay queue, where a notification handed back waits
            broker.join(queue, fail_fast=True)
        worker.join()
    finally:
        worker.stop()


def history(version: int) -> Notification:
    return Notification(
        id=f"ws-u@{version}/commit",
        kind="commit",
        audience="history",
        workspace_id="ws-u",
        workspace_version=version,
    )


def snapshot(version: int) -> Notification:
    return Notification(
        id=f"ws-u@{version}/snapshot_changed",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id="ws-u",
        workspace_version=version,
    )


def test_a_redelivered_notification_is_absorbed_and_counted(store: DispatchStore, broker: StubBroker) -> None:
    host = ConsumerHost(store, None, {})
    run(broker, host, [history(1), history(2), history(1), history(2), history(2)])
    assert [(c, n) for c, n, _ in store.processed_ids()] == [
        ("caseboard.history", "ws-u@1/commit"),
        ("caseboard.history", "ws-u@2/commit"),
    ]
    assert store.status("dispatcher")["duplicates_absorbed"] == 3
    assert store.view_version("caseboard.history", "ws-u") == 2


def test_a_snapshot_notice_older_than_what_was_taken_in_is_a_no_op(store: DispatchStore, broker: StubBroker) -> None:
    host = ConsumerHost(store, None, {})
    run(broker, host, [snapshot(5)])
    run(broker, host, [snapshot(3)])
    assert store.view_version("caseboard.snapshot", "ws-u") == 5
    assert store.status("dispatcher")["duplicates_absorbed"] == 0


def test_attempts_are_counted_before_the_work_and_a_processed_id_is_final(store: DispatchStore) -> None:
    assert store.begin("c", "n-1").attempts == 1
    assert store.begin("c", "n-1").attempts == 2  # a crash before finishing: the next delivery is attempt 2
    assert store.finish("c", "n-1", {"ws": 3}) is True
    assert store.finish("c", "n-1", {"ws": 4}) is False
    assert store.begin("c", "n-1").duplicate is True
    assert store.view_version("c", "ws") == 3
    assert store.status("dispatcher")["duplicates_absorbed"] == 2


class Starved:
    """A planner whose first ``losses`` submissions each lose the race to a rival's commit; then it asks its
    question, once."""

    principal = "planner-1"
    role = Role.PLANNER

    def __init__(self, coordinator: Coordinator, losses: int) -> None:
        self.coordinator = coordinator
        self.losses = losses
        self.lost = 0

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if any(question["id"] == "q-starved" for question in view["questions"]):
            return None
        if self.lost < self.losses:
            self.lost += 1
            rival = {
                "workspace_id": "ws-r",
                "author": {"principal": "planner-2", "role": "planner"},
                "items": [{"type": "question", "id": f"q-rival-{self.lost}", "text": "?"}],
            }
            assert self.coordinator.submit(parse_contribution(json.dumps(rival)))["ok"]
        return [{"type": "question", "id": "q-starved", "text": "What changed?"}]


def test_a_participant_that_loses_every_race_is_delivered_the_notification_again(
    store: DispatchStore, broker: StubBroker
) -> None:
    coordinator = opened()
    planner = Starved(coordinator, losses=5)  # act's whole budget: its first delivery lands nothing
    run(broker, ConsumerHost(store, coordinator, {"planner": planner}), [TURN])
    questions = [q["id"] for q in coordinator.workspaces.show("ws-r")["questions"]]
    assert questions == [*(f"q-rival-{n}" for n in range(1, 6)), "q-starved"]  # taken again, and answered
    assert [(c, n) for c, n, _ in store.processed_ids()] == [("caseboard.planner", TURN.id)]
    assert store.begin("caseboard.planner", TURN.id).duplicate  # processed once, on its second delivery


def test_a_controller_that_loses_every_race_at_a_tick_decides_again_at_the_next(store: DispatchStore) -> None:
    coordinator = opened()
    controller = Starved(coordinator, losses=5)
    host = ConsumerHost(store, coordinator, {}, controller)  # type: ignore[arg-type]  # any participant decides
    host.workspaces.add("ws-r")
    host.tick()  # five lost races: nothing landed, and the tick goes on
    assert "ws-r" in host.workspaces
    assert "q-starved" not in [q["id"] for q in coordinator.workspaces.show("ws-r")["questions"]]
    host.tick()
    assert "q-starved" in [q["id"] for q in coordinator.workspaces.show("ws-r")["questions"]]
