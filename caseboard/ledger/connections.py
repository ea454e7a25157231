"""PostgreSQL connections whose every wait is bounded, and a prompt refusal while the database is unreachable.

A server that loses its database must neither hang nor queue its callers behind a dead socket, and must
serve again within moments of the database's return, without a restart (ADR 0040). So every connection is
opened with:

- ``connect_timeout`` (``CONNECT_TIMEOUT_S``): a connect to a host that does not answer gives up;
- TCP keepalives and ``tcp_user_timeout``: a peer that vanished (a crashed host, a cut network) is noticed
  by the kernel, and a blocking read or write on it fails, instead of waiting for ever;
- a server-side ``statement_timeout`` and ``idle_in_transaction_session_timeout`` as a backstop.

``Connections`` is the pool of one process's connections to one database: at most ``size`` checked out,
a checkout waits at most ``CHECKOUT_TIMEOUT_S`` for a free one, idle ones are reused last in, first out (a
caller keeps meeting the same warm backend). A connection that comes back broken is closed, and so is
every idle one when a connection-level failure is seen: after a crash all of them are dead. Once a connect
has failed, further connects are refused at once, with the last error, for ``RETRY_S``, after which one
caller tries again: while the database is down callers get a prompt ``OperationalError`` (the API answers
503 ``unavailable``), and at most one connect every ``RETRY_S`` finds out that it is back.

A connection that has been idle for ``CHECK_IDLE_S`` or more is checked before it is reused (psycopg_pool's
``ConnectionPool.check_connection``: one empty statement): a database that restarted while the process was
idle ended every session, and the first requests afterwards must not be the ones to find out (ADR 0145). A
connection that fails the check is closed with every other idle one, and the caller connects afresh. A
connection in steady use is not checked (no round trip is added to a busy server's commits).

Unlike psycopg_pool's, this pool has no background workers and no reconnection backoff that can outlast an
outage by tens of seconds: a connection is opened by the caller that needs it.
"""

from __future__ import annotations

import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from eventsourcing.persistence import (
    DatabaseError,
    DataError,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    PersistenceError,
    ProgrammingError,
)
from eventsourcing.postgres import PostgresDatastore
from psycopg import pq
from psycopg.rows import DictRow, dict_row
from psycopg.types.composite import register_composite
from psycopg_pool import ConnectionPool

CONNECT_TIMEOUT_S = 2
"""libpq's own minimum: a connect to a host that does not answer gives up after this."""
TCP_USER_TIMEOUT_MS = 5_000
"""Data sent and not acknowledged by the peer for this long fails the connection (Linux)."""
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 3}
"""An idle connection (waiting for a slow answer) whose peer stopped answering fails after ~11 s."""
STATEMENT_TIMEOUT_MS = 30_000
"""The server cancels a statement that runs longer: no caseboard statement comes near it."""
CHECKOUT_TIMEOUT_S = 5.0
"""How long a caller waits for one of the pool's connections when all of them are in use."""
RETRY_S = 0.5
"""After a failed connect, further connects are refused at once for this long."""
CHECK_IDLE_S = 1.0
"""A connection idle this long is checked before it is reused (ADR 0145)."""


