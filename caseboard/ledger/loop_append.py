"""Appends from an asyncio event loop, without a thread: the HTTP server's common submission (ADR 0035).

Handing each submission to a thread cost the server more CPU than the commit itself: the GIL passes from the
loop to the thread, from the thread to the database wait and back, and from the thread to the loop. Here
the loop's own thread sends the INSERT with libpq's non-blocking calls on a connection of its own, and the
loop wakes the appender when the socket has the answer.

Appends that arrive while a batch is on its way go together in the next one: group commit, as
``group_commit.py`` does for threads, without a lock, since everything here runs on the loop's thread. The
statements and the decoding of their answers are the threads' own (``pg_append.py``).

If the connection fails, or the server does not answer a batch within ``ANSWER_TIMEOUT_S``, every caller of
the batch on its way gets the error (none of its rows may have landed, or all of them: the coordinator
forgets its cached state either way), the connection is closed, and the next batch connects again. A
connect runs on a thread of the loop's default executor, never on the loop's own: the callers that queue
meanwhile wait for it (a bounded wait, ``connections.py``) and get its error if it fails (ADR 0040).
"""

from __future__ import annotations

import asyncio
import select
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg import pq

from caseboard.ledger.connections import ended_by_server
from caseboard.ledger.group_commit import _Pending
from caseboard.ledger.libpq import ANSWER_TIMEOUT_S, NoAnswer
from caseboard.ledger.pg_append import AppendStatements, Row, answers

WATCH_S = 0.2
"""How often a batch on its way is looked after (a commit's answer normally comes within milliseconds)."""


class _Waiting(_Pending[Row]):
    __slots__ = ("future",)

    def __init__(self, row: Row, future: asyncio.Future[int | None]) -> None:
        super().__init__(row, None)
        self.future = future


