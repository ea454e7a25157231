"""A plain worker beside a process that runs participants does not swallow their notifications (docs/adr/0186).

Both consume the shared role queues on a real Redis. The plain worker, which runs no planner, passes each planner
notification on to the runner queue where the process that runs the planner has announced itself (its tenant's,
or, for an operator-wide process, every tenant's: docs/adr/0187); with
no such process anywhere it absorbs them as before (nobody would act on them, and the re-drive would send them
forever)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any, cast

import dramatiq
import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator
from caseboard.dispatcher.broker import Presence, message_for
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.dispatcher.waking import WakingRedisBroker
from caseboard.domain.contribution import Author, Contribution
from caseboard.domain.items import Role
from caseboard.ledger import open_ledger
from caseboard.workers.controller import Controller
from caseboard.workers.host import ConsumerHost
from caseboard.workers.live import consume
from caseboard.workers.runtime import View
from tests.conftest import REDIS_URL
from tests.e2e.procs import poll

pytestmark = [pytest.mark.redis]

KEY = "tenant-a/inc-1"
PLANNER_QUEUE = "caseboard.planner"
NOTICES = 24


class RecordingPlanner:
    principal = "planner-1"
    role = Role.PLANNER

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        with self._lock:
            self.seen.append(notification.id)
        return None


def notice(version: int) -> Notification:
    return Notification(
        id=f"{KEY}@{version}/evidence_changed/hyp-{version}",
        kind="evidence_changed",
        audience="planner",
        workspace_id=KEY,
        workspace_version=version,
        subject=f"hyp-{version}",
    )


@pytest.fixture
def coordinator() -> Coordinator:
    coordinator = Coordinator(open_ledger("memory://"))
    opening = Contribution(
        workspace_id="inc-1", author=Author(principal="oncall-operator", role=Role.OPERATOR), items=[open_item(5)]
    )
    assert coordinator.submit(opening, KEY)["ok"]
    return coordinator


@pytest.fixture
def store(sqlite_dispatch_store: DispatchStore) -> DispatchStore:
    return sqlite_dispatch_store


@pytest.fixture
def namespace() -> str:
    return f"cbtest-{uuid.uuid4().hex[:10]}"


def plain_host(
    store: DispatchStore,
    coordinator: Coordinator,
    namespace: str,
    broker: WakingRedisBroker,
    tenant: str | None = "tenant-a",
) -> ConsumerHost:
    presence = Presence(broker.client, namespace)
    return ConsumerHost(store, coordinator, {}, tenant=tenant, tenant_of=lambda key: None, present=presence.present)


def processed(store: DispatchStore) -> set[tuple[str, str]]:
    return store.processed([(PLANNER_QUEUE, notice(v).id) for v in range(1, NOTICES + 1)])


def side_by_side(
    store: DispatchStore,
    namespace: str,
    acting: ConsumerHost,
    beside: Callable[[WakingRedisBroker], ConsumerHost],
    notices: list[Notification],
) -> None:
    """``acting`` and the host ``beside`` makes consume the notices' shared queue, each on a broker of its own;
    ``notices`` go in through the second one's broker. Returns once every one is processed."""
    [queue] = {n.queue for n in notices}
    brokers = [WakingRedisBroker(url=REDIS_URL, namespace=namespace) for _ in range(2)]
    workers: list[dramatiq.Worker] = []
    try:
        workers.append(consume(brokers[0], acting, [queue], threads=2, poll_ms=10))
        workers.append(consume(brokers[1], beside(brokers[1]), [queue], threads=2, poll_ms=10))
        for one in notices:
            brokers[1].enqueue(message_for(one))
        ids = [(queue, n.id) for n in notices]
        poll("every notification processed", lambda: len(store.processed(ids)) == len(notices), timeout=20)
    finally:
        for worker in workers:
            worker.stop()
        for broker in brokers:
            broker.close()