def alive(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle connection still has its session: psycopg_pool's check, one empty statement."""
    try:
        ConnectionPool.check_connection(conn)
    except psycopg.Error:
        conn.close()
        return False
    return True


def usable(conn: psycopg.Connection[Any], idle_since: float) -> bool:
    """Whether an idle connection, given back at ``idle_since`` (monotonic), may be reused: the server has not
    ended its session, and one idle for ``CHECK_IDLE_S`` or more passes the check (closed otherwise)."""
    if ended_by_server(conn) or (time.monotonic() - idle_since >= CHECK_IDLE_S and not alive(conn)):
        conn.close()
        return False
    return True


def ended_by_server(conn: psycopg.Connection[Any]) -> bool:
    """Whether the server has sent something on an idle connection, without a round trip: a session the
    server ends (a shutdown, a restart, a terminated backend) gets its FATAL message and the socket's end, and
    a pooled connection never LISTENs, so an idle one with something to read is not reused (ADR 0145)."""
    if conn.closed:
        return True
    try:
        return bool(select.select([conn.pgconn.socket], [], [], 0)[0])
    except (OSError, ValueError, psycopg.Error):
        return True


def safe_conninfo(conninfo: dict[str, Any]) -> dict[str, Any]:
    """``conninfo`` with the timeouts and keepalives of the module's docstring (explicit values win)."""
    options = (
        f"-c statement_timeout={STATEMENT_TIMEOUT_MS} -c idle_in_transaction_session_timeout={STATEMENT_TIMEOUT_MS}"
    )
    return {
        "connect_timeout": CONNECT_TIMEOUT_S,
        "tcp_user_timeout": TCP_USER_TIMEOUT_MS,
        **KEEPALIVES,
        "options": options,
        **conninfo,
    }


def connection_failed(error: BaseException) -> bool:
    """Whether ``error`` means the connection (or the server) is gone, rather than a statement's failure."""
    return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError) and not isinstance(
        error, psycopg.errors.QueryCanceled
    )


class Unreachable(psycopg.OperationalError):
    """Refused at once: a connect failed a moment ago (``RETRY_S``)."""


class Connections:
    """A bounded pool of autocommit connections (see the module's docstring)."""

    def __init__(
        self,
        conninfo: dict[str, Any],
        *,
        size: int,
        row_factory: Any = None,
        checkout_timeout_s: float = CHECKOUT_TIMEOUT_S,
        retry_s: float = RETRY_S,
    ) -> None:
        self.conninfo = safe_conninfo(conninfo)
        self.size = size
        self.row_factory = row_factory
        self.checkout_timeout_s = checkout_timeout_s
        self.retry_s = retry_s
        self._slots = threading.BoundedSemaphore(size)
        self._idle: list[tuple[psycopg.Connection[Any], float]] = []  # with when it was given back
        self._guard = threading.Lock()
        self._refuse_until = 0.0
        self._last_error = ""
        self._closed = False
        self.connects = 0
        self.refusals = 0

    @property
    def where(self) -> str:
        return f"{self.conninfo.get('host')}:{self.conninfo.get('port')}"

    def down(self) -> str | None:
        """The last connect's error while connects are being refused, else None."""
        return self._last_error if time.monotonic() < self._refuse_until else None

    def getconn(self) -> psycopg.Connection[Any]:
        if not self._slots.acquire(timeout=self.checkout_timeout_s):
            raise psycopg.OperationalError(
                f"all {self.size} connections to PostgreSQL at {self.where} stayed busy for "
                f"{self.checkout_timeout_s:g} s; retry shortly"
            )
        try:
            with self._guard:
                if self._closed:
                    raise psycopg.OperationalError("the connection pool is closed")
                conn, since = self._idle.pop() if self._idle else (None, 0.0)
            if conn is not None and not usable(conn, since):
                self._drop_idle()  # the server ended this session: it ended the others too
                conn = None
            if conn is None or conn.closed:
                conn = self._connect()
            return conn
        except BaseException:
            self._slots.release()
            raise

    def putconn(self, conn: psycopg.Connection[Any], error: BaseException | None = None) -> None:
        """Give a connection back; ``error``, if given, is what its user met (a connection-level one closes
        every idle connection too)."""
        healthy = not conn.closed and conn.pgconn.transaction_status == pq.TransactionStatus.IDLE
        try:
            if error is not None and connection_failed(error):
                healthy = False
                self._drop_idle()
            if healthy:
                with self._guard:
                    if not self._closed:
                        self._idle.append((conn, time.monotonic()))
                        return
            conn.close()
        finally:
            self._slots.release()

    def close(self) -> None:
        with self._guard:
            self._closed = True
        self._drop_idle()

    def _drop_idle(self) -> None:
        with self._guard:
            idle, self._idle = self._idle, []
        for conn, _ in idle:
            conn.close()

    def _connect(self) -> psycopg.Connection[Any]:
        with self._guard:
            now = time.monotonic()
            if now < self._refuse_until:
                self.refusals += 1
                raise Unreachable(
                    f"PostgreSQL at {self.where} could not be reached a moment ago ({self._last_error}); retry shortly"
                )
            if self._last_error:  # this caller is the one that finds out whether it is back
                self._refuse_until = now + self.retry_s
        try:
            kwargs: dict[str, Any] = {"autocommit": True}
            if self.row_factory is not None:
                kwargs["row_factory"] = self.row_factory
            conn = psycopg.connect(**self.conninfo, **kwargs)
        except psycopg.Error as error:
            with self._guard:
                self._refuse_until = time.monotonic() + self.retry_s
                self._last_error = " ".join(str(error).split())[:300]
            self._drop_idle()
            raise
        with self._guard:
            self._refuse_until = 0.0
            self._last_error = ""
        self.connects += 1
        return conn


