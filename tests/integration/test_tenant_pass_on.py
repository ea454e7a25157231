"""Where another tenant's notification goes (docs/adr/0183): at once to its tenant's own queue when a process of
that tenant announced itself there, else back to its shared queue with a growing delay, eight times at most,
then to nobody (the dispatcher re-drives it); announcements lapse, a stopping worker's lasts a restart's grace
(docs/adr/0192), and a running one announces itself again once a restarted broker answers."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.stub import StubBroker
from dramatiq.common import dq_name
from structlog.testing import capture_logs

from caseboard.dispatcher.broker import (
    HAND_BACKS,
    PRESENCE_TTL_S,
    RESTART_GRACE_S,
    Announcing,
    Elsewhere,
    Presence,
    actor_name,
    pass_on,
    runner_queue,
    tenant_queue,
)
from caseboard.dispatcher.store import DispatchStore
from caseboard.dispatcher.waking import WakingRedisBroker
from caseboard.workers.host import HANDOFF_QUEUE, ConsumerHost
from caseboard.workers.live import consume
from tests.conftest import REDIS_URL
from tests.e2e.procs import poll
from tests.private_services import private_redis

pytestmark = [pytest.mark.redis]

SHARED = "caseboard.history"
BODY = {
    "id": "tenant-b/inc-1@3/commit",
    "kind": "commit",
    "audience": "history",
    "workspace_id": "tenant-b/inc-1",
    "workspace_version": 3,
}


@pytest.fixture
def presence() -> Iterator[Presence]:
    client = redis.Redis.from_url(REDIS_URL)
    yield Presence(client, f"cbtest-{uuid.uuid4().hex[:10]}", ttl_s=0.5)
    client.close()


@pytest.fixture
def broker() -> Iterator[StubBroker]:
    broker = StubBroker()
    broker.emit_after("process_boot")
    for queue in (SHARED, tenant_queue(SHARED, "tenant-b")):
        broker.declare_queue(queue)
    yield broker
    broker.close()


def taken(broker: StubBroker, queue: str) -> list[dramatiq.Message[Any]]:
    found = []
    while not broker.queues[queue].empty():
        found.append(dramatiq.Message.decode(broker.queues[queue].get_nowait()))
    return found


def test_an_announced_tenant_gets_its_notification_on_its_own_queue_at_once(
    broker: StubBroker, presence: Presence
) -> None:
    own = tenant_queue(SHARED, "tenant-b")
    presence.announce([own])
    pass_on(broker, presence, Elsewhere(SHARED, "tenant-b"), BODY)
    [message] = taken(broker, own)
    assert message.args == (BODY,) and "eta" not in message.options
    assert taken(broker, dq_name(SHARED)) == [] and taken(broker, SHARED) == []


def test_a_tenant_nobody_announced_gets_it_back_on_the_shared_queue_later_each_time_then_the_re_drive(
    broker: StubBroker, presence: Presence
) -> None:
    presence.announce([tenant_queue(SHARED, "tenant-a")])  # another tenant's announcement does not count
    delays = []
    body: dict[str, Any] = BODY
    for times in range(1, HAND_BACKS + 1):
        pass_on(broker, presence, Elsewhere(SHARED, "tenant-b"), body)
        [message] = taken(broker, dq_name(SHARED))
        assert message.args[0]["handed_back"] == times
        delays.append(message.options["eta"] - message.message_timestamp)
        body = message.args[0]
    assert delays == sorted(delays) and delays[0] >= 50 and delays[-1] >= 50 * 2 ** (HAND_BACKS - 1)
    with capture_logs() as logs:
        pass_on(broker, presence, Elsewhere(SHARED, "tenant-b"), body)
    assert taken(broker, dq_name(SHARED)) == [] and taken(broker, tenant_queue(SHARED, "tenant-b")) == []
    assert [e["event"] for e in logs] == ["notification_left_to_redrive"]


def test_a_notification_of_an_unknown_tenant_goes_back_to_its_shared_queue(
    broker: StubBroker, presence: Presence
) -> None:
    pass_on(broker, presence, Elsewhere(SHARED, None), BODY)
    [message] = taken(broker, dq_name(SHARED))
    assert message.args[0]["handed_back"] == 1


def test_a_runner_queue_the_host_found_announced_is_sent_to_without_asking_the_broker_again(
    broker: StubBroker, presence: Presence
) -> None:
    """``ConsumerHost._run_elsewhere`` has just found the runner queue announced (docs/adr/0186): one round trip
    to Redis fewer per notification passed on."""
    runner = runner_queue(SHARED, "tenant-b")
    broker.declare_queue(runner)
    asked: list[str] = []
    counting = Presence(presence.client, presence.namespace)
    counting.present = lambda queue: bool(asked.append(queue))  # type: ignore[method-assign]
    pass_on(broker, counting, Elsewhere(SHARED, "tenant-b", runner=runner), BODY)
    [message] = taken(broker, runner)
    assert message.args == (BODY,) and asked == []


def test_announcements_lapse(presence: Presence) -> None:
    own = tenant_queue(SHARED, "tenant-b")
    presence.announce([own])
    assert presence.present(own) and not presence.present(SHARED)
    poll("the announcement lapsed", lambda: not presence.present(own), timeout=5)


def test_a_broker_that_does_not_answer_leaves_the_notification_to_the_re_drive(broker: StubBroker) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    with capture_logs() as logs:
        pass_on(broker, Presence(client, "cbtest-down"), Elsewhere(SHARED, "tenant-b"), BODY)
    assert [e["event"] for e in logs] == ["notification_pass_on_failed"]
    assert all(taken(broker, queue) == [] for queue in list(broker.queues))


def test_a_worker_of_one_tenant_announces_its_own_queues_until_it_stops_and_a_restarts_grace_after(
    tmp_path: Path,
) -> None:
    namespace = f"cbtest-{uuid.uuid4().hex[:10]}"
    broker = WakingRedisBroker(url=REDIS_URL, namespace=namespace)
    store = DispatchStore(f"sqlite:///{tmp_path}/ledger.db")
    host = ConsumerHost(store, None, {}, tenant="tenant-a", tenant_of=lambda key: None)
    presence = Presence(broker.client, namespace)
    own = tenant_queue(SHARED, "tenant-a")
    worker = consume(broker, host, [SHARED, HANDOFF_QUEUE, "caseboard.planner"], threads=1, poll_ms=10)
    try:
        assert set(worker.consumers) >= {SHARED, own, HANDOFF_QUEUE, tenant_queue(HANDOFF_QUEUE, "tenant-a")}
        # a handoff goes first among the messages a worker holds, from either of its queues (a person waits)
        assert broker.actors[actor_name(tenant_queue(HANDOFF_QUEUE, "tenant-a"))].priority == -1
        assert broker.actors[actor_name(own)].priority == 0
        # without participants it acts on the controller's, the views' and the handoffs' queues only
        assert "caseboard.planner.tenant" not in " ".join(worker.consumers)
        assert host.own_queues(["caseboard.planner", SHARED]) == [(own, SHARED)]
        assert presence.present(own)
        assert not presence.present(tenant_queue(SHARED, "tenant-b"))
    finally:
        worker.stop()
        lasts = broker.client.pttl(f"{namespace}:consumed:{own}")  # milliseconds left
        broker.close()
        store.close()
    # what is passed on meanwhile waits for the process that replaces it (docs/adr/0192), then the announcement ends
    assert 0 < lasts <= RESTART_GRACE_S * 1000 < PRESENCE_TTL_S * 1000


def test_an_announcement_survives_a_broker_restart_with_one_warning_and_holds_again_once_it_answers() -> None:
    with private_redis() as server:
        client = redis.Redis.from_url(server.url, socket_connect_timeout=0.5, socket_timeout=0.5)
        own = tenant_queue(SHARED, "tenant-a")
        announcing = Announcing(Presence(client, "cbtest"), [own])
        with capture_logs() as logs:
            announcing.renew()
            server.stop()
            announcing.renew()
            announcing.renew()
            server.start()  # empty: it kept nothing
            assert not Presence(client, "cbtest").present(own)
            announcing.renew()
        assert [e["event"] for e in logs] == [
            "consumers_announced",
            "consumers_announcement_failed",
            "consumers_announced",
        ]
        assert Presence(client, "cbtest").present(own)
        client.close()