class LoopAppender:
    """Group commit on one event loop. ``connect`` gives a connection with ``statements``' one-row INSERT
    prepared; ``landed`` is called after each batch that committed rows."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        connect: Callable[[], psycopg.Connection[Any]],
        release: Callable[[psycopg.Connection[Any]], None],
        *,
        statements: AppendStatements,
        landed: Callable[[], None],
        max_batch: int = 64,
        answer_timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> None:
        self.loop = loop
        self._connect = connect
        self._release = release
        self._statements = statements
        self._landed = landed
        self._max_batch = max_batch
        self._conn: psycopg.Connection[Any] | None = None
        self._queue: list[_Waiting] = []
        self._batch: list[_Waiting] | None = None
        self._fd = -1
        self._answer_timeout_s = answer_timeout_s
        self._timer: asyncio.TimerHandle | None = None
        self._sent_at = 0.0
        self._connecting: asyncio.Future[psycopg.Connection[Any]] | None = None
        self.batches = 0
        self.rows = 0

    async def append(self, row: Row) -> int | None:
        """Write ``row`` (alone or with others): its notification id, or None when its version is taken."""
        waiting = _Waiting(row, self.loop.create_future())
        self._queue.append(waiting)
        if self._batch is None and self._connecting is None:
            self._send()  # else a batch or a connect is on its way: this row goes in the next batch
        return await waiting.future

    def close(self) -> None:
        """Give the connection back (no batch may be on its way: the server has stopped)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            if not self.loop.is_closed():
                self._stop_watching()
            self._release(conn)

    def _send(self) -> None:
        conn = self._conn
        if conn is not None and not conn.closed and ended_by_server(conn):
            conn.close()  # the server ended the session while the appender was idle (a restart): ADR 0145
        if conn is None or conn.closed:
            self._connect_then_send()
            return
        batch = self._batch = self._queue[: self._max_batch]
        del self._queue[: self._max_batch]
        try:
            pgconn = conn.pgconn
            self._statements.send(pgconn, [waiting.row for waiting in batch])
            self._fd = pgconn.socket
            if pgconn.flush():
                self.loop.add_writer(self._fd, self._flush)
        except psycopg.Error as error:
            self._fail(error)
            return
        self.loop.add_reader(self._fd, self._receive)
        self._sent_at = self.loop.time()
        self._timer = self.loop.call_later(WATCH_S, self._watch)

    def _watch(self) -> None:
        """A batch is still on its way after ``WATCH_S``: read what the socket holds (the loop has been seen
        not to call the reader of a socket that a crashed server had closed: ADR 0040), or give up on the
        connection once ``answer_timeout_s`` has passed."""
        self._timer = None
        if self._batch is None or self._fd < 0:
            return
        try:
            readable = bool(select.select([self._fd], [], [], 0)[0])
        except (OSError, ValueError):
            readable = True  # the socket is gone: _receive meets the error
        if readable:
            self._receive()
            if self._batch is None:
                return
        if self.loop.time() - self._sent_at >= self._answer_timeout_s:
            self._fail(NoAnswer(f"PostgreSQL did not answer a commit within {self._answer_timeout_s:g} s"))
            return
        self._timer = self.loop.call_later(WATCH_S, self._watch)

    def _connect_then_send(self) -> None:
        """Open a connection on a thread; the queue goes once it is open, or gets its error."""
        broken, self._conn = self._conn, None
        if broken is not None:
            self._release(broken)
        if self._connecting is not None:
            return
        connecting = self._connecting = asyncio.ensure_future(self.loop.run_in_executor(None, self._connect))

        def connected(done: asyncio.Future[psycopg.Connection[Any]]) -> None:
            self._connecting = None
            error = done.exception() if not done.cancelled() else psycopg.OperationalError("connect cancelled")
            if error is not None:
                queued, self._queue = self._queue, []
                self._answer(
                    queued, error if isinstance(error, psycopg.Error) else psycopg.OperationalError(str(error))
                )
                return
            conn = done.result()
            if self.loop.is_closed():
                self._release(conn)
                return
            conn.pgconn.nonblocking = 1
            self._conn = conn
            self._send_if_idle()

        connecting.add_done_callback(connected)

    def _flush(self) -> None:
        assert self._conn is not None
        try:
            if not self._conn.pgconn.flush():
                self.loop.remove_writer(self._fd)
        except psycopg.Error as error:
            self._fail(error)

    def _receive(self) -> None:
        assert self._conn is not None and self._batch is not None
        pgconn = self._conn.pgconn
        try:
            pgconn.consume_input()
            if pgconn.is_busy():
                return  # the answer is not complete yet
            results = []
            while (result := pgconn.get_result()) is not None:
                results.append(result)
        except psycopg.Error as error:
            self._fail(error)
            return
        self._stop_watching()
        batch, self._batch = self._batch, None
        try:
            answers = _answers(batch, results)
        except psycopg.Error as error:
            # The statement failed, or the server ended the session instead of answering (a shutdown, a
            # crash): nothing of the batch was committed.
            self._answer(batch, _connection_error(results) if self._conn.closed else error)
        else:
            self._answer(batch, answers)
            if any(answer is not None for answer in answers):
                self._landed()
        if self._queue:
            self._send()  # connects again first if the session ended

    def _fail(self, error: psycopg.Error) -> None:
        """The connection failed: the batch on its way gets the error, the next one a new connection."""
        conn, self._conn = self._conn, None
        self._stop_watching()
        if conn is not None:
            conn.close()
            self._release(conn)
        batch, self._batch = self._batch or [], None
        self._answer(batch, error)
        if self._queue:
            self.loop.call_soon(self._send_if_idle)

    def _send_if_idle(self) -> None:
        if self._batch is None and self._connecting is None and self._queue:
            self._send()

    def _answer(self, batch: Sequence[_Waiting], answers: Sequence[int | None] | BaseException) -> None:
        self.batches += 1
        self.rows += len(batch)
        for index, waiting in enumerate(batch):
            if waiting.future.done():  # its caller was cancelled
                continue
            if isinstance(answers, BaseException):
                waiting.future.set_exception(answers)
            else:
                waiting.future.set_result(answers[index])

    def _stop_watching(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._fd >= 0:
            self.loop.remove_reader(self._fd)
            self.loop.remove_writer(self._fd)
            self._fd = -1


def _connection_error(results: Sequence[Any]) -> psycopg.Error:
    """The error of a batch whose connection closed as it was answered: the server's message if it sent one."""
    for result in results:
        if result.status == pq.ExecStatus.FATAL_ERROR:
            message = (result.error_message or b"").decode(errors="replace").strip()
            return psycopg.OperationalError(message or "the server closed the connection")
    return psycopg.OperationalError("the server closed the connection")


def _answers(batch: Sequence[_Waiting], results: Sequence[Any]) -> list[int | None]:
    """Per row: its notification id, or None when its version was taken. Raises the statement's error."""
    if not results:
        raise psycopg.OperationalError("the server sent no result")
    return answers([waiting.row for waiting in batch], results[0])
