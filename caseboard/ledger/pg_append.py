"""The PostgreSQL append, once: the statements that write commits and the decoding of their answers.

Both group commits write through here: the threads' (``LedgerRecorder``, ``group_commit.py``) and the event
loop's (``loop_append.py``, ADR 0035). A batch of one row goes on the writer connection's prepared INSERT
(``APPEND_NAME``), and a taken (workspace, version) comes back as a unique violation; a batch of several goes
in one multi-row INSERT that skips, rather than fails on, a taken row, and names the rows it inserted. Either
way each row is answered on its own: its notification id, or None when its version was taken. Every
parameter is sent in binary (``libpq.commit_params``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import pq

from caseboard.ledger import libpq

Row = tuple[str, int, str, bytes]
"""A commit as stored: workspace id, version, topic, stored JSON."""

APPEND_NAME = "caseboard_append"
"""The writer connection's prepared INSERT of one commit (a name psycopg's own ``_pg3_*`` never takes)."""

TYPES = (25, 20, 25, 17)  # text, bigint, text, bytea: the row's columns
UNIQUE_VIOLATION = "23505"


class AppendStatements:
    """The append's statements for one commits table; ``insert`` is its INSERT up to ``VALUES``."""

    def __init__(self, insert: bytes) -> None:
        self.insert = insert
        self.prepare = (
            b"PREPARE "
            + APPEND_NAME.encode()
            + b" (text, bigint, text, bytea) AS "
            + insert
            + b"VALUES ($1, $2, $3, $4) RETURNING notification_id"
        )
        self._batches: dict[int, bytes] = {}

    def batch(self, size: int) -> bytes:
        """``size`` commits in one INSERT; a row whose (workspace, version) is taken is skipped, not fatal."""
        statement = self._batches.get(size)
        if statement is None:
            values = b", ".join(
                b"($%d, $%d, $%d, $%d)" % (4 * i + 1, 4 * i + 2, 4 * i + 3, 4 * i + 4) for i in range(size)
            )
            statement = self._batches[size] = (
                self.insert
                + b"VALUES "
                + values
                + b" ON CONFLICT (originator_id, originator_version) DO NOTHING "
                + b"RETURNING originator_id, originator_version, notification_id"
            )
        return statement

    def send(self, pgconn: Any, rows: Sequence[Row]) -> None:
        """Queue the batch on ``pgconn`` (the caller flushes: ``libpq.send``, or the loop's writer)."""
        params = [param for row in rows for param in libpq.commit_params(row)]
        if len(rows) == 1:
            pgconn.send_query_prepared(APPEND_NAME.encode(), params, libpq.BINARY)
        else:
            pgconn.send_query_params(self.batch(len(rows)), params, TYPES * len(rows), libpq.BINARY * len(rows))


def answers(rows: Sequence[Row], result: Any) -> list[int | None]:
    """Per row of a batch ``send`` wrote: its notification id, or None when its version was taken. Raises
    the statement's error (psycopg's class for its SQLSTATE)."""
    if len(rows) == 1:
        if result.status == pq.ExecStatus.TUPLES_OK:
            return [int(result.get_value(0, 0))]
        if libpq.sqlstate(result) == UNIQUE_VIOLATION:
            return [None]
        libpq.raise_for(result)
    if result.status != pq.ExecStatus.TUPLES_OK:
        libpq.raise_for(result)
    inserted = {
        (result.get_value(i, 0).decode(), int(result.get_value(i, 1))): int(result.get_value(i, 2))
        for i in range(result.ntuples)
    }
    return [inserted.get((row[0], row[1])) for row in rows]


def prepare(conn: psycopg.Connection[Any], statements: AppendStatements) -> None:
    """Prepare the one-row INSERT on a writer's connection, unless a writer before prepared it there."""
    prepared = conn.execute("SELECT 1 FROM pg_prepared_statements WHERE name = %s", (APPEND_NAME,))
    if prepared.fetchone() is None:
        conn.execute(statements.prepare)
