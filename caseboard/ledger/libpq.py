"""The few statements on the hot path, sent with libpq's asynchronous calls instead of psycopg's cursors.

psycopg's ``execute`` spends ~35-50 us of CPU per statement on its query cache, adaptation and result
objects. For a fixed statement of known types (the append of one commit, the commit notifier's NOTIFY) the
protocol exchange itself is ~10 us. ``exchange`` waits for the socket in ``poll``, which releases the GIL
as psycopg does (libpq's blocking ``PQexec`` would hold it for the whole round trip). Every wait is bounded
by ``ANSWER_TIMEOUT_S`` (ADR 0040). Errors are psycopg's: ``OperationalError`` when the connection is lost
or the server did not answer in time (the connection must then be closed: a statement may still be on its
way), the SQLSTATE's class otherwise (``raise_for``).
"""

from __future__ import annotations

import select
import time
from typing import Any, NoReturn

import psycopg
from psycopg import pq

ANSWER_TIMEOUT_S = 10.0
"""The longest wait for the server to take a statement or to answer it. A commit takes milliseconds."""


class NoAnswer(psycopg.OperationalError):
    """The server did not answer within ``ANSWER_TIMEOUT_S``: the connection is unusable."""


def _wait(pgconn: Any, deadline: float, *, write: bool = False) -> None:
    """``poll``, not ``select``: a process with more than 1,023 open descriptors (connections, event streams)
    has sockets ``select`` cannot watch."""
    left = deadline - time.monotonic()
    poller = select.poll()
    poller.register(pgconn.socket, select.POLLOUT if write else select.POLLIN)
    ready = poller.poll(max(left, 0.0) * 1000)
    if not ready:
        raise NoAnswer(f"PostgreSQL did not answer within {ANSWER_TIMEOUT_S:g} s")


def send(pgconn: Any, timeout_s: float = ANSWER_TIMEOUT_S) -> None:
    """After a ``send_*`` call: make sure that all of it has left for the server."""
    deadline = time.monotonic() + timeout_s
    while pgconn.flush():
        _wait(pgconn, deadline, write=True)


def exchange(pgconn: Any) -> Any:
    """After a ``send_*`` call: flush, wait for and drain the results; the first one."""
    send(pgconn)
    return receive(pgconn)


def receive(pgconn: Any, timeout_s: float = ANSWER_TIMEOUT_S) -> Any:
    """After ``send``: wait for and drain the results; the first one."""
    deadline = time.monotonic() + timeout_s
    first = None
    while True:
        while pgconn.is_busy():  # what has arrived is parsed; wait only when a result is not complete yet
            _wait(pgconn, deadline)
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
