"""A controller that starts takes up the workspaces under investigation that the controllers before it watched
(docs/adr/0189): one restarted while a workspace waited on a turn timeout or the stall bound, with nothing left
to notify it, used to forget it, and the workspace stayed ``investigating`` for good."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.contribution import Author, Contribution
from caseboard.domain.items import Role
from caseboard.ledger import open_ledger
from caseboard.workers.controller import Controller
from caseboard.workers.host import SNAPSHOT_QUEUE, ConsumerHost

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
WS = "ws-w"
OPERATOR = Author(principal="oncall-operator", role=Role.OPERATOR)


@pytest.fixture
def store(sqlite_dispatch_store: DispatchStore) -> DispatchStore:
    return sqlite_dispatch_store


@pytest.fixture
def coordinator() -> Coordinator:
    coordinator = Coordinator(open_ledger("memory://"), clock=lambda: T0)
    assert coordinator.submit(Contribution(workspace_id=WS, author=OPERATOR, items=[open_item(5)]))["ok"]
    return coordinator


def snapshot(version: int) -> dict[str, object]:
    return Notification(
        id=f"{WS}@{version}/snapshot_changed",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id=WS,
        workspace_version=version,
    ).model_dump(exclude_none=True)


def controller_host(coordinator: Coordinator, store: DispatchStore, tenant: str | None = None) -> ConsumerHost:
    controller = Controller(coordinator.ledger, clock=lambda: T0, turn_timeout_s=60, processed=store.processed)
    return ConsumerHost(store, coordinator, {}, controller, tenant=tenant, tenant_of=lambda key: "tenant-a")


def test_the_store_watches_what_a_controller_took_and_a_later_version_outlives_an_older_unwatch(
    store: DispatchStore,
) -> None:
    store.begin(SNAPSHOT_QUEUE, "n1")
    assert store.finish(SNAPSHOT_QUEUE, "n1", {"ws-1": 3}, watch=True)
    store.begin("caseboard.history", "n2")
    assert store.finish("caseboard.history", "n2", {"ws-2": 1})  # a view taken in, not a controller's to watch
    assert store.watched() == ["ws-1"]
    store.begin(SNAPSHOT_QUEUE, "n3")
    assert store.finish(SNAPSHOT_QUEUE, "n3", {"ws-1": 5}, watch=True)  # reopened at 5
    store.unwatch("ws-1", 4)  # a controller that read it settled at 4
    assert store.watched() == ["ws-1"]
    store.unwatch("ws-1", 5)
    assert store.watched() == []


def test_a_controller_that_starts_decides_on_what_the_one_before_it_watched(
    coordinator: Coordinator, store: DispatchStore
) -> None:
    before = controller_host(coordinator, store)
    assert before.handle(snapshot(1)) is None
    assert coordinator.ledger.head(WS) == 2  # it scheduled cycle 1
    # it stops (or is killed); nothing commits, so no notification would name the workspace again
    after = controller_host(coordinator, store)
    assert after.workspaces == set()
    after.tick()
    assert after.workspaces == {WS}
    # another tenant's controller does not take it up
    elsewhere = controller_host(coordinator, store, tenant="tenant-b")
    elsewhere.tick()
    assert elsewhere.workspaces == set()


def test_a_controller_started_after_a_passive_host_absorbed_the_opening_takes_the_workspace_up(
    coordinator: Coordinator, store: DispatchStore
) -> None:
    """docs/adr/0191: the passive host found no controller announced and absorbed the opening's snapshot notice;
    before, the workspace stayed at version 1 for good."""
    passive = ConsumerHost(
        store, None, {}, tenant="tenant-a", tenant_of=lambda key: "tenant-a", present=lambda q: False
    )
    assert passive.handle(snapshot(1)) is None
    assert coordinator.ledger.head(WS) == 1
    late = controller_host(coordinator, store, tenant="tenant-a")
    late.tick()
    assert coordinator.ledger.head(WS) == 2  # it scheduled cycle 1
    assert late.workspaces == {WS}


def test_a_workspace_out_of_investigation_is_no_longer_watched(coordinator: Coordinator, store: DispatchStore) -> None:
    host = controller_host(coordinator, store)
    assert host.handle(snapshot(1)) is None
    assert store.watched() == [WS]
    escalation = {"type": "status", "to": "human_review_required", "reason": "an operator takes it"}
    assert coordinator.submit(Contribution(workspace_id=WS, author=OPERATOR, items=[escalation]))["ok"]
    host.tick()
    assert host.workspaces == set()
    assert store.watched() == []
    restarted = controller_host(coordinator, store)
    restarted.tick()
    assert restarted.workspaces == set()
