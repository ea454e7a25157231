"""Committing from an event loop without a thread (ADR 0035): the loop's own group commit on PostgreSQL, and
the coordinator's common case on it, which hands everything else back to a thread."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import EventsourcingLedger, VersionTaken, open_ledger
from caseboard.ledger.connections import ended_by_server
from caseboard.projections import Workspaces
from tests.conftest import contribution
from tests.http_server import observation
from tests.integration.test_postgres_append import open_workspace

pytestmark = pytest.mark.postgres


@pytest.fixture
def ledger(postgres_url: str) -> Iterator[EventsourcingLedger]:
    ledger = open_ledger(postgres_url)
    yield ledger
    ledger.close()


def versions(ledger: EventsourcingLedger, workspace_id: str = "ws-1") -> list[int]:
    return [commit.version for commit in ledger.read(workspace_id)]


def test_coroutines_appending_at_once_share_transactions_and_a_taken_version_fails_alone(
    ledger: EventsourcingLedger,
) -> None:
    first = open_workspace(ledger)
    commits = {
        f"ws-{n}": [first.model_copy(update={"workspace_id": f"ws-{n}", "version": v}) for v in range(1, 31)]
        for n in range(2, 9)
    }
    commits["ws-1"] = [first.model_copy(update={"version": v}) for v in range(1, 31)]  # version 1 is taken

    async def write(workspace_id: str) -> list[str]:
        outcomes = []
        for commit in commits[workspace_id]:
            try:
                await ledger.append_on_loop(commit)
                outcomes.append("ok")
            except VersionTaken:
                outcomes.append("taken")
        return outcomes

    async def main() -> dict[str, list[str]]:
        results = await asyncio.gather(*(write(w) for w in commits))
        return dict(zip(commits, results, strict=True))

    outcomes = asyncio.run(main())
    assert outcomes["ws-1"] == ["taken"] + ["ok"] * 29
    assert all(outcomes[w] == ["ok"] * 30 for w in commits if w != "ws-1")
    appender = ledger.events._on_loop  # type: ignore[attr-defined]
    assert appender.rows == 8 * 30
    assert appender.batches < 8 * 30  # rows that arrived while a batch was on its way shared the next one
    for workspace_id, expected in commits.items():
        assert versions(ledger, workspace_id) == list(range(1, 31))
        if workspace_id != "ws-1":
            assert ledger.read(workspace_id) == expected
    assert ledger.read("ws-1")[0] == first


def test_after_its_connection_is_killed_the_loop_appender_connects_again(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    """A session the server ended while the appender was idle is noticed before the next batch is sent on
    it: the batch goes on a new connection (ADR 0145)."""
    first = open_workspace(ledger)

    async def main() -> None:
        await ledger.append_on_loop(first.model_copy(update={"version": 2}))
        conn = ledger.events._on_loop._conn  # type: ignore[attr-defined]
        with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
        deadline = time.monotonic() + 5
        while not ended_by_server(conn):  # the backend's FATAL message and the socket's end are on their way
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
        await ledger.append_on_loop(first.model_copy(update={"version": 3}))
        assert ledger.events._on_loop._conn is not conn  # type: ignore[attr-defined]

    asyncio.run(main())
    assert versions(ledger) == [1, 2, 3]


def test_a_row_the_server_rejects_is_unavailable_and_the_loop_appender_goes_on(ledger: EventsourcingLedger) -> None:
    first = open_workspace(ledger)

    async def main() -> None:
        with pytest.raises(LedgerUnavailable, match="0x00"):
            await ledger.append_on_loop(first.model_copy(update={"workspace_id": "ws-\x00", "version": 1}))
        await ledger.append_on_loop(first.model_copy(update={"version": 2}))

    asyncio.run(main())
    assert versions(ledger) == [1, 2]


def observe(obs_id: str, principal: str = "log-specialist", role: str = "specialist") -> Any:
    return parse_contribution(contribution([observation(obs_id)], principal, role))


def test_the_coordinator_commits_its_common_case_on_the_loop_and_its_cache_stays_true(
    ledger: EventsourcingLedger,
) -> None:
    open_workspace(ledger)
    coordinator = Coordinator(ledger)
    assert asyncio.run(coordinator.submit_on_loop(observe("obs-1"))) is None  # not cached: a thread loads it
    assert versions(ledger) == [1]
    assert coordinator.submit(observe("obs-1"))["workspace_version"] == 2  # cached from now on

    async def main() -> list[dict[str, Any] | None]:
        return list(await asyncio.gather(*(coordinator.submit_on_loop(observe(f"obs-{n}")) for n in range(2, 6))))

    # The loop's writers of one workspace take turns: all land, in the order they came.
    outcomes = asyncio.run(main())
    assert [outcome["workspace_version"] if outcome else None for outcome in outcomes] == [3, 4, 5, 6]
    assert versions(ledger) == [1, 2, 3, 4, 5, 6]
    cached = coordinator.workspaces.reducer.render(coordinator.workspaces.current("ws-1"))
    assert cached == Workspaces(ledger).show("ws-1")


def test_the_coordinator_hands_back_what_it_cannot_commit_on_the_loop_and_appends_nothing(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    open_workspace(ledger)
    coordinator = Coordinator(ledger, Workspaces(ledger, snapshot_min=4))
    assert coordinator.submit(observe("obs-1"))["ok"]

    refused = observe("obs-2", principal="planner-1", role="planner")  # a planner may not observe
    assert asyncio.run(coordinator.submit_on_loop(refused)) is None
    assert coordinator.submit(refused)["reason"] == "forbidden"

    with coordinator.workspaces.lock("ws-1"):  # a thread of this process holds the workspace
        assert asyncio.run(coordinator.submit_on_loop(observe("obs-3"))) is None
    assert versions(ledger) == [1, 2]

    # Snapshots every 4 commits here, counted from the state loaded at version 1: version 5's is due, and a
    # snapshot is written by a thread.
    landed = [asyncio.run(coordinator.submit_on_loop(observe(f"obs-{n}"))) for n in (3, 4)]
    assert [outcome["workspace_version"] for outcome in landed if outcome is not None] == [3, 4]
    assert coordinator.workspaces.snapshot_due("ws-1", 5)
    assert asyncio.run(coordinator.submit_on_loop(observe("obs-5"))) is None
    assert versions(ledger)[-1] == 4
    assert coordinator.submit(observe("obs-5"))["workspace_version"] == 5
    snapshot = ledger.latest_snapshot("ws-1", coordinator.workspaces.reducer.name, 100)
    assert snapshot is not None and snapshot.version == 5

    rival = open_ledger(postgres_url)  # another process takes version 6 first
    try:
        assert Coordinator(rival).submit(observe("obs-rival"))["workspace_version"] == 6
    finally:
        rival.close()
    assert asyncio.run(coordinator.submit_on_loop(observe("obs-6"))) is None
    cached = coordinator.workspaces.cached("ws-1")
    assert cached is not None and cached.version == 5  # a commit is folded only once it has landed
    assert coordinator.submit(observe("obs-6"))["workspace_version"] == 7  # the thread catches up and lands
    # Processes are racing for the workspace: its commits go to threads.
    assert asyncio.run(coordinator.submit_on_loop(observe("obs-7"))) is None
    assert versions(ledger) == list(range(1, 8))


def test_a_thread_waiting_for_the_workspace_gets_it_once_the_loop_commit_lands(ledger: EventsourcingLedger) -> None:
    open_workspace(ledger)
    coordinator = Coordinator(ledger)
    assert coordinator.submit(observe("obs-1"))["ok"]
    results: list[int] = []

    async def main() -> None:
        thread = threading.Thread(
            target=lambda: results.append(coordinator.submit(observe("obs-t"))["workspace_version"])
        )
        outcome = coordinator.submit_on_loop(observe("obs-l"))
        task = asyncio.ensure_future(outcome)
        await asyncio.sleep(0)  # the loop commit holds the workspace and is on its way
        thread.start()
        landed = await task
        assert landed is not None and landed["workspace_version"] == 3
        await asyncio.to_thread(thread.join, 30)

    asyncio.run(main())
    assert results == [4]
    assert versions(ledger) == [1, 2, 3, 4]
