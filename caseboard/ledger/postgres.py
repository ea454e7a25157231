"""The ledger's PostgreSQL recorder: eventsourcing's application recorder, with a one-statement append.

eventsourcing's own recorder takes ``LOCK TABLE ... EXCLUSIVE`` and issues ``NOTIFY`` in every append, so
that notification ids commit in order. Both serialize every writer of the database through one lock
held across the commit's WAL flush. This recorder keeps the table shape and interface, and instead:

- appends one commit with one autocommitted ``INSERT`` (one round trip, one flush; concurrent writers of
  different processes commit in parallel and share PostgreSQL's group flush of the WAL), prepared once on a
  connection the writer keeps and sent through libpq (``caseboard/ledger/libpq.py``);
- lets appends that arrive while another is being written share the next transaction (group commit,
  ``caseboard/ledger/group_commit.py``, ADR 0005): a multi-row INSERT that skips, rather than fails on, a
  row whose (workspace, version) is taken, so each caller still gets its own answer; a coroutine appends on
  its event loop's own group commit, with no thread (``caseboard/ledger/loop_append.py``, ADR 0035);
- records the inserting transaction id (``tx xid8``) next to ``notification_id``. A reader of the
  notification log orders by ``(tx, notification_id)`` and reads only rows whose ``tx`` is below the
  oldest transaction still running (``pg_snapshot_xmin``): every such row is final, so no row can later
  appear behind a reader's position (docs/adr/0002-ledger-on-eventsourcing.md).

Snapshots go through ``SnapshotRecorder``, eventsourcing's aggregate recorder with a plain one-row INSERT:
its own insert passes rows as an array of composite values in text form, which PostgreSQL parses slowly
for a snapshot of several megabytes (about 250 ms for 3.5 MB, against about 25 ms for a plain INSERT).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any, cast

import psycopg
from eventsourcing.persistence import IntegrityError, PersistenceError, StoredEvent
from eventsourcing.postgres import PostgresAggregateRecorder, PostgresApplicationRecorder, PostgresDatastore
from psycopg.rows import tuple_row
from psycopg.sql import SQL, Identifier

from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import libpq
from caseboard.ledger.connections import GuardedDatastore, connection_failed, ended_by_server
from caseboard.ledger.group_commit import GroupCommit, Meanwhile
from caseboard.ledger.loop_append import LoopAppender
from caseboard.ledger.pg_append import AppendStatements, Row, answers, prepare

_Row = Row


def _landed(row: _Row, notification_id: int | None) -> int:
    """The notification id of an appended row; ``IntegrityError`` when its version was taken."""
    if notification_id is None:
        raise IntegrityError(f"{row[0]} version {row[1]} is taken")
    return notification_id


class LedgerRecorder(PostgresApplicationRecorder):
    def __init__(self, datastore: GuardedDatastore, *, events_table_name: str = "caseboard_commits") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.connections = datastore.connections
        schema, table = Identifier(datastore.schema), Identifier(events_table_name)
        self.sql_create_statements[self.create_table_statement_index] = SQL(
            "CREATE TABLE IF NOT EXISTS {schema}.{table} ("
            "originator_id text NOT NULL, "
            "originator_version bigint NOT NULL, "
            "topic text, "
            "state bytea, "
            "notification_id bigserial, "
            "tx xid8 NOT NULL DEFAULT pg_current_xact_id(), "
            "PRIMARY KEY (originator_id, originator_version))"
        ).format(schema=schema, table=table)
        self.sql_create_statements.append(
            SQL("CREATE INDEX IF NOT EXISTS {index} ON {schema}.{table} (tx, notification_id)").format(
                index=Identifier(f"{events_table_name}_tx_idx"), schema=schema, table=table
            )
        )
        insert = SQL("INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) ").format(
            schema=schema, table=table
        )
        self._insert = insert
        self.append_statement = insert + SQL("VALUES (%s, %s, %s, %s) RETURNING notification_id")
        self.statements = AppendStatements(insert.as_bytes(None))
        self.outbox_statement = SQL(
            "SELECT tx::text::bigint AS tx, notification_id, originator_id, originator_version, topic, state "
            "FROM {schema}.{table} WHERE (tx, notification_id) > (%s::text::xid8, %s) "
            "AND tx < pg_snapshot_xmin(pg_current_snapshot()) ORDER BY tx, notification_id LIMIT %s"
        ).format(schema=schema, table=table)
        self.outbox_count_statement = SQL(
            "SELECT count(*) AS n FROM {schema}.{table} WHERE (tx, notification_id) > (%s::text::xid8, %s)"
        ).format(schema=schema, table=table)
        self.rows_statement = SQL(
            "SELECT originator_version, topic, state FROM {schema}.{table} WHERE originator_id = %s "
            "AND originator_version > %s AND originator_version <= %s ORDER BY originator_version LIMIT %s"
        ).format(schema=schema, table=table)
        self.names_statement = SQL(
            "SELECT originator_id FROM {schema}.{table} WHERE originator_version = 1 "
            "AND (originator_id = %s OR right(originator_id, %s) = %s) ORDER BY originator_id"
        ).format(schema=schema, table=table)
        self.group = GroupCommit[_Row](self._flush)
        self._writer: psycopg.Cursor[tuple[Any, ...]] | None = None
        self._on_loop: LoopAppender | None = None
        self.after_append: Callable[[], None] | None = None
        """Called after each append has committed, outside its transaction (the dispatcher's wake-up)."""

    def select_outbox(self, after: tuple[int, int], limit: int) -> list[tuple[int, int, StoredEvent]]:
        """Commits after position ``(tx, notification_id)`` that are final: no row can later commit behind
        them, because only rows of transactions older than every running one are read."""
        try:
            with self.datastore.get_connection() as conn:
                rows = conn.execute(self.outbox_statement, (str(after[0]), after[1], limit)).fetchall()
        except PersistenceError as error:  # the dispatcher waits and reads again
            raise LedgerUnavailable(f"the outbox could not be read: {error}") from error
        return [
            (
                row["tx"],
                row["notification_id"],
                StoredEvent(row["originator_id"], row["originator_version"], row["topic"], bytes(row["state"])),
            )
            for row in rows
        ]

    def count_outbox_after(self, after: tuple[int, int]) -> int:
        """How many commits lie after position ``(tx, notification_id)``, final or not."""
        try:
            with self.datastore.get_connection() as conn:
                row = conn.execute(self.outbox_count_statement, (str(after[0]), after[1])).fetchone()
        except PersistenceError as error:
            raise LedgerUnavailable(f"the outbox could not be read: {error}") from error
        return int(row["n"]) if row else 0

    def select_rows(self, workspace_id: str, after: int, upto: int | None, limit: int) -> list[tuple[int, str, bytes]]:
        """A workspace's rows (version, topic, stored bytes) after ``after``, selected directly: none of the
        generic recorder's per-row objects, and in binary (a ``bytea`` as text is hex, twice its size, parsed
        back on arrival)."""
        last = upto if upto is not None else 2**62
        try:
            with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row, binary=True) as cursor:
                rows = cursor.execute(self.rows_statement, (workspace_id, after, last, limit)).fetchall()
        except (psycopg.Error, PersistenceError) as error:  # the pool's connect failure arrives wrapped
            raise LedgerUnavailable(f"the ledger could not be read: {error}") from error
        return cast("list[tuple[int, str, bytes]]", rows)  # bigint, text, bytea: int, str, bytes

    def keys_named(self, workspace_id: str) -> list[str]:
        """The keys of the workspaces whose id is ``workspace_id``, legacy or of any tenant (``Ledger.keys_named``)."""
        suffix = "/" + workspace_id
        try:
            with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row) as cursor:
                rows = cursor.execute(self.names_statement, (workspace_id, len(suffix), suffix)).fetchall()
        except (psycopg.Error, PersistenceError) as error:
            raise LedgerUnavailable(f"the ledger could not be read: {error}") from error
        return [str(row[0]) for row in rows]

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        rows: list[_Row] = [(str(e.originator_id), e.originator_version, e.topic, e.state) for e in stored_events]
        if len(rows) == 1:
            return [self.insert_commit(rows[0])]
        try:
            notification_ids = self._append_many(rows)
        except psycopg.IntegrityError as error:
            raise IntegrityError(str(error)) from error
        except psycopg.Error as error:
            raise PersistenceError(str(error)) from error
        self._appended()
        return notification_ids

    def insert_commit(self, row: _Row, meanwhile: Meanwhile | None = None) -> int:
        """One commit (workspace id, version, topic, stored JSON), in a group commit with whatever else this
        process appends at the moment: its notification id (``group_commit.py``). ``meanwhile`` is called
        while the commit is in flight when this thread writes it (ADR 0180)."""
        try:
            notification_id = _landed(row, self.group.append(row, meanwhile))
        except psycopg.Error as error:
            raise PersistenceError(str(error)) from error
        self._appended()
        return notification_id

    def _appended(self) -> None:
        if self.after_append is not None:
            self.after_append()

    def _flush(self, rows: Sequence[_Row], meanwhile: Meanwhile | None = None) -> list[int | None]:
        """One group-commit batch in one statement, one transaction, one WAL flush (``pg_append.py``);
        ``meanwhile`` runs once it is sent, while the server writes it.

        Only the group's leader writes, one batch at a time, so it keeps one connection and one cursor of
        its own: no pool checkout, no cursor and no row dict built per commit."""
        cursor = self._writer_cursor()
        try:
            pgconn = cursor.connection.pgconn
            self.statements.send(pgconn, rows)
            libpq.send(pgconn)
            try:
                if meanwhile is not None:
                    meanwhile()
            finally:  # the answer is read whatever happened meanwhile: the connection stays in step
                result = libpq.receive(pgconn)
            return answers(rows, result)
        except psycopg.Error as error:
            if connection_failed(error):
                self._release_thread_writer(error)  # the connection is gone: the next batch takes a fresh one
            raise

    def _writer_cursor(self) -> psycopg.Cursor[tuple[Any, ...]]:
        if self._writer is not None and not self._writer.closed and ended_by_server(self._writer.connection):
            # the database ended the session while the writer was idle (a restart): a fresh one (ADR 0145)
            self._release_thread_writer(psycopg.OperationalError("the server ended the session"))
        if self._writer is None or self._writer.closed:
            self._writer = self._writer_connection().cursor(row_factory=tuple_row)
        return self._writer

    def _writer_connection(self) -> psycopg.Connection[Any]:
        """A connection of the pool's, kept by a writer, with the one-row INSERT prepared on it."""
        conn = self.connections.getconn()
        try:
            prepare(conn, self.statements)  # a connection a writer had before keeps its statement
        except BaseException as error:
            self.connections.putconn(conn, error)
            raise
        return conn

    async def insert_commit_on_loop(self, row: _Row) -> int:
        """``insert_commit`` for a coroutine: the running loop's own group commit, no thread
        (``loop_append.py``)."""
        try:
            return _landed(row, await self._loop_appender().append(row))
        except psycopg.Error as error:
            raise PersistenceError(str(error)) from error

    def _loop_appender(self) -> LoopAppender:
        """The running loop's appender. A recorder serves one event loop at a time: the first append from
        another loop retires the previous loop's appender (a server stopped, another started)."""
        loop = asyncio.get_running_loop()
        appender = self._on_loop
        if appender is None or appender.loop is not loop:
            if appender is not None:
                appender.close()
            appender = self._on_loop = LoopAppender(
                loop,
                self._writer_connection,
                self.connections.putconn,
                statements=self.statements,
                landed=self._appended,
            )
        return appender

    def release_writer(self) -> None:
        """Give the writers' connections back to the pool, before the pool closes (the server has stopped)."""
        self._release_thread_writer()
        on_loop, self._on_loop = self._on_loop, None
        if on_loop is not None:
            on_loop.close()

    def _release_thread_writer(self, error: BaseException | None = None) -> None:
        """Give the threads' writer connection back (``error``: it broke). The loop's appender keeps its own:
        only its loop may touch it (``loop_append.py`` replaces it when it breaks)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
            self.connections.putconn(writer.connection, error)

    def _append_many(self, rows: list[_Row]) -> list[int]:
        """Several commits in one transaction (an import): all or none."""
        ids: list[int] = []
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as cursor:
            cursor.executemany(self.append_statement, rows, returning=True)
            while True:
                fetched = cursor.fetchone()
                assert fetched is not None
                ids.append(int(fetched["notification_id"]))
                if not cursor.nextset():
                    break
        return ids


LZ4 = SQL("SET LOCAL default_toast_compression = 'lz4'")
"""A snapshot's bytes compressed by lz4 rather than PostgreSQL's default pglz: a 3.4 MB snapshot is written in
a quarter of the time and read back sooner, for about a sixth more space (docs/adr/0181)."""


class SnapshotRecorder(PostgresAggregateRecorder):
    def __init__(self, datastore: PostgresDatastore, *, events_table_name: str = "snapshots") -> None:
        super().__init__(datastore, events_table_name=events_table_name)
        self.insert_statement = SQL(
            "INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state) VALUES (%s, %s, %s, %s)"
        ).format(schema=Identifier(datastore.schema), table=Identifier(events_table_name))
        self.lz4 = True  # until the server refuses it
        self.latest_statement = SQL(
            "SELECT originator_version, state FROM {schema}.{table} WHERE originator_id = %s "
            "AND originator_version <= %s ORDER BY originator_version DESC LIMIT 1"
        ).format(schema=Identifier(datastore.schema), table=Identifier(events_table_name))

    def select_latest(self, originator_id: str, upto: int) -> tuple[int, bytes] | None:
        """The latest snapshot (version, stored bytes) at or before ``upto``, read in binary: a snapshot of a long
        workspace is megabytes, which as text would arrive as hex twice that size, to be parsed back."""
        try:
            with self.datastore.get_connection() as conn, conn.cursor(row_factory=tuple_row, binary=True) as cursor:
                row = cursor.execute(self.latest_statement, (originator_id, upto)).fetchone()
        except (psycopg.Error, PersistenceError) as error:
            raise LedgerUnavailable(f"the snapshot store could not be read: {error}") from error
        return None if row is None else (int(row[0]), bytes(row[1]))

    def insert_events(self, stored_events: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        rows = [(e.originator_id, e.originator_version, e.topic, e.state) for e in stored_events]
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as cursor:
            if self.lz4:
                try:
                    with conn.transaction():  # a savepoint: a server without lz4 refuses the setting alone
                        cursor.execute(LZ4)
                except psycopg.Error:
                    self.lz4 = False
            cursor.executemany(self.insert_statement, rows)
        return None
