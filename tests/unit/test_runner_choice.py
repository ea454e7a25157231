"""Where a host that does not run a notification's participant sends it (docs/adr/0186, 0187): to a process of the
notification's tenant that runs it, else to an operator-wide one, else nowhere (it absorbs it, as nobody would
act on it); a host that runs the participant acts on it whoever else announced themselves."""

from __future__ import annotations

from typing import Any

import pytest

from caseboard.dispatcher.broker import Elsewhere, runner_queue, tenant_queue
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.workers.host import ConsumerHost

PLANNER = "caseboard.planner"
KEY = "tenant-a/inc-1"
NOTICE = Notification(
    id=f"{KEY}@2/evidence_changed/hyp-1",
    kind="evidence_changed",
    audience="planner",
    workspace_id=KEY,
    workspace_version=2,
    subject="hyp-1",
).model_dump(exclude_none=True)


class Planner:
    principal = "planner-1"

    def contribute(self, notification: Any, view: Any) -> None:
        return None


@pytest.fixture
def store(sqlite_dispatch_store: DispatchStore) -> DispatchStore:
    return sqlite_dispatch_store


def host(
    store: DispatchStore, announced: set[str], tenant: str | None = "tenant-a", **participants: Any
) -> ConsumerHost:
    return ConsumerHost(
        store, None, participants, tenant=tenant, tenant_of=lambda key: None, present=announced.__contains__
    )


@pytest.mark.parametrize("tenant", ["tenant-a", None], ids=["host-of-the-tenant", "host-of-every-tenant"])
def test_the_tenant_s_runner_goes_before_an_operator_wide_one(store: DispatchStore, tenant: str | None) -> None:
    own, anyone = runner_queue(PLANNER, "tenant-a"), runner_queue(PLANNER, None)
    assert host(store, {own, anyone}, tenant).handle(NOTICE) == Elsewhere(PLANNER, "tenant-a", runner=own)
    assert host(store, {anyone}, tenant).handle(NOTICE) == Elsewhere(PLANNER, "tenant-a", runner=anyone)
    # another tenant's runner, or a runner of another queue, takes nothing: the host absorbs it
    others = {runner_queue(PLANNER, "tenant-b"), runner_queue("caseboard.verifier", None)}
    assert host(store, others, tenant).handle(NOTICE) is None
    assert store.processed([(PLANNER, NOTICE["id"])]) == {(PLANNER, NOTICE["id"])}


def test_a_host_that_runs_the_participant_acts_on_it_and_announces_its_runner_queue(store: DispatchStore) -> None:
    anyone = runner_queue(PLANNER, None)
    everywhere = host(store, {anyone, runner_queue(PLANNER, "tenant-a")}, None, planner=Planner())
    assert everywhere.handle(NOTICE) is None
    assert everywhere.own_queues([PLANNER, "caseboard.verifier"]) == [(anyone, PLANNER)]
    ours = host(store, set(), "tenant-a", planner=Planner())
    assert (runner_queue(PLANNER, "tenant-a"), PLANNER) in ours.own_queues([PLANNER])
    assert (tenant_queue(PLANNER, "tenant-a"), PLANNER) in ours.own_queues([PLANNER])
    assert anyone not in dict(ours.own_queues([PLANNER]))


def test_a_passive_host_passes_a_snapshot_notice_on_to_a_controller_and_absorbs_it_with_none(
    store: DispatchStore,
) -> None:
    """docs/adr/0188: a passive host runs no controller; one that does announces the snapshot queue's runner."""
    snapshot = {**NOTICE, "id": f"{KEY}@2/snapshot_changed", "kind": "snapshot_changed", "audience": "snapshot"}
    controllers = runner_queue("caseboard.snapshot", "tenant-a")
    passive = ConsumerHost(
        store, None, {}, tenant="tenant-a", tenant_of=lambda key: None, present={controllers}.__contains__
    )
    assert passive.handle(snapshot) == Elsewhere("caseboard.snapshot", "tenant-a", runner=controllers)
    alone = ConsumerHost(store, None, {}, tenant="tenant-a", tenant_of=lambda key: None, present=set().__contains__)
    assert alone.handle(snapshot) is None
    assert store.processed([("caseboard.snapshot", snapshot["id"])]) == {("caseboard.snapshot", snapshot["id"])}
