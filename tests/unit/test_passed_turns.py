"""A turn answered with nothing is a pass, not a turn still awaited (docs/adr/0185).

A participant the controller scheduled may find nothing to do at its turn (a planner waiting for a result that
has not landed): it commits nothing, so nothing in the ledger tells the controller. Its turn notification is
processed all the same, and the controller reads that from the dispatch store: it decides on at once in the
host that ran the turn, at its next tick elsewhere, and still waits for a turn begun and never finished."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.route import route
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.contribution import Author, Contribution
from caseboard.domain.items import Role
from caseboard.ledger import open_ledger
from caseboard.workers.controller import Controller
from caseboard.workers.host import ConsumerHost
from caseboard.workers.runtime import View

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
WS = "ws-p"


class SilentPlanner:
    """A planner with nothing to add at its turns."""

    principal = "planner-1"
    role = Role.PLANNER

    def __init__(self) -> None:
        self.turns: list[str] = []

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        self.turns.append(notification.id)
        return None


@pytest.fixture
def store(sqlite_dispatch_store: DispatchStore) -> DispatchStore:
    return sqlite_dispatch_store


@pytest.fixture
def coordinator() -> Coordinator:
    """A workspace whose controller scheduled the planner alone in cycle 1 (version 2); the clock never moves, so
    no turn ever times out."""
    coordinator = Coordinator(open_ledger("memory://"), clock=lambda: T0)
    opening = Contribution(
        workspace_id=WS, author=Author(principal="oncall-operator", role=Role.OPERATOR), items=[open_item(5)]
    )
    assert coordinator.submit(opening)["ok"]
    cycle = Contribution(
        workspace_id=WS,
        author=Author(principal="controller", role=Role.CONTROLLER),
        items=[{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}],
    )
    assert coordinator.submit(cycle)["ok"]
    return coordinator


def controller_of(coordinator: Coordinator, store: DispatchStore) -> Controller:
    return Controller(coordinator.ledger, clock=lambda: T0, turn_timeout_s=60, processed=store.processed)


def planner_turn(coordinator: Coordinator) -> Notification:
    """The turn notification the dispatcher routes for the cycle at version 2."""
    cycle = coordinator.ledger.read(WS)[-1]
    [turn] = [n for n in route(cycle, coordinator.workspaces.state_at(WS, cycle.version)) if n.kind == "turn"]
    return turn


def status(coordinator: Coordinator) -> tuple[int, str]:
    view = coordinator.workspaces.show(WS)
    return view["workspace_version"], view["status"]


def test_a_passed_turn_is_decided_on_at_once_by_the_controller_of_its_host(
    coordinator: Coordinator, store: DispatchStore
) -> None:
    planner = SilentPlanner()
    host = ConsumerHost(store, coordinator, {"planner": planner}, controller_of(coordinator, store))
    turn = planner_turn(coordinator)
    host.handle(turn.model_dump())
    assert planner.turns == [turn.id]
    # no evidence since the planner passed and no work pending: nobody has anything left to do
    assert status(coordinator) == (3, "evidence_incomplete")


def test_a_controller_in_another_process_takes_the_pass_at_its_next_tick(
    coordinator: Coordinator, store: DispatchStore
) -> None:
    controller_host = ConsumerHost(store, coordinator, {}, controller_of(coordinator, store))
    controller_host.workspaces.add(WS)  # known from the snapshot notices of the opening and the cycle
    controller_host.tick()
    assert status(coordinator) == (2, "investigating")  # the turn is not taken yet: waited for
    ConsumerHost(store, coordinator, {"planner": SilentPlanner()}).handle(planner_turn(coordinator).model_dump())
    assert status(coordinator) == (2, "investigating")  # the planner's host has no controller
    controller_host.tick()
    assert status(coordinator) == (3, "evidence_incomplete")


def test_a_turn_begun_and_never_finished_is_still_waited_for(coordinator: Coordinator, store: DispatchStore) -> None:
    turn = planner_turn(coordinator)
    store.begin(turn.queue, turn.id)  # the planner's process died at its turn: the attempt is counted, no more
    host = ConsumerHost(store, coordinator, {}, controller_of(coordinator, store))
    host.workspaces.add(WS)
    host.tick()
    assert status(coordinator) == (2, "investigating")
