"""The PostgreSQL outbox: final rows only, in (tx, notification_id) order, never skipping a late commit."""

from __future__ import annotations

import threading
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from caseboard.dispatcher.outbox import START, open_outbox
from caseboard.ledger import open_ledger
from tests.e2e.procs import poll

pytestmark = pytest.mark.postgres


def insert(conn: psycopg.Connection[tuple[object, ...]], schema: str, workspace: str) -> None:
    conn.execute(
        f'INSERT INTO "{schema}".caseboard_commits (originator_id, originator_version, topic, state) '
        "VALUES (%s, 1, 'caseboard.commit', %s)",
        (workspace, b"{}"),
    )


def test_a_commit_that_lands_late_is_never_skipped(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    schema = parse_qs(urlparse(postgres_url).query)["schema"][0]
    base = urlparse(postgres_url)._replace(query="").geturl()
    recorder = ledger.events
    slow = psycopg.connect(base)
    fast = psycopg.connect(base, autocommit=True)
    inserted = threading.Barrier(2)
    try:
        insert(slow, schema, "ws-slow")  # takes the lower notification id and the lower tx, stays open
        writer = threading.Thread(target=lambda: (insert(fast, schema, "ws-fast"), inserted.wait()))
        writer.start()
        inserted.wait()
        writer.join()
        assert recorder.select_outbox(START, 100) == []  # ws-fast is committed but ws-slow may land before it
        slow.commit()
        # Another session's older transaction on a shared server can hold the horizon back for a moment.
        rows = poll("both rows final", lambda: (r := recorder.select_outbox(START, 100)) and len(r) == 2 and r)
        assert [stored.originator_id for _, _, stored in rows] == ["ws-slow", "ws-fast"]
        assert rows[0][:2] < rows[1][:2]
        assert recorder.select_outbox(rows[-1][:2], 100) == []
        assert open_outbox(ledger).pending(rows[0][:2]) == 1
    finally:
        slow.close()
        fast.close()
        ledger.close()


def test_the_outbox_position_follows_the_ledger_in_commit_order(postgres_url: str) -> None:
    from caseboard.coordinator import Coordinator
    from tests.conftest import play, scenario_lines

    ledger = open_ledger(postgres_url)
    try:
        play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
        outbox = open_outbox(ledger)
        first = outbox.read(START, 7)
        rest = outbox.read(first[-1].position, 100)
        assert [e.commit.version for e in first + rest] == list(range(1, 21))
        assert outbox.head() == 20
        assert outbox.pending(first[-1].position) == 13
    finally:
        ledger.close()
