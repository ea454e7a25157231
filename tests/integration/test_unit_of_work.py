"""The workspace cache as one unit of work (``Workspaces.writing``): load, decide, save, or drop on failure.

Two caches on one ledger stand for two processes; the ledger's uniqueness on (workspace, version) decides
their races. The API reaches the cache only through the unit's readers (``tenant_of``, ``cached_tenant``,
``head_state``), never its locks.
"""

from __future__ import annotations

import ast
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from caseboard.coordinator import Coordinator
from caseboard.coordinator.decide import decide
from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from tests.integration.test_concurrency_postgres import observation, opening
from tests.private_services import private_postgres

API = Path(__file__).resolve().parents[2] / "caseboard" / "api"
CACHE_INTERNALS = {"lock", "turn", "current", "cached", "catch_up", "landed", "lost_race", "note_lost", "forget"}
NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def ledgers(durable_url: str) -> Iterator[list[EventsourcingLedger]]:
    opened = [open_ledger(durable_url, pool_size=2) for _ in range(2)]
    yield opened
    for ledger in opened:
        ledger.close()


def decided(workspaces: Workspaces, contribution: Contribution) -> Commit:
    """The commit of ``contribution`` on the cached state (the caller holds the workspace)."""
    result = decide(workspaces.current("ws-u"), contribution, NOW, workspaces.reducer)
    assert isinstance(result, Commit)
    return result


def test_a_save_that_loses_its_version_returns_false_with_the_winner_folded(
    ledgers: list[EventsourcingLedger],
) -> None:
    assert Coordinator(ledgers[0]).submit(opening("ws-u"))["ok"]
    mine, theirs = Workspaces(ledgers[0]), Workspaces(ledgers[1])
    with mine.writing("ws-u") as unit:
        assert unit.state.version == 1
        loser = decided(mine, observation("ws-u", "obs-mine", "alice"))
        with theirs.writing("ws-u") as other:
            winner = decided(theirs, observation("ws-u", "obs-theirs", "bob"))
            assert other.save(winner)
        assert loser.version == winner.version == 2
        assert not unit.save(loser)  # taken: nothing of it stays in the cache, the winner's commit is in it
        assert unit.state.version == 2
        assert mine.reducer.render(unit.state) == theirs.show("ws-u")
        again = decided(mine, observation("ws-u", "obs-mine", "alice"))
        assert unit.save(again) and unit.saves == 2
    assert mine.show("ws-u")["workspace_version"] == 3
    assert ledgers[1].head("ws-u") == 3


def test_a_save_that_fails_drops_the_cached_state() -> None:
    with private_postgres() as server:
        ledger = open_ledger(server.url, pool_size=1)
        try:
            assert Coordinator(ledger).submit(opening("ws-u"))["ok"]
            workspaces = Workspaces(ledger)
            with workspaces.writing("ws-u") as unit:
                commit = decided(workspaces, observation("ws-u", "obs-1", "alice"))
                server.stop()  # the database goes away under the writer
                with pytest.raises(LedgerUnavailable):
                    unit.save(commit)
            assert workspaces.cached("ws-u") is None  # never a commit in the cache that did not land
        finally:
            ledger.close()


def test_a_unit_holds_the_workspace_for_this_process(ledgers: list[EventsourcingLedger]) -> None:
    assert Coordinator(ledgers[0]).submit(opening("ws-u"))["ok"]
    coordinator = Coordinator(ledgers[0])
    entered, order = threading.Barrier(2), []

    def second_writer() -> None:
        entered.wait()
        outcome = coordinator.submit(observation("ws-u", "obs-2", "bob"))
        order.append(("bob", outcome["workspace_version"]))

    thread = threading.Thread(target=second_writer)
    thread.start()
    with coordinator.workspaces.writing("ws-u") as unit:
        entered.wait()
        time.sleep(0.2)  # the other writer is waiting for the workspace meanwhile
        commit = decided(coordinator.workspaces, observation("ws-u", "obs-1", "alice"))
        assert unit.save(commit)
        order.append(("alice", commit.version))
    thread.join(10)
    assert order == [("alice", 2), ("bob", 3)]


def test_the_tenant_of_a_workspace_waits_boundedly_for_its_writers(ledgers: list[EventsourcingLedger]) -> None:
    assert Coordinator(ledgers[0]).submit(opening("ws-u"))["ok"]
    workspaces = Workspaces(ledgers[1])
    assert workspaces.cached_tenant("ws-u") is None  # not cached: nothing read
    held = threading.Event()
    release = threading.Event()

    def writer() -> None:
        with workspaces.writing("ws-u"):
            held.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    held.wait(10)
    started = time.monotonic()
    with pytest.raises(LedgerUnavailable):
        workspaces.tenant_of("ws-u", wait_s=0.2)
    assert 0.15 < time.monotonic() - started < 5
    release.set()
    thread.join(10)
    assert workspaces.tenant_of("ws-u", wait_s=1) == workspaces.cached_tenant("ws-u") is not None
    assert workspaces.tenant_of("ws-none", wait_s=1) is None


def test_the_api_never_touches_the_cache_or_its_locks() -> None:
    found = []
    for path in sorted(API.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in CACHE_INTERNALS:
                holder = node.value
                name = holder.attr if isinstance(holder, ast.Attribute) else getattr(holder, "id", "")
                if name == "workspaces":
                    found.append(f"{path.name}:{node.lineno} workspaces.{node.attr}")
    assert found == []
