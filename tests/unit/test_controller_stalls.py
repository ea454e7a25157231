"""A cast that stops answering cannot stall a workspace forever (docs/adr/0159): a request nobody claims within
the turn timeout is taken back with its reason and announced again, and a workspace where no participant has
contributed for ``stall_after_s`` escalates to ``human_review_required`` with a handoff saying what stalled.
The scene is issue 35's: specialists that answer with nothing, two requests nobody claims."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.domain.outcome import Accepted
from caseboard.ledger import open_ledger
from caseboard.workers.controller import Controller
from caseboard.workers.runtime import act

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
WS = "tenant-a/ws-s"


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def at(self, seconds: float) -> None:
        self.now = T0 + timedelta(seconds=seconds)


def submit(coordinator: Coordinator, principal: str, role: str, items: list[dict[str, Any]]) -> None:
    line = json.dumps({"workspace_id": "ws-s", "author": {"principal": principal, "role": role}, "items": items})
    assert coordinator.submit(parse_contribution(line), WS)["ok"]


def tick(coordinator: Coordinator, controller: Controller) -> list[Accepted]:
    version = coordinator.ledger.head(WS)
    notice = Notification(
        id=f"{WS}@{version}/tick",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id=WS,
        workspace_version=version,
    )
    return act(coordinator, controller, notice)


def stalled_scene(stall_after_s: float) -> tuple[Coordinator, Controller, Clock]:
    clock = Clock()
    coordinator = Coordinator(open_ledger("memory://"), clock=clock)
    controller = Controller(coordinator.ledger, clock=clock, turn_timeout_s=60, stall_after_s=stall_after_s)
    submit(coordinator, "oncall-operator", "operator", [open_item(10)])
    assert [i.type for c in tick(coordinator, controller) for i in coordinator.ledger.read(WS)[-1].items] == ["cycle"]
    clock.at(5)
    submit(
        coordinator,
        "planner-1",
        "planner",
        [
            {"type": "work_request", "request_id": "log-query-001", "kind": "log_query", "target": "auth logs"},
            {"type": "work_request", "request_id": "change-001", "kind": "change_calendar", "target": "changes"},
        ],
    )
    clock.at(6)
    tick(coordinator, controller)  # cycle 2: the two specialists, who will answer with nothing
    assert coordinator.ledger.read(WS)[-1].items[0].type == "cycle"
    return coordinator, controller, clock


def test_work_nobody_claims_within_the_timeout_is_taken_back_with_its_reason() -> None:
    coordinator, controller, clock = stalled_scene(stall_after_s=900)
    clock.at(66)  # the turns have timed out; the requests were made 61 s ago
    head = coordinator.ledger.head(WS)
    tick(coordinator, controller)
    [reclaimed] = coordinator.ledger.read(WS, after=head)[:1]
    reasons = {item.request_id: item.reason for item in reclaimed.items if item.type == "work_reclaim"}
    assert set(reasons) == {"log-query-001", "change-001"}
    assert "unclaimed for 61 s since version 3" in reasons["log-query-001"]
    assert "no log_query specialist took it" in reasons["log-query-001"]
    work = {w["request_id"]: w for w in coordinator.workspaces.show(WS)["work"]}
    assert work["log-query-001"]["reclaims"] == 1 and work["log-query-001"]["status"] == "awaiting_result"


def test_a_workspace_without_progress_for_the_bound_escalates_with_a_handoff_saying_what_stalled() -> None:
    coordinator, controller, clock = stalled_scene(stall_after_s=300)
    for second in range(66, 300, 60):  # the controller's ticks: it takes the work back, schedules, waits
        clock.at(second)
        tick(coordinator, controller)
        assert coordinator.workspaces.show(WS)["status"] == "investigating"
    clock.at(306)
    tick(coordinator, controller)
    state = coordinator.workspaces.show(WS)
    assert state["status"] == "human_review_required"
    [status] = [i for i in coordinator.ledger.read(WS)[-1].items if i.type == "status"]
    assert "no participant has contributed for 301 s (since version 3" in status.reason
    assert status.handoff is not None
    assert "Stalled since: version 3 at 2026-03-02T14:00:05+00:00" in status.handoff
    assert "log-query-001 (log_query) unclaimed" in status.handoff
    assert "change-001 (change_calendar) unclaimed" in status.handoff
    clock.at(2000)
    head = coordinator.ledger.head(WS)
    tick(coordinator, controller)
    assert coordinator.ledger.head(WS) == head  # escalated once; nothing more is scheduled
