"""Appending commits on PostgreSQL: the store decides who gets a version; a closed ledger is unavailable."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import EventsourcingLedger, VersionTaken, open_ledger
from caseboard.ledger.connections import ended_by_server
from tests.conftest import contribution

pytestmark = pytest.mark.postgres

LIMITS = {
    "max_selected_items": 1,
    "max_investigation_cycles": 1,
    "max_open_questions": 1,
    "max_proposals": 1,
    "max_pending_work": 1,
}


def open_workspace(ledger: EventsourcingLedger) -> Commit:
    item = {
        "type": "open",
        "scope": {"tenant_id": "t", "environment": "e", "service": "s"},
        "goal": "g",
        "runtime_limits": LIMITS,
        "execution_mode": "read_only",
    }
    outcome = Coordinator(ledger).submit(parse_contribution(contribution([item], "operator-1", "operator")))
    assert outcome["ok"] is True
    return ledger.read("ws-1")[0]


def test_a_second_append_of_the_same_version_is_version_taken_and_changes_nothing(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    try:
        first = open_workspace(ledger)
        rival = first.model_copy(update={"author": first.author.model_copy(update={"principal": "op-2"})})
        with pytest.raises(VersionTaken):
            ledger.append(rival)
        assert ledger.read("ws-1") == [first]
    finally:
        ledger.close()


def test_appending_to_a_closed_ledger_is_ledger_unavailable(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    first = open_workspace(ledger)
    ledger.close()
    with pytest.raises(LedgerUnavailable):
        ledger.append(first.model_copy(update={"version": 2}))


def test_concurrent_appends_of_one_process_share_transactions_and_a_taken_version_fails_alone(
    postgres_url: str,
) -> None:
    """Eight threads append to one ledger at once, released by a barrier: their rows are grouped into
    multi-row INSERTs; the thread whose version is taken gets VersionTaken, every other row lands."""
    ledger = open_ledger(postgres_url)
    try:
        first = open_workspace(ledger)
        group = ledger.events.group  # type: ignore[attr-defined]
        commits = {
            f"ws-{n}": [first.model_copy(update={"workspace_id": f"ws-{n}", "version": v}) for v in range(1, 31)]
            for n in range(2, 9)
        }
        commits["ws-1"] = [first.model_copy(update={"version": v}) for v in range(1, 31)]  # version 1 is taken
        outcomes: dict[str, list[str]] = {}
        barrier = threading.Barrier(len(commits))

        def write(workspace_id: str) -> None:
            barrier.wait()
            outcomes[workspace_id] = []
            for commit in commits[workspace_id]:
                try:
                    ledger.append(commit)
                    outcomes[workspace_id].append("ok")
                except VersionTaken:
                    outcomes[workspace_id].append("taken")

        batches_before = group.batches
        threads = [threading.Thread(target=write, args=(w,)) for w in commits]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert outcomes["ws-1"] == ["taken"] + ["ok"] * 29
        assert all(outcomes[w] == ["ok"] * 30 for w in commits if w != "ws-1")
        assert group.batches - batches_before < 8 * 30  # some commits shared a transaction
        for workspace_id, expected in commits.items():
            assert [c.version for c in ledger.read(workspace_id)] == list(range(1, 31))
            if workspace_id != "ws-1":
                assert ledger.read(workspace_id) == expected
        assert ledger.read("ws-1")[0] == first
    finally:
        ledger.close()


def test_after_its_connection_is_killed_the_ledger_writes_on_a_fresh_one(postgres_url: str) -> None:
    """The leader's own connection is terminated by the server while it is idle: the writer notices before
    it sends the next append on it, which takes a fresh connection (ADR 0145)."""
    ledger = open_ledger(postgres_url)
    try:
        first = open_workspace(ledger)
        writer = ledger.events._writer  # type: ignore[attr-defined]
        assert writer is not None
        with psycopg.connect(postgres_url.split("?")[0], autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (writer.connection.info.backend_pid,))
        deadline = time.monotonic() + 5
        while not ended_by_server(writer.connection):  # the backend's FATAL message is on its way
            assert time.monotonic() < deadline
            time.sleep(0.01)
        ledger.append(first.model_copy(update={"version": 2}))
        assert ledger.events._writer is not writer  # type: ignore[attr-defined]
        assert [c.version for c in ledger.read("ws-1")] == [1, 2]
    finally:
        ledger.close()


def test_a_row_the_server_rejects_is_unavailable_and_the_writer_goes_on(postgres_url: str) -> None:
    """An error other than a taken version (here text PostgreSQL cannot store) is raised to its caller as
    the ledger refusing the commit; the writer's connection stays usable."""
    ledger = open_ledger(postgres_url)
    try:
        first = open_workspace(ledger)
        with pytest.raises(LedgerUnavailable, match="0x00"):
            ledger.append(first.model_copy(update={"workspace_id": "ws-\x00", "version": 1}))
        ledger.append(first.model_copy(update={"version": 2}))
        assert [c.version for c in ledger.read("ws-1")] == [1, 2]
    finally:
        ledger.close()
