"""Opening a ledger from its URL: ``sqlite:///path``, ``postgresql://user@host:port/db?schema=name``.

The store is always named explicitly; there is no silent in-memory default (``memory://`` exists for tests
and is refused by the settings).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eventsourcing.popo import POPOAggregateRecorder, POPOApplicationRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteApplicationRecorder, SQLiteDatastore

from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger.base import EventsourcingLedger
from caseboard.ledger.imports import TABLE as IMPORTS_TABLE
from caseboard.ledger.imports import ImportMarks, MemoryMarks

COMMITS_TABLE = "caseboard_commits"
SNAPSHOTS_TABLE = "caseboard_snapshots"


def open_ledger(url: DatabaseUrl | str, *, pool_size: int = 4) -> EventsourcingLedger:
    if url == "memory://":
        return EventsourcingLedger(POPOApplicationRecorder(), POPOAggregateRecorder(), marks=MemoryMarks())
    database = DatabaseUrl.parse(url)
    if database.sqlite_path is not None:
        return _sqlite(database.sqlite_path)
    return _postgres(database, pool_size)


def _sqlite(path: Path) -> EventsourcingLedger:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LedgerUnavailable(f"cannot create the folder of the SQLite ledger {path}: {error}") from error
    datastore = SQLiteDatastore(str(path), originator_id_type="text", pool_size=2, max_overflow=8, pool_timeout=30)
    try:
        events = SQLiteApplicationRecorder(datastore, events_table_name=COMMITS_TABLE)
        snapshots = SQLiteAggregateRecorder(datastore, events_table_name=SNAPSHOTS_TABLE)
        events.create_table()
        snapshots.create_table()
    except Exception as error:
        datastore.close()
        raise LedgerUnavailable(f"cannot open the SQLite ledger at {path}: {error}") from error
    names = (
        f"SELECT originator_id FROM {COMMITS_TABLE} WHERE originator_version = 1 "
        "AND (originator_id = ? OR substr(originator_id, -?) = ?) ORDER BY originator_id"
    )

    def keys_named(workspace_id: str) -> list[str]:
        suffix = "/" + workspace_id
        with datastore.transaction(commit=False) as cursor:
            cursor.execute(names, (workspace_id, len(suffix), suffix))
            return [str(row[0]) for row in cursor.fetchall()]

    def sqlite_table(cursor: Any) -> bool:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", (IMPORTS_TABLE,))
        return bool(cursor.fetchone()[0])

    marks = ImportMarks(lambda write: datastore.transaction(commit=write), IMPORTS_TABLE, "?", sqlite_table)
    return EventsourcingLedger(events, snapshots, datastore.close, names=keys_named, marks=marks)


def _postgres(database: DatabaseUrl, pool_size: int) -> EventsourcingLedger:
    import psycopg
    from psycopg.sql import SQL, Identifier

    conninfo, schema = database.conninfo, database.schema
    try:
        with psycopg.connect(**conninfo, autocommit=True, connect_timeout=5) as conn:
            if _tables_exist(conn, schema):  # no DDL: a role that may only read can open the ledger
                return _postgres_recorders(conninfo, schema, pool_size, create=False)
            # Processes opening a fresh schema at once race in the catalog ("tuple concurrently updated",
            # duplicate types): the first one creates the schema and tables, the others wait for it.
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"caseboard.ddl/{schema}",))
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
            return _postgres_recorders(conninfo, schema, pool_size, create=True)
    except psycopg.Error as error:
        raise LedgerUnavailable(f"cannot reach PostgreSQL at {database.host}:{database.port}: {error}") from error


def _tables_exist(conn: Any, schema: str) -> bool:
    names = [f'"{schema}".{table}' for table in (COMMITS_TABLE, SNAPSHOTS_TABLE, f"{COMMITS_TABLE}_tx_idx")]
    row = conn.execute("SELECT count(to_regclass(name)) FROM unnest(%s::text[]) AS name", (names,)).fetchone()
    return bool(row[0] == len(names))


def _postgres_recorders(conninfo: dict[str, Any], schema: str, pool_size: int, *, create: bool) -> EventsourcingLedger:
    from caseboard.ledger.connections import GuardedDatastore
    from caseboard.ledger.postgres import LedgerRecorder, SnapshotRecorder

    # Connections are opened on demand and reused last in, first out (a caller keeps meeting the same warm
    # backend), every wait on them bounded (caseboard/ledger/connections.py, ADR 0040). Appends do not take
    # turns in the pool: the group commit's writer keeps a connection of its own (LedgerRecorder._writer_cursor).
    datastore = GuardedDatastore(
        **conninfo,
        schema=schema,
        pool_size=pool_size * 3,
        originator_id_type="text",
    )
    try:
        events = LedgerRecorder(datastore, events_table_name=COMMITS_TABLE)
        snapshots = SnapshotRecorder(datastore, events_table_name=SNAPSHOTS_TABLE)
        if create:
            events.create_table()
            snapshots.create_table()
    except Exception as error:
        datastore.close()
        raise LedgerUnavailable(f"cannot prepare the ledger in schema {schema!r}: {error}") from error

    def close() -> None:
        events.release_writer()
        datastore.close()

    table = f'"{schema}".{IMPORTS_TABLE}'

    def pg_table(cursor: Any) -> bool:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL AS present", (table,))
        return bool(cursor.fetchone()["present"])

    marks = ImportMarks(lambda write: datastore.transaction(commit=write), table, "%s", pg_table)
    return EventsourcingLedger(events, snapshots, close, native=events, marks=marks)
