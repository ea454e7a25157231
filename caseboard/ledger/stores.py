"""Opening a ledger from its URL: ``sqlite:///path``, ``postgresql://user@host:port/db?schema=name``.

The store is always named explicitly; there is no silent in-memory default (``memory://`` exists for tests
and is refused by the settings).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from eventsourcing.popo import POPOAggregateRecorder, POPOApplicationRecorder
from eventsourcing.sqlite import SQLiteAggregateRecorder, SQLiteApplicationRecorder, SQLiteDatastore

from caseboard.domain.errors import ConfigurationError, LedgerUnavailable
from caseboard.ledger.base import EventsourcingLedger

COMMITS_TABLE = "caseboard_commits"
SNAPSHOTS_TABLE = "caseboard_snapshots"


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
    Path(path).parent.mkdir(parents=True, exist_ok=True)
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
    from eventsourcing.postgres import PostgresDatastore
    from psycopg.sql import SQL, Identifier

    from caseboard.ledger.postgres import LedgerRecorder, SnapshotRecorder

    parts = urlparse(url)
    query = parse_qs(parts.query)
    schema = query.get("schema", ["public"])[0]
    dbname = unquote(parts.path.lstrip("/")) or "postgres"
    conninfo = dict(
        dbname=dbname, host=parts.hostname or "127.0.0.1", port=parts.port or 5432,
        user=unquote(parts.username or "postgres"), password=unquote(parts.password or ""),
    )  # fmt: skip
    try:
        with psycopg.connect(**conninfo, autocommit=True, connect_timeout=5) as conn:  # type: ignore[arg-type]
            conn.execute(SQL("CREATE SCHEMA IF NOT EXISTS {}").format(Identifier(schema)))
    except psycopg.Error as error:
        raise LedgerUnavailable(f"cannot reach PostgreSQL at {parts.hostname}:{conninfo['port']}: {error}") from error
    datastore = PostgresDatastore(
        **conninfo, schema=schema, pool_size=pool_size, max_overflow=pool_size * 2,  # type: ignore[arg-type]
        originator_id_type="text", connect_timeout=5,
    )  # fmt: skip
    events = LedgerRecorder(datastore, events_table_name=COMMITS_TABLE)
    snapshots = SnapshotRecorder(datastore, events_table_name=SNAPSHOTS_TABLE)
    try:
        events.create_table()
        snapshots.create_table()
    except Exception as error:
        datastore.close()
        raise LedgerUnavailable(f"cannot prepare the PostgreSQL ledger in schema {schema!r}: {error}") from error
    return EventsourcingLedger(events, snapshots, datastore.close)
