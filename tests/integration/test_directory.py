"""The console's directory (``caseboard/projections/directory.py``): every workspace's row, folded once from the
notification log, listed per tenant newest first, filtered, paginated, and moved on by what is committed since."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from caseboard.api.services import charged
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.ledger.base import EventsourcingLedger
from caseboard.projections.directory import Directory
from caseboard.reducers import get_reducer
from tests.conftest import open_item


def submit(coordinator: Coordinator, workspace: str, tenant: str, role: str, *items: dict[str, Any]) -> None:
    body = {"workspace_id": workspace, "author": {"principal": f"{role}-1", "role": role}, "items": list(items)}
    outcome = coordinator.submit(parse_contribution(body), f"{tenant}/{workspace}")
    assert outcome["ok"], outcome


def opened(
    tenant: str, service: str = "payments-api", goal: str = "Find out why authentication fails"
) -> dict[str, Any]:
    item = open_item()
    item["scope"] = {**item["scope"], "tenant_id": tenant, "service": service}
    item["goal"] = goal
    return item


def judgment(n: int, tokens: int) -> dict[str, Any]:
    return {
        "type": "judgment",
        "invocation_id": f"inv-{n}",
        "component": "planner.v1 turn",
        "model": "m",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": 1,
        "output": {"usage": {"total_tokens": tokens}},
    }


@pytest.fixture
def stored(ledger_url: str) -> Iterator[tuple[EventsourcingLedger, Coordinator]]:
    ledger = open_ledger(ledger_url)
    try:
        yield ledger, Coordinator(ledger)
    finally:
        ledger.close()


def test_a_tenants_workspaces_newest_first_paginated_filtered_and_moved_on_by_new_commits(
    stored: tuple[EventsourcingLedger, Coordinator],
) -> None:
    ledger, coordinator = stored
    for n in range(7):
        tenant = "tenant-a" if n % 2 == 0 else "tenant-b"
        service = "checkout-api" if n == 4 else "payments-api"
        submit(coordinator, f"ws-{n}", tenant, "operator", opened(tenant, service))
    submit(coordinator, "ws-2", "tenant-a", "operator", {"type": "status", "to": "budget_exhausted", "reason": "spent"})
    submit(coordinator, "ws-6", "tenant-a", "planner", judgment(1, 300), judgment(2, 200))
    directory = Directory(ledger.outbox, get_reducer(), 12, charged)
    directory.refresh()
    page = directory.listing("tenant-a", limit=3)
    assert [r["workspace_id"] for r in page["workspaces"]] == ["ws-6", "ws-4", "ws-2"]
    assert page["total"] == 4
    rest = directory.listing("tenant-a", limit=3, before=page["next_before"])
    assert [r["workspace_id"] for r in rest["workspaces"]] == ["ws-0"] and rest["next_before"] is None
    others = directory.listing("tenant-b")["workspaces"]
    assert [r["workspace_id"] for r in others] == ["ws-5", "ws-3", "ws-1"]
    assert [r["order"] for r in others] == [2, 1, 0]  # counted in the tenant: nothing of tenant-a's shows
    assert directory.listing("tenant-c") == {"tenant_id": "tenant-c", "total": 0, "workspaces": [], "next_before": None}
    needs = directory.listing("tenant-a", needs_person=True)["workspaces"]
    assert [(r["workspace_id"], r["needs_person"]) for r in needs] == [("ws-2", ["budget_exhausted"])]
    assert [
        r["workspace_id"] for r in directory.listing("tenant-a", statuses=frozenset({"investigating"}))["workspaces"]
    ] == ["ws-6", "ws-4", "ws-0"]
    assert [r["workspace_id"] for r in directory.listing("tenant-a", text="CHECKOUT")["workspaces"]] == ["ws-4"]
    assert [r["workspace_id"] for r in directory.listing("tenant-a", text="ws-0")["workspaces"]] == ["ws-0"]
    agent = directory.listing("tenant-a", text="ws-6")["workspaces"][0]
    assert agent["model_calls"] == {"used": 2, "budget": 6 * 12, "tokens": 500}
    assert agent["cycles"] == {"used": 0, "budget": 6}
    assert agent["late_counterevidence"] == 0  # workspace-rules-v4 lists none here (ADR 0165)

    moved_a, moved_b = directory.moved("tenant-a"), directory.moved("tenant-b")
    submit(
        coordinator, "ws-0", "tenant-a", "operator", {"type": "status", "to": "human_review_required", "reason": "r"}
    )
    assert directory.listing("tenant-a", needs_person=True)["total"] == 1  # not read again until refreshed
    directory.refresh()
    assert directory.moved("tenant-a") == moved_a + 1 and directory.moved("tenant-b") == moved_b
    needs = directory.listing("tenant-a", needs_person=True)["workspaces"]
    assert [(r["workspace_id"], r["workspace_version"]) for r in needs] == [("ws-2", 2), ("ws-0", 2)]


def test_late_counterevidence_is_read_from_the_projection_when_the_reducer_renders_it() -> None:
    ledger = open_ledger("memory://")
    try:
        coordinator = Coordinator(ledger)
        submit(coordinator, "ws-late", "tenant-a", "operator", opened("tenant-a"))
        submit(coordinator, "ws-calm", "tenant-a", "operator", opened("tenant-a"))
        current = get_reducer()

        def projection(state: Any, reducer: Any) -> dict[str, Any]:
            late = [{"observation": "obs-before-change"}] if state.workspace_id == "ws-late" else []
            return {**current.projection(state, reducer), "late_counterevidence": late}

        directory = Directory(ledger.outbox, dataclasses.replace(current, projection=projection), 1, charged)
        directory.refresh()
        rows = {r["workspace_id"]: r for r in directory.listing("tenant-a")["workspaces"]}
        assert rows["ws-late"]["late_counterevidence"] == 1
        assert rows["ws-late"]["needs_person"] == ["late_counterevidence"]
        assert rows["ws-calm"]["late_counterevidence"] == 0 and rows["ws-calm"]["needs_person"] == []
        needs = directory.listing("tenant-a", needs_person=True)["workspaces"]
        assert [r["workspace_id"] for r in needs] == ["ws-late"]
    finally:
        ledger.close()
