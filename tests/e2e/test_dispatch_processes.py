"""End to end against real PostgreSQL and Redis, with the dispatcher and workers in their own processes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.route import route
from caseboard.dispatcher.store import DispatchStore
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from tests.conftest import play, scenario_lines
from tests.e2e.procs import Cluster, poll
from tests.private_services import PrivateRedis, private_redis

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def play_incident_042(url: str) -> list[tuple[str, str]]:
    """Plays the scenario; returns the (queue, id) of every notification routing promises for it."""
    ledger = open_ledger(url)
    try:
        outcomes = play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
        assert all(o["ok"] for o in outcomes)
        reducer = get_reducer()
        state = reducer.initial("incident-042")
        promised = []
        for commit in ledger.read("incident-042"):
            state = reducer.evolve(state, commit)
            promised += [(n.queue, n.id) for n in route(commit, state)]
        return promised
    finally:
        ledger.close()


def processed(url: str) -> list[tuple[str, str, int]]:
    store = DispatchStore(url)
    try:
        return store.processed_ids()
    finally:
        store.close()


def split(promised: list[tuple[str, str]]) -> tuple[set[tuple[str, str]], set[tuple[str, str]]]:
    snapshots = {p for p in promised if p[0] == "caseboard.snapshot"}
    return set(promised) - snapshots, snapshots


def test_incident_042_produces_the_promised_notifications_each_processed_once(cluster: Cluster) -> None:
    promised = play_incident_042(cluster.database_url)
    every, snapshots = split(promised)
    latest = ("caseboard.snapshot", "incident-042@20/snapshot_changed")
    cluster.spawn("worker", "--passive", "--all-tenants")
    cluster.spawn("dispatch")
    done = poll(
        "every notification processed",
        lambda: (
            (rows := processed(cluster.database_url))
            and every | {latest} <= {(c, n) for c, n, _ in rows}
            and len(rows) == cluster.status()["delivered"]
            and rows
        ),
    )
    seen = {(c, n) for c, n, _ in done}
    assert seen - every <= snapshots  # snapshot notices are coalesced: at least the latest one arrives
    assert ("caseboard.snapshot", "incident-042@20/snapshot_changed") in seen
    assert all(attempts == 1 for _, _, attempts in done)
    status = cluster.status()
    assert status["pending"] == 0
    assert status["head"] == 20
    assert status["duplicates_absorbed"] == 0
    assert status["delivered"] == len(seen)


def test_a_dispatcher_killed_after_sending_re_sends_and_consumers_absorb_the_duplicates(
    cluster: Cluster,
) -> None:
    promised = play_incident_042(cluster.database_url)
    every, _ = split(promised)
    crashed = cluster.spawn("dispatch", CASEBOARD_DISPATCH_TEST_HOOK="pause-after-send")
    poll("the dispatcher to hand a batch over", lambda: cluster.saw(crashed, "dispatch_test_hook"))
    cluster.kill(crashed)
    assert cluster.status()["position"] == [0, 0]  # the batch was sent, the position never stored
    cluster.spawn("worker", "--passive", "--all-tenants")
    batch = len(every) + 1  # one coalesced snapshot notice for the whole batch
    first = poll(
        "the first copies processed",
        lambda: (rows := processed(cluster.database_url)) and len(rows) == batch and rows,
    )
    assert every <= {(c, n) for c, n, _ in first}
    cluster.spawn("dispatch")
    status = poll(
        "the re-sent batch absorbed",
        lambda: (s := cluster.status()) and s["duplicates_absorbed"] == len(first) and s["pending"] == 0 and s,
    )
    assert status["duplicates_absorbed"] == len(first)
    assert status["pending"] == 0
    assert processed(cluster.database_url) == first


def test_a_worker_killed_mid_message_gets_it_redelivered_and_its_effect_happens_once(
    cluster: Cluster,
) -> None:
    ledger = open_ledger(cluster.database_url)
    try:
        coordinator = Coordinator(ledger)
        for principal, role, items in (
            (
                "op",
                "operator",
                [
                    {
                        "type": "open",
                        "scope": {"tenant_id": "t", "environment": "e", "service": "s"},
                        "goal": "g",
                        "execution_mode": "read_only",
                        "runtime_limits": {
                            "max_selected_items": 20,
                            "max_investigation_cycles": 3,  # 0 would let the controller stop it before the claim
                            "max_open_questions": 5,
                            "max_proposals": 5,
                            "max_pending_work": 5,
                        },
                    }
                ],
            ),
            (
                "planner-1",
                "planner",
                [
                    {
                        "type": "work_request",
                        "request_id": "log-query-001",
                        "kind": "log_query",
                        "target": "auth logs",
                    }
                ],
            ),
        ):
            line = json.dumps(
                {"workspace_id": "ws-kill", "author": {"principal": principal, "role": role}, "items": items}
            )
            assert coordinator.submit(parse_contribution(line))["ok"]
        queue = "caseboard.specialist.log_query"
        victim = cluster.spawn(
            "worker",
            "--all-tenants",
            "--participant",
            "scripted",
            "--kinds",
            "log_query",
            CASEBOARD_DRAMATIQ_HEARTBEAT_MS="1000",
            CASEBOARD_WORKER_TEST_HOOK=f"pause-after-effect:{queue}",
        )
        cluster.spawn("dispatch", "--redrive-after", "3600")
        poll("the worker to stop mid-message", lambda: cluster.saw(victim, "worker_test_hook"))
        cluster.kill(victim)
        items_before = [item.type for commit in ledger.read("ws-kill") for item in commit.items]
        assert items_before.count("work_result") == 1  # the effect happened; the message was never acked
        cluster.spawn(
            "worker",
            "--all-tenants",
            "--participant",
            "scripted",
            "--kinds",
            "log_query",
            CASEBOARD_DRAMATIQ_HEARTBEAT_MS="1000",
        )

        def redelivered() -> list[tuple[str, str, int]]:
            return [row for row in processed(cluster.database_url) if row[0] == queue]

        [(_, nid, attempts)] = poll("the message redelivered and processed", redelivered)
        assert nid == "ws-kill@2/work_requested/log-query-001"
        assert attempts == 2
        items: list[Any] = [item for commit in ledger.read("ws-kill") for item in commit.items]
        assert [i.type for i in items].count("work_claim") == 1
        assert [i.type for i in items].count("work_result") == 1
    finally:
        ledger.close()  # also when an assertion fails: an open connection would fail a later test


@pytest.fixture
def private_cluster(postgres_url: str, tmp_path: Path) -> Iterator[tuple[Cluster, PrivateRedis]]:
    """Processes on a Redis server of the test's own, which the test may restart: never the machine's."""
    with private_redis() as server:
        cluster = Cluster(postgres_url, tmp_path, server.url)
        try:
            yield cluster, server
        finally:
            cluster.close()


@pytest.mark.parametrize("loss", ["keys deleted", "server restarted"])
def test_messages_redis_lost_while_work_was_pending_are_re_driven_from_postgres(
    private_cluster: tuple[Cluster, PrivateRedis], loss: str
) -> None:
    cluster, server = private_cluster
    promised = play_incident_042(cluster.database_url)
    every, _ = split(promised)
    cluster.spawn("dispatch", "--redrive-after", "2", "--poll", "0.2")
    status = poll(
        "the outbox handed over",
        lambda: (s := cluster.status()) and s["pending"] == 0 and s["delivered"] > 0 and s,
    )
    assert status["processed"] == 0
    if loss == "keys deleted":
        assert cluster.flush_redis() > 0  # every pending message is gone from the broker
    else:
        server.restart()  # no persistence: every pending message is gone; the dispatcher keeps running
    cluster.spawn("worker", "--passive", "--all-tenants")
    done = poll(
        "every notification processed after the re-drive",
        lambda: (rows := processed(cluster.database_url)) and len(rows) == status["delivered"] and rows,
    )
    assert every <= {(c, n) for c, n, _ in done}
    assert all(attempts == 1 for _, _, attempts in done)


@pytest.mark.parametrize(("cycles", "ending"), [(1, "budget_exhausted"), (6, "human_review_required")])
def test_the_controller_runs_scripted_workers_within_the_budget_across_processes(
    cluster: Cluster, cycles: int, ending: str
) -> None:
    """One cycle always runs out: the specialists' observations make the planner wanted again. Two cycles are
    a race (the verifier may confirm on its own ``claim_to_check`` once the certificate check is in, or wait
    for a third cycle), so they would assert timing, not behaviour."""
    from caseboard.cli.live_demo import open_item
    from caseboard.projections import Workspaces

    ledger = open_ledger(cluster.database_url)
    line = json.dumps(
        {
            "workspace_id": "ws-live",
            "author": {"principal": "op", "role": "operator"},
            "items": [open_item(cycles)],
        }
    )
    assert Coordinator(ledger).submit(parse_contribution(line))["ok"]
    cluster.spawn("worker", "--all-tenants", "--participant", "scripted", "--tick", "0.5", "--turn-timeout", "10")
    cluster.spawn("dispatch")

    def ended() -> dict[str, Any] | None:
        projection = Workspaces(ledger).show("ws-live")
        return projection if projection["status"] != "investigating" else None

    projection = poll("the investigation to end", ended)
    assert projection["status"] == ending
    assert projection["cycles_used"] <= cycles
    cycle_items = [i for c in ledger.read("ws-live") for i in c.items if i.type == "cycle"]
    assert [i.number for i in cycle_items] == list(range(1, len(cycle_items) + 1))
    assert len(cycle_items) <= cycles
    if ending == "budget_exhausted":
        assert len(cycle_items) == cycles
        assert projection["status_detail"]["handoff"].startswith("Unresolved: ")
    ledger.close()
