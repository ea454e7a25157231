"""The controller's rules, its budget, and the lease sweeper."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.workers.controller import CycleMemory, decide_next, expired_claims
from caseboard.workers.runtime import bounded_view

NOW = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)


def submit(coordinator: Coordinator, principal: str, role: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    line = json.dumps({"workspace_id": "ws-c", "author": {"principal": principal, "role": role}, "items": items})
    outcome = coordinator.submit(parse_contribution(line))
    assert outcome["ok"], outcome
    return outcome


def opened(cycles: int) -> Coordinator:
    coordinator = Coordinator(open_ledger("memory://"), clock=lambda: NOW)
    submit(coordinator, "operator-1", "operator", [open_item(cycles)])
    return coordinator


def memory_of(coordinator: Coordinator) -> CycleMemory:
    memory = CycleMemory()
    for commit in coordinator.ledger.read("ws-c"):
        memory.fold(commit)
    return memory


def view(coordinator: Coordinator) -> dict[str, Any]:
    return bounded_view(coordinator.workspaces.show("ws-c"))


def test_a_fresh_workspace_gets_the_planner_in_cycle_one() -> None:
    coordinator = opened(3)
    decision = decide_next(view(coordinator), memory_of(coordinator), NOW)
    assert decision.action == "cycle"
    assert decision.items == ({"type": "cycle", "number": 1, "scheduled": ["planner-1"]},)


def test_a_scheduled_participant_is_waited_for_until_its_turn_times_out() -> None:
    coordinator = opened(3)
    submit(coordinator, "controller", "controller", [{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}])
    memory = memory_of(coordinator)
    assert decide_next(view(coordinator), memory, NOW, turn_timeout_s=60).action == "wait"
    later = decide_next(view(coordinator), memory, NOW + timedelta(seconds=61), turn_timeout_s=60)
    assert later.action == "status"
    assert later.items[0]["to"] == "evidence_incomplete"


def test_the_controller_never_schedules_past_the_budget_and_hands_off() -> None:
    coordinator = opened(1)
    submit(coordinator, "controller", "controller", [{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}])
    submit(
        coordinator,
        "planner-1",
        "planner",
        [
            {
                "type": "work_request",
                "request_id": "log-query-001",
                "kind": "log_query",
                "target": "auth logs",
            },
            {"type": "question", "id": "q-1", "text": "When did failures start?"},
        ],
    )
    decision = decide_next(view(coordinator), memory_of(coordinator), NOW)
    assert decision.action == "status"
    [status] = decision.items
    assert status["to"] == "budget_exhausted"
    assert "work log-query-001 is awaiting_result" in status["handoff"]
    assert "question q-1 is open" in status["handoff"]
    submit(coordinator, "controller", "controller", list(decision.items))
    assert view(coordinator)["status"] == "budget_exhausted"
    assert decide_next(view(coordinator), memory_of(coordinator), NOW).action == "none"


def test_nothing_left_to_do_ends_in_evidence_incomplete_with_a_handoff() -> None:
    coordinator = opened(3)
    submit(coordinator, "controller", "controller", [{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}])
    submit(coordinator, "planner-1", "planner", [{"type": "question", "id": "q-1", "text": "When did it start?"}])
    decision = decide_next(view(coordinator), memory_of(coordinator), NOW)
    assert decision.action == "status"
    assert decision.items[0]["to"] == "evidence_incomplete"
    assert "question q-1 is open" in decision.items[0]["handoff"]


def test_a_lapsed_lease_is_reclaimed_and_the_late_holder_is_fenced() -> None:
    coordinator = opened(3)
    submit(
        coordinator,
        "planner-1",
        "planner",
        [{"type": "work_request", "request_id": "log-query-001", "kind": "log_query", "target": "auth logs"}],
    )
    submit(
        coordinator,
        "log-query-specialist",
        "specialist",
        [{"type": "work_claim", "request_id": "log-query-001", "lease_s": 30}],
    )
    assert expired_claims(view(coordinator), NOW + timedelta(seconds=29)) == []
    reclaims = expired_claims(view(coordinator), NOW + timedelta(seconds=31))
    assert [r["request_id"] for r in reclaims] == ["log-query-001"]
    submit(coordinator, "controller", "controller", reclaims)
    work = {w["request_id"]: w for w in view(coordinator)["work"]}["log-query-001"]
    assert work["status"] == "awaiting_result"
    assert work["reclaims"] == 1
    late = json.dumps(
        {
            "workspace_id": "ws-c",
            "author": {"principal": "log-query-specialist", "role": "specialist"},
            "items": [
                {
                    "type": "work_result",
                    "request_id": "log-query-001",
                    "generation": 1,
                    "status": "completed",
                    "summary": "late",
                }
            ],
        }
    )
    assert coordinator.submit(parse_contribution(late))["reason"] == "fenced"


def test_every_decision_is_logged_with_its_reason() -> None:
    from structlog.testing import capture_logs

    from caseboard.dispatcher.notification import Notification
    from caseboard.workers.controller import Controller

    coordinator = opened(3)
    controller = Controller(coordinator.ledger, clock=lambda: NOW)
    notice = Notification(
        id="ws-c@1/snapshot_changed",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id="ws-c",
        workspace_version=1,
    )
    with capture_logs() as logs:
        items = controller.contribute(notice, view(coordinator))
    assert items == [{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}]
    [entry] = [e for e in logs if e["event"] == "controller_decision"]
    assert entry["action"] == "cycle"
    assert entry["reason"] == "scheduling planner-1"
    assert entry["workspace_version"] == 1


def test_the_controller_drives_a_tenants_workspace_by_the_key_its_notification_names() -> None:
    """docs/adr/0130: a workspace opened in a tenant's namespace is read by its key, written to by its id."""
    from caseboard.dispatcher.route import route
    from caseboard.workers.controller import Controller
    from caseboard.workers.runtime import act

    coordinator = Coordinator(open_ledger("memory://"), clock=lambda: NOW)
    line = json.dumps(
        {"workspace_id": "ws-c", "author": {"principal": "op", "role": "operator"}, "items": [open_item(3)]}
    )
    assert coordinator.submit(parse_contribution(line), "tenant-a/ws-c")["ok"]
    assert coordinator.ledger.head("ws-c") == 0
    controller = Controller(coordinator.ledger, clock=lambda: NOW)
    commit = coordinator.ledger.read("tenant-a/ws-c")[0]
    [notice] = [n for n in route(commit, coordinator.workspaces.state_at("tenant-a/ws-c")) if n.audience == "snapshot"]
    assert notice.workspace_id == "tenant-a/ws-c"
    [outcome] = act(coordinator, controller, notice)
    assert outcome.workspace_version == 2
    cycle = coordinator.ledger.read("tenant-a/ws-c", after=1)[0]
    assert (cycle.tenant_id, cycle.workspace_id, cycle.items[0].type) == ("tenant-a", "ws-c", "cycle")