@pytest.mark.parametrize(
    ("acting_tenant", "plain_tenant"),
    [("tenant-a", "tenant-a"), (None, "tenant-a"), (None, None)],
    ids=["both-of-the-tenant", "planner-operator-wide", "both-operator-wide"],
)
def test_a_plain_worker_passes_the_planner_s_notifications_on_to_the_process_that_runs_it(
    store: DispatchStore, coordinator: Coordinator, namespace: str, acting_tenant: str | None, plain_tenant: str | None
) -> None:
    """The process that runs the planner acts for the tenant (docs/adr/0186) or for every tenant (``--all-tenants``,
    docs/adr/0187), and so may the plain worker beside it."""
    planner = RecordingPlanner()
    acting = ConsumerHost(store, coordinator, {"planner": planner}, tenant=acting_tenant, tenant_of=lambda key: None)
    notices = [notice(version) for version in range(1, NOTICES + 1)]
    side_by_side(
        store,
        namespace,
        acting,
        lambda broker: plain_host(store, coordinator, namespace, broker, plain_tenant),
        notices,
    )
    # each one reached the planner, once, whichever worker took it from the shared queue
    assert sorted(planner.seen) == sorted(notice(v).id for v in range(1, NOTICES + 1))


def test_with_no_process_running_the_planner_a_plain_worker_absorbs_its_notifications(
    store: DispatchStore, coordinator: Coordinator, namespace: str
) -> None:
    broker = WakingRedisBroker(url=REDIS_URL, namespace=namespace)
    worker = consume(broker, plain_host(store, coordinator, namespace, broker), [PLANNER_QUEUE], 2, 10)
    try:
        for version in range(1, NOTICES + 1):
            broker.enqueue(message_for(notice(version)))
        poll("every notification absorbed", lambda: len(processed(store)) == NOTICES, timeout=20)
    finally:
        worker.stop()
        broker.close()


class RecordingController(RecordingPlanner):
    principal = "controller"
    role = Role.CONTROLLER


def snapshot_notice(number: int) -> Notification:
    """The notice of workspace ``inc-<number>``'s opening."""
    key = f"tenant-a/inc-{number}"
    return Notification(
        id=f"{key}@1/snapshot_changed",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id=key,
        workspace_version=1,
    )


@pytest.mark.parametrize(
    "acting_tenant", ["tenant-a", None], ids=["controller-of-the-tenant", "controller-operator-wide"]
)
def test_a_passive_worker_passes_the_snapshot_notices_on_to_the_process_that_runs_the_controller(
    store: DispatchStore, coordinator: Coordinator, namespace: str, acting_tenant: str | None
) -> None:
    """A passive worker (no coordinator, no controller) beside an agent started ``--with-controller`` took the
    snapshot notices the controller decides on and finished them unseen: the controller never learnt of the
    workspace (docs/adr/0188). It passes each on to the controller's runner queue."""
    for number in range(2, NOTICES + 1):
        opening = Contribution(
            workspace_id=f"inc-{number}",
            author=Author(principal="oncall-operator", role=Role.OPERATOR),
            items=[open_item(5)],
        )
        assert coordinator.submit(opening, f"tenant-a/inc-{number}")["ok"]
    controller = RecordingController()
    acting = ConsumerHost(
        store, coordinator, {}, cast(Controller, controller), tenant=acting_tenant, tenant_of=lambda key: None
    )

    def passive(broker: WakingRedisBroker) -> ConsumerHost:
        present = Presence(broker.client, namespace).present
        return ConsumerHost(store, None, {}, tenant="tenant-a", tenant_of=lambda key: None, present=present)

    side_by_side(store, namespace, acting, passive, [snapshot_notice(n) for n in range(1, NOTICES + 1)])
    # the controller decided on each workspace, whichever worker took its notice from the shared queue
    assert sorted(controller.seen) == sorted(snapshot_notice(n).id for n in range(1, NOTICES + 1))
    assert acting.workspaces == {snapshot_notice(n).workspace_id for n in range(1, NOTICES + 1)}
