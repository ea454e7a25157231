"""The few statements on the hot path, sent with libpq's asynchronous calls instead of psycopg's cursors.

psycopg's ``execute`` spends ~35-50 us of CPU per statement on its query cache, adaptation and result
objects. For a fixed statement of known types (the append of one commit, the commit notifier's NOTIFY) the
protocol exchange itself is ~10 us. ``exchange`` waits for the socket in ``select``, which releases the GIL
as psycopg does (libpq's blocking ``PQexec`` would hold it for the whole round trip). Errors are psycopg's:
``OperationalError`` when the connection is lost, the SQLSTATE's class otherwise (``raise_for``).
"""

from __future__ import annotations

import select
from typing import Any, NoReturn

import psycopg
from psycopg import pq


def send(pgconn: Any) -> None:
    """After a ``send_*`` call: make sure that all of it has left for the server."""
    while pgconn.flush():
        select.select([], [pgconn.socket], [])


def exchange(pgconn: Any) -> Any:
    """After a ``send_*`` call: flush, wait for and drain the results; the first one."""
    send(pgconn)
    return receive(pgconn)


def receive(pgconn: Any) -> Any:
    """After ``send``: wait for and drain the results; the first one."""
    first = None
    while True:
        while pgconn.is_busy():  # what has arrived is parsed; wait only when a result is not complete yet
            select.select([pgconn.socket], [], [])
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            break
        if first is None:
            first = result
    if first is None:
        raise psycopg.OperationalError("the server sent no result")
    return first


BINARY = [1, 1, 1, 1]
"""The formats of ``commit_params``: every one binary, sized, never cut at a NUL byte as a text parameter
would be."""


def commit_params(row: tuple[str, int, str, bytes]) -> list[bytes]:
    """A commit's row (workspace id, version, topic, stored JSON) as the append's parameters (text, bigint,
    text, bytea; formats ``BINARY``)."""
    workspace_id, version, topic, state = row
    return [workspace_id.encode(), version.to_bytes(8, "big", signed=True), topic.encode(), state]


def sqlstate(result: Any) -> str:
    return (result.error_field(pq.DiagnosticField.SQLSTATE) or b"").decode()


def raise_for(result: Any) -> NoReturn:
    """Raise the psycopg error of a failed result."""
    message = (result.error_message or b"").decode(errors="replace").strip()
    try:
        error_class = psycopg.errors.lookup(sqlstate(result))
    except KeyError:
        error_class = psycopg.DatabaseError
    raise error_class(message)


def command(pgconn: Any, sql: bytes) -> None:
    """One statement without parameters or rows (``NOTIFY ...``)."""
    pgconn.send_query(sql)
    result = exchange(pgconn)
    if result.status != pq.ExecStatus.COMMAND_OK:
        raise_for(result)
