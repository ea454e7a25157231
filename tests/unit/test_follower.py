"""The dispatcher's position advances only past what the broker accepted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis
from dramatiq.brokers.stub import StubBroker

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.broker import BrokerUnavailable
from caseboard.dispatcher.follower import DispatchConfig, Dispatcher
from caseboard.dispatcher.outbox import open_outbox
from caseboard.dispatcher.store import DispatchStore
from caseboard.ledger import open_ledger
from caseboard.projections import Workspaces
from tests.conftest import play, scenario_lines


class FlakyBroker(StubBroker):
    """Refuses the ``fail_at``-th message, as a Redis going away mid-batch would."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.accepted = 0

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        if self.accepted + 1 == self.fail_at:
            self.fail_at = 0
            raise redis.ConnectionError("Connection refused")
        self.accepted += 1
        return super().enqueue(message, delay=delay)


def test_a_broker_failure_mid_batch_keeps_the_position_and_the_next_pass_resends(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
    store = DispatchStore(url)
    broker = FlakyBroker(fail_at=10)
    dispatcher = Dispatcher(open_outbox(ledger), store, broker, Workspaces(ledger), DispatchConfig())
    try:
        with pytest.raises(BrokerUnavailable):
            dispatcher.pass_once()
        assert store.position("dispatcher") == (0, 0)
        assert store.status("dispatcher")["delivered"] == 0
        assert dispatcher.pass_once() == 20
        assert store.position("dispatcher") == (0, 20)
        delivered = store.status("dispatcher")["delivered"]
        assert delivered == broker.accepted - 9  # the nine sent before the failure are sent again
        assert dispatcher.pass_once() == 0
    finally:
        store.close()
        broker.close()
        ledger.close()


def test_the_dispatcher_keeps_a_bounded_number_of_workspaces_and_reloads_an_evicted_one(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    lines = scenario_lines()
    coordinator = Coordinator(ledger, trust_timestamps=True)
    for copy in ("a", "b", "c"):  # three workspaces, one after another
        play(coordinator, [line.replace("incident-042", f"incident-{copy}") for line in lines[:10]])
    store = DispatchStore(url)
    broker = StubBroker()
    bounded = Dispatcher(open_outbox(ledger), store, broker, Workspaces(ledger), DispatchConfig(states_kept=1))
    try:
        assert bounded.pass_once() == 30
        assert list(bounded._states) == ["incident-c"]
        play(coordinator, [line.replace("incident-042", "incident-a") for line in lines[10:12]])
        assert bounded.pass_once() == 2  # incident-a was evicted: reloaded from the ledger, routed on
        assert bounded._states["incident-a"].version == 12
        assert list(bounded._states) == ["incident-a"]
    finally:
        store.close()
        broker.close()
        ledger.close()


class RecordingBroker(StubBroker):
    """Keeps the queue of every message in the order the dispatcher sent them."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[tuple[str, str]] = []

    def enqueue(self, message: Any, *, delay: int | None = None) -> Any:
        self.sent.append((message.queue_name, message.args[0]["id"]))
        return super().enqueue(message, delay=delay)


def test_a_handoff_is_sent_before_the_other_notifications_of_its_batch_and_each_queue_keeps_its_order(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    coordinator = Coordinator(ledger, trust_timestamps=True)
    limits = dict.fromkeys(
        ("max_selected_items", "max_investigation_cycles", "max_open_questions", "max_proposals", "max_pending_work"),
        5,
    )
    scope = {"tenant_id": "t", "environment": "e", "service": "s"}
    for workspace in ("ws-a", "ws-b"):
        for items in (
            [{"type": "open", "scope": scope, "goal": "g", "runtime_limits": limits, "execution_mode": "read_only"}],
            [{"type": "status", "to": "human_review_required", "reason": "r", "handoff": "look"}],
        ):
            line = json.dumps({"workspace_id": workspace, "author": {"principal": "op", "role": "operator"},
                               "items": items})  # fmt: skip
            assert coordinator.submit(parse_contribution(line))["ok"]
    store = DispatchStore(url)
    broker = RecordingBroker()
    dispatcher = Dispatcher(open_outbox(ledger), store, broker, Workspaces(ledger), DispatchConfig())
    try:
        assert dispatcher.pass_once() == 4
    finally:
        store.close()
        broker.close()
        ledger.close()
    queues = [queue for queue, _ in broker.sent]
    assert queues[:2] == ["caseboard.handoff", "caseboard.handoff"], broker.sent
    assert [nid for queue, nid in broker.sent if queue == "caseboard.handoff"] == [
        "ws-a@2/handoff/human_review_required",
        "ws-b@2/handoff/human_review_required",
    ]
    history = [nid for queue, nid in broker.sent if queue == "caseboard.history"]
    assert history == sorted(history, key=lambda nid: (nid.split("@")[0], int(nid.split("@")[1].split("/")[0])))
    assert len(history) == 4 and len(broker.sent) > 2