def guarded(connections: Connections, work: Callable[[psycopg.Connection[Any]], Any]) -> Any:
    """Run ``work`` on a checked-out connection and give it back, with what it raised."""
    conn = connections.getconn()
    try:
        result = work(conn)
    except BaseException as error:
        connections.putconn(conn, error)
        raise
    connections.putconn(conn)
    return result


class GuardedDatastore(PostgresDatastore):
    """eventsourcing's PostgreSQL datastore, with its connections taken from ``Connections`` instead of
    psycopg_pool: the recorders' every statement gets the bounded waits and the prompt refusal above. The
    datastore's own pool is never opened."""

    def __init__(self, *args: Any, pool_size: int, **kwargs: Any) -> None:
        super().__init__(*args, pool_size=1, **kwargs)
        pool_kwargs = self.pool.kwargs
        assert isinstance(pool_kwargs, dict)
        conninfo = {key: value for key, value in pool_kwargs.items() if key != "row_factory"}
        self.connections = Connections(conninfo, size=pool_size, row_factory=dict_row)

    @contextmanager
    def get_connection(self) -> Iterator[psycopg.Connection[DictRow]]:
        try:
            conn = self.connections.getconn()
        except psycopg.Error as error:
            raise DatabaseUnreachable(str(error)) from error
        try:
            for info in self.psycopg_type_adapters.values():
                if not conn.adapters.types.get(info.oid):
                    register_composite(info, conn)
            yield conn
        except BaseException as error:
            self.connections.putconn(conn, error)
            raise _translated(error) from error
        self.connections.putconn(conn)

    def close(self) -> None:
        self.connections.close()


class DatabaseUnreachable(PersistenceError):
    """No connection could be had. Not one of the errors that eventsourcing's recorders retry (ten times,
    0.2 s apart): a caller learns at once that the database is down. An error met on a connection that was
    reused is still retried once the broken connections are gone, by a fresh connect."""


def _translated(error: BaseException) -> BaseException:
    """A psycopg error as eventsourcing's (as its datastore raises them); anything else as it is."""
    if not isinstance(error, psycopg.Error):
        return error
    for source, target in (
        (psycopg.InterfaceError, InterfaceError),
        (psycopg.OperationalError, OperationalError),
        (psycopg.DataError, DataError),
        (psycopg.IntegrityError, IntegrityError),
        (psycopg.InternalError, InternalError),
        (psycopg.ProgrammingError, ProgrammingError),
        (psycopg.NotSupportedError, NotSupportedError),
        (psycopg.DatabaseError, DatabaseError),
    ):
        if isinstance(error, source):
            return target(str(error))
    return PersistenceError(str(error))
