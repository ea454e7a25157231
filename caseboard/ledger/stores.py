"""Opening a ledger from its URL: ``sqlite:///path``, ``postgresql://user@host:port/db?schema=name``.

The store is always named explicitly; there is no silent in-memory default (``memory://`` exists for tests
and is refused by the settings).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from eventsourcing.popo import POPOAggregateRecorder, POPOApplicationRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteApplicationRecorder, SQLiteDatastore

from caseboard.domain.errors import ConfigurationError, LedgerUnavailable
from caseboard.ledger.base import EventsourcingLedger

COMMITS_TABLE = "caseboard_commits"
SNAPSHOTS_TABLE = "caseboard_snapshots"
SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def open_ledger(url: str, *, pool_size: int = 4) -> EventsourcingLedger:
    scheme = url.split(":", 1)[0]
    if url == "memory://":
        return EventsourcingLedger(POPOApplicationRecorder(), POPOAggregateRecorder())
    if scheme == "sqlite":
        return _sqlite(url)
    if scheme in ("postgresql", "postgres"):
        return _postgres(url, pool_size)
    raise ConfigurationError(
        f"CASEBOARD_DATABASE_URL {url!r} is not supported: use sqlite:///path/to/ledger.db or "
        "postgresql://user@host:5432/dbname"
    )


def _sqlite(url: str) -> EventsourcingLedger:
    path = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
    if not path:
        raise ConfigurationError(f"{url!r}: a SQLite ledger URL looks like sqlite:///path/to/ledger.db")
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise LedgerUnavailable(f"cannot create the folder of the SQLite ledger {path}: {error}") from error
    datastore = SQLiteDatastore(path, originator_id_type="text", pool_size=2, max_overflow=8, pool_timeout=30)
    try:
        events = SQLiteApplicationRecorder(datastore, events_table_name=COMMITS_TABLE)
        snapshots = SQLiteAggregateRecorder(datastore, events_table_name=SNAPSHOTS_TABLE)
        events.create_table()
        snapshots.create_table()
    except Exception as error:
        datastore.close()
        raise LedgerUnavailable(f"cannot open the SQLite ledger at {path}: {error}") from error
    return EventsourcingLedger(events, snapshots, datastore.close)


def _postgres(url: str, pool_size: int) -> EventsourcingLedger:
    import psycopg
    from psycopg.sql import SQL, Identifier

    try:
        parts = urlparse(url)
        port = parts.port or 5432
    except ValueError as error:
        raise ConfigurationError(f"CASEBOARD_DATABASE_URL {url!r} is not a valid URL: {error}") from None
    schema = parse_qs(parts.query).get("schema", ["public"])[0]
    if not SCHEMA_NAME.fullmatch(schema):
        raise ConfigurationError(
            f"schema {schema!r} in CASEBOARD_DATABASE_URL: use lower-case letters, digits and underscores"
        )
    dbname = unquote(parts.path.lstrip("/")) or "postgres"
    conninfo = dict(
        dbname=dbname,
        host=parts.hostname or "127.0.0.1",
        port=port,
        user=unquote(parts.username or "postgres"),
        password=unquote(parts.password or ""),
    )
    try:
        with psycopg.connect(**conninfo, autocommit=True, connect_timeout=5) as conn:  # type: ignore[arg-type]
            if _tables_exist(conn, schema):  # no DDL: a role that may only read can open the ledger
                return _postgres_recorders(conninfo, schema, pool_size, create=False)
            # Processes opening a fresh schema at once race in the catalog ("tuple concurrently updated",
            # duplicate types): the first one creates the schema and tables, the others wait for it.
            conn.execute("SELECT pg_advisory_lock(hashtext(%s))", (f"caseboard.ddl/{schema}",))
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
            return _postgres_recorders(conninfo, schema, pool_size, create=True)
    except psycopg.Error as error:
        raise LedgerUnavailable(f"cannot reach PostgreSQL at {parts.hostname}:{port}: {error}") from error


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

    return EventsourcingLedger(events, snapshots, close, native=events)
