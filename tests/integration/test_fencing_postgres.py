"""A zombie writer on real PostgreSQL: its claim was reclaimed or taken over after its lease lapsed.

Specialist A writes through its own coordinator and ledger; the controller, the planner and specialist B
through another, as separate processes would. A's result carries the generation it claimed under and an
``expected_version`` that is still current: the generation fence alone must refuse it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from tests.conftest import contribution, open_item

Item = dict[str, Any]
WS = "incident-zombie"
REQUEST = "certificate-check-006"
T0 = datetime(2026, 3, 2, 14, 10, tzinfo=UTC)


@dataclass
class Clock:
    """The fleet's wall clock, moved by the test; every coordinator stamps its commits from it."""

    now: datetime

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Side:
    ledger: EventsourcingLedger
    coordinator: Coordinator

    def submit(self, principal: str, role: str, items: list[Item], **envelope: Any) -> dict[str, Any]:
        raw = contribution(items, principal=principal, role=role, workspace_id=WS, **envelope)
        return self.coordinator.submit(parse_contribution(raw))


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
def sides(postgres_url: str, clock: Clock) -> Iterator[tuple[Side, Side]]:
    """(A's side, everyone else's side), each with its own ledger, and a workspace with one open request."""
    opened = []
    for _ in range(2):
        ledger = open_ledger(postgres_url, pool_size=1)
        opened.append(Side(ledger, Coordinator(ledger, clock=clock)))
    zombie, others = opened
    assert others.submit(
        "oncall-operator",
        "operator",
        [open_item()],
    )["ok"]
    assert others.submit(
        "planner-1",
        "planner",
        [
            {
                "type": "work_request",
                "request_id": REQUEST,
                "kind": "certificate_check",
                "target": "certificate chains presented by payments-api instances",
            }
        ],
    )["ok"]
    yield zombie, others
    for side in opened:
        side.ledger.close()


def claim(side: Side, principal: str, lease_s: int = 300) -> dict[str, Any]:
    item = {"type": "work_claim", "request_id": REQUEST, "lease_s": lease_s}
    return side.submit(principal, "specialist", [item])


def result(side: Side, principal: str, generation: int, obs_id: str, **envelope: Any) -> dict[str, Any]:
    item = {
        "type": "work_result",
        "request_id": REQUEST,
        "generation": generation,
        "status": "completed",
        "summary": f"{principal}: chains differ between instances",
        "observation": {
            "id": obs_id,
            "statement": "payments-api-3 presents an intermediate-less chain",
            "source": {"system": "tls-probe", "instance": "payments-api-3"},
            "event_time": "2026-03-02T14:09:00Z",
            "event_time_quality": "verified",
        },
    }
    return side.submit(principal, "specialist", [item], **envelope)


def assert_zombie_is_fenced(zombie: Side, others: Side, postgres_url: str) -> None:
    head = others.ledger.head(WS)
    refused = result(zombie, "specialist-a", 1, "obs-from-zombie", expected_version=head)
    assert refused["ok"] is False, refused
    assert refused["reason"] == "fenced"
    assert refused["field"] == "items[0].generation"
    assert refused["current_generation"] == 2
    renew = {"type": "work_renew", "request_id": REQUEST, "generation": 1, "lease_s": 300}
    renewed = zombie.submit("specialist-a", "specialist", [renew], expected_version=head)
    assert (renewed["ok"], renewed["reason"]) == (False, "fenced"), renewed
    assert zombie.ledger.head(WS) == head
    assert not any("obs-from-zombie" in commit.model_dump_json() for commit in zombie.ledger.read(WS))
    fresh = open_ledger(postgres_url, pool_size=1)
    try:
        projection = Workspaces(fresh).show(WS)
    finally:
        fresh.close()
    assert projection["workspace_version"] == head
    assert "obs-from-zombie" not in {o["id"] for o in projection["observations"]}
    assert projection["pending_work"] == [{"request_id": REQUEST, "status": "claimed"}]

    accepted = result(others, "specialist-b", 2, "obs-from-b", expected_version=head)
    assert accepted["ok"] is True, accepted
    assert accepted["workspace_version"] == head + 1
    assert accepted["items"][0]["generation"] == 2
    work = {w["request_id"]: w for w in Workspaces(zombie.ledger).show(WS)["work"]}
    assert work[REQUEST]["status"] == "completed"
    assert work[REQUEST]["generation"] == 2


def test_a_zombie_whose_claim_was_reclaimed_is_fenced_though_its_version_is_current(
    sides: tuple[Side, Side], clock: Clock, postgres_url: str
) -> None:
    zombie, others = sides
    first = claim(zombie, "specialist-a")
    assert first["ok"] and first["items"][0]["generation"] == 1, first
    clock.now = T0 + timedelta(seconds=90)  # A has stopped renewing: the controller takes the work back
    reclaim = {"type": "work_reclaim", "request_id": REQUEST, "reason": "specialist-a went silent"}
    reclaimed = others.submit("controller", "controller", [reclaim])
    assert reclaimed["ok"], reclaimed
    assert reclaimed["items"][0]["fenced_generation"] == 1
    second = claim(others, "specialist-b")
    assert second["ok"] and second["items"][0]["generation"] == 2, second
    assert_zombie_is_fenced(zombie, others, postgres_url)


def test_a_zombie_whose_lease_lapsed_by_the_commit_clock_is_fenced_by_the_next_claim(
    sides: tuple[Side, Side], clock: Clock, postgres_url: str
) -> None:
    zombie, others = sides
    first = claim(zombie, "specialist-a", lease_s=60)
    assert first["ok"] and first["items"][0]["generation"] == 1, first
    clock.now = T0 + timedelta(seconds=59)
    early = claim(others, "specialist-b")
    assert early["ok"] is False and early["reason"] == "lease_held", early
    clock.now = T0 + timedelta(seconds=61)
    second = claim(others, "specialist-b")
    assert second["ok"], second
    assert second["items"][0]["generation"] == 2
    assert second["items"][0]["fenced_generation"] == 1
    assert second["items"][0]["fenced_holder"] == "specialist-a"
    assert_zombie_is_fenced(zombie, others, postgres_url)
