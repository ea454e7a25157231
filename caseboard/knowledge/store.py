"""The knowledge store: entries promoted from verified findings, kept apart from the ledger (docs/knowledge.md).

Its own tables (``knowledge_entries``, ``knowledge_position``): a SQLite file beside an embedded ledger
(``knowledge.db``), tables in the ledger's PostgreSQL database in production. Every read and write names a
tenant. An entry has two clocks: when it held in the world (``valid_from``, ``valid_until``) and when caseboard
recorded and retired it (``recorded_at``, ``retired_at``, both commit times, so a rebuild from the ledger
gives the same rows). Nothing is ever deleted: a retired entry stays readable and is never served as current.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import LedgerUnavailable
from caseboard.domain.workspace_key import bare

COLUMNS = (
    "tenant_id",
    "entry_id",
    "workspace_id",
    "version",
    "item_index",
    "finding",
    "finding_kind",
    "statement",
    "service",
    "environment",
    "owner",
    "valid_from",
    "valid_until",
    "recorded_at",
    "verification_version",
    "verified_by",
    "verified_hypothesis",
    "evidence",
    "excerpts",
    "retired_at",
    "retire_reason",
    "contradicted_by",
    "retired_in",
    "suspicious",
)

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS knowledge_entries (
        tenant_id TEXT NOT NULL,
        entry_id TEXT NOT NULL,
        workspace_id TEXT NOT NULL,
        version INTEGER NOT NULL,
        item_index INTEGER NOT NULL,
        finding TEXT NOT NULL,
        finding_kind TEXT NOT NULL,
        statement TEXT NOT NULL,
        service TEXT NOT NULL,
        environment TEXT NOT NULL,
        owner TEXT NOT NULL,
        valid_from TEXT NOT NULL,
        valid_until TEXT,
        recorded_at TEXT NOT NULL,
        verification_version INTEGER NOT NULL,
        verified_by TEXT,
        verified_hypothesis TEXT NOT NULL,
        evidence TEXT NOT NULL,
        excerpts TEXT NOT NULL,
        retired_at TEXT,
        retire_reason TEXT,
        contradicted_by TEXT,
        retired_in TEXT,
        suspicious TEXT NOT NULL DEFAULT '[]',
        PRIMARY KEY (tenant_id, entry_id)
    )""",
    "CREATE INDEX IF NOT EXISTS knowledge_entries_service ON knowledge_entries (tenant_id, service)",
    """CREATE TABLE IF NOT EXISTS knowledge_position (
        name TEXT PRIMARY KEY, tx BIGINT NOT NULL, notification_id BIGINT NOT NULL
    )""",
)


def when(value: datetime) -> str:
    """A time as stored: UTC, ISO 8601, so that text order is time order."""
    return value.astimezone(UTC).isoformat()


@dataclass(frozen=True)
class Entry:
    """One knowledge entry: a promoted finding with its provenance and its two clocks."""

    tenant_id: str
    entry_id: str
    workspace_id: str
    version: int
    item_index: int
    finding: str
    finding_kind: str
    statement: str
    service: str
    environment: str
    owner: str
    valid_from: str
    valid_until: str | None
    recorded_at: str
    verification_version: int
    verified_by: str | None
    verified_hypothesis: str
    evidence: tuple[str, ...] = ()
    excerpts: tuple[tuple[str, str], ...] = ()
    """For each observation among ``evidence`` that cites an artifact's excerpt: its id and the excerpt's
    SHA-256 as the coordinator recorded it (docs/adr/0081)."""
    retired_at: str | None = None
    retire_reason: str | None = None
    contradicted_by: str | None = None
    retired_in: str | None = None
    suspicious: tuple[str, ...] = ()
    """The signals the coordinator flagged the promotion's statement with (``domain/injection.py``): such an
    entry is served flagged and never as verified (docs/adr/0143)."""

    @property
    def retired(self) -> bool:
        return self.retired_at is not None

    def current(self, as_of: datetime) -> bool:
        """Served as current at ``as_of``: not retired, and not past its ``valid_until``."""
        return not self.retired and (self.valid_until is None or self.valid_until > when(as_of))

    def row(self) -> tuple[Any, ...]:
        values = asdict(self)
        values["evidence"] = json.dumps(list(self.evidence))
        values["excerpts"] = json.dumps(dict(self.excerpts))
        values["suspicious"] = json.dumps(list(self.suspicious))
        return tuple(values[name] for name in COLUMNS)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> Entry:
        values = dict(zip(COLUMNS, row, strict=True))
        values["evidence"] = tuple(json.loads(values["evidence"]))
        values["excerpts"] = tuple(sorted(json.loads(values["excerpts"]).items()))
        values["suspicious"] = tuple(json.loads(values["suspicious"]))
        return cls(**values)

    def document(self, as_of: datetime) -> dict[str, Any]:
        """The entry as retrieval gives it: labelled a prior finding of another incident, with provenance."""
        return {
            "entry_id": self.entry_id,
            "kind": "prior_finding",
            "label": f"prior finding from incident {bare(self.workspace_id)}, not evidence for the current incident",
            "statement": self.statement,
            "scope": {"service": self.service, "environment": self.environment},
            "owner": self.owner,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
            "recorded_at": self.recorded_at,
            "current": self.current(as_of),
            "suspicious": list(self.suspicious),
            "retired": None
            if self.retired_at is None
            else {
                "at": self.retired_at,
                "reason": self.retire_reason,
                "contradicted_by": self.contradicted_by,
                "recorded_in": self.retired_in,
            },
            "provenance": {
                "workspace_id": bare(self.workspace_id),  # stored as its key (docs/adr/0130)
                "version": self.version,
                "item_index": self.item_index,
                "finding": self.finding,
                "finding_kind": self.finding_kind,
                "verification": {
                    "workspace_version": self.verification_version,
                    "hypothesis": self.verified_hypothesis,
                    "verified_by": self.verified_by,
                },
                "evidence": list(self.evidence),
                "excerpt_sha256": dict(self.excerpts),
            },
        }


@dataclass
class KnowledgeStore:
    """The tables on one connection (SQLite) or a connection per call (PostgreSQL)."""

    url: DatabaseUrl | str
    """Where the tables are (a ``sqlite:///`` file or the ledger's PostgreSQL schema), or ``:memory:``."""
    _postgres: DatabaseUrl | None = field(default=None, repr=False)
    _sqlite: sqlite3.Connection | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _fresh: bool = field(default=True, repr=False)

    @property
    def postgres(self) -> bool:
        return self._postgres is not None

    def __post_init__(self) -> None:
        path: Path | str = ":memory:"
        if self.url != ":memory:":
            database = DatabaseUrl.parse(self.url)
            if database.sqlite_path is None:
                self._postgres = database
            else:
                path = database.sqlite_path
                path.parent.mkdir(parents=True, exist_ok=True)
        if self._postgres is None:
            self._sqlite = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            # SQLite's own LOWER folds ASCII only; the pattern is folded by Python, so the column is too
            self._sqlite.create_function("LOWER", 1, _lower, deterministic=True)
        with self._cursor() as cursor:
            for statement in SCHEMA:
                cursor.execute(statement)
            cursor.execute("SELECT * FROM knowledge_entries LIMIT 0")
            if "suspicious" not in {column[0] for column in cursor.description}:  # a store made before it
                cursor.execute("ALTER TABLE knowledge_entries ADD COLUMN suspicious TEXT NOT NULL DEFAULT '[]'")
        self._fresh = False

    @contextmanager
    def _cursor(self) -> Iterator[Any]:
        """A cursor in one transaction, committed when the block ends."""
        with self._lock:
            if self._sqlite is not None:
                lite = self._sqlite.cursor()
                lite.execute("BEGIN IMMEDIATE")
                try:
                    yield lite
                except BaseException:
                    lite.execute("ROLLBACK")
                    raise
                lite.execute("COMMIT")
                return
            import psycopg

            assert self._postgres is not None
            schema = self._postgres.schema
            try:
                with (
                    psycopg.connect(**self._postgres.conninfo, connect_timeout=5) as connection,
                    connection.cursor() as pg,
                ):
                    if self._fresh:  # processes opening a fresh schema at once wait for the first one's DDL
                        pg.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"caseboard.knowledge/{schema}",))
                        pg.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                    pg.execute(f'SET LOCAL search_path TO "{schema}"')
                    yield _Qmark(pg)
            except psycopg.OperationalError as error:
                raise LedgerUnavailable(f"the knowledge store cannot be reached: {error}") from error

    def insert(self, entry: Entry) -> bool:
        """Write ``entry`` once: a second delivery of the same promotion (same id) changes nothing, and neither
        does a later promotion of a finding the workspace has an entry for that is not retired."""
        marks = ", ".join("?" for _ in COLUMNS)
        with self._cursor() as cursor:
            cursor.execute(
                f"INSERT INTO knowledge_entries ({', '.join(COLUMNS)}) SELECT {marks} WHERE NOT EXISTS ("
                "SELECT 1 FROM knowledge_entries WHERE tenant_id = ? AND workspace_id = ? AND finding = ? "
                "AND retired_at IS NULL) ON CONFLICT (tenant_id, entry_id) DO NOTHING",
                (*entry.row(), entry.tenant_id, entry.workspace_id, entry.finding),
            )
            return bool(cursor.rowcount)

    def refute(self, workspace_id: str, claim: str, at: str, where: str) -> int:
        """Retire the entries of workspace ``workspace_id`` (its key) that rest on ``claim``, which a verification
        there has now refuted; how many."""
        with self._cursor() as cursor:
            cursor.execute(
                "UPDATE knowledge_entries SET retired_at = ?, retire_reason = ?, contradicted_by = ?, retired_in = ? "
                "WHERE workspace_id = ? AND (finding = ? OR verified_hypothesis = ?) AND retired_at IS NULL",
                (at, f"{claim} was refuted in its own incident", bare(workspace_id), where, workspace_id, claim, claim),
            )
            return int(cursor.rowcount)

    def retire(self, tenant_id: str, entry_id: str, at: str, reason: str, contradicted_by: str, where: str) -> bool:
        """Mark the tenant's entry retired, once: the first retirement is kept, a later one changes nothing."""
        with self._cursor() as cursor:
            cursor.execute(
                "UPDATE knowledge_entries SET retired_at = ?, retire_reason = ?, contradicted_by = ?, retired_in = ? "
                "WHERE tenant_id = ? AND entry_id = ? AND retired_at IS NULL",
                (at, reason, contradicted_by, where, tenant_id, entry_id),
            )
            return bool(cursor.rowcount)

    def search(
        self,
        tenant_id: str,
        *,
        service: str | None = None,
        text: str | None = None,
        include_retired: bool = False,
        as_of: datetime | None = None,
        limit: int = 100,
    ) -> list[Entry]:
        """The tenant's entries for ``service`` whose statement holds ``text`` (any case), current ones only
        unless ``include_retired``; oldest first."""
        moment = as_of or datetime.now(UTC)
        query = "SELECT " + ", ".join(COLUMNS) + " FROM knowledge_entries WHERE tenant_id = ?"
        params: list[Any] = [tenant_id]
        if service is not None:
            query += " AND service = ?"
            params.append(service)
        if text:
            query += " AND LOWER(statement) LIKE ? ESCAPE '!'"
            params.append("%" + _literal(text.lower()) + "%")
        if not include_retired:
            query += " AND retired_at IS NULL AND (valid_until IS NULL OR valid_until > ?)"
            params.append(when(moment))
        query += " ORDER BY recorded_at, entry_id LIMIT ?"
        params.append(limit)
        with self._cursor() as cursor:
            cursor.execute(query, params)
            return [Entry.from_row(row) for row in cursor.fetchall()]

    def entries(self, tenant_id: str | None = None) -> list[Entry]:
        """Every entry (of one tenant, or all), retired ones included, in id order."""
        query = "SELECT " + ", ".join(COLUMNS) + " FROM knowledge_entries"
        params: tuple[Any, ...] = ()
        if tenant_id is not None:
            query += " WHERE tenant_id = ?"
            params = (tenant_id,)
        with self._cursor() as cursor:
            cursor.execute(query + " ORDER BY tenant_id, entry_id", params)
            return [Entry.from_row(row) for row in cursor.fetchall()]

    def position(self, name: str) -> tuple[int, int]:
        with self._cursor() as cursor:
            cursor.execute("SELECT tx, notification_id FROM knowledge_position WHERE name = ?", (name,))
            row = cursor.fetchone()
        return (0, 0) if row is None else (int(row[0]), int(row[1]))

    def save_position(self, name: str, position: tuple[int, int]) -> None:
        with self._cursor() as cursor:
            cursor.execute(
                "INSERT INTO knowledge_position (name, tx, notification_id) VALUES (?, ?, ?) "
                "ON CONFLICT (name) DO UPDATE SET tx = excluded.tx, notification_id = excluded.notification_id",
                (name, *position),
            )

    def replace_all(self, entries: Sequence[Entry]) -> None:
        """The rebuild's rows in place of the stored ones (the store is derived from the ledger)."""
        marks = ", ".join("?" for _ in COLUMNS)
        with self._cursor() as cursor:
            cursor.execute("DELETE FROM knowledge_entries")
            for entry in entries:
                cursor.execute(f"INSERT INTO knowledge_entries ({', '.join(COLUMNS)}) VALUES ({marks})", entry.row())

    def close(self) -> None:
        if self._sqlite is not None:
            self._sqlite.close()
            self._sqlite = None


def _literal(text: str) -> str:
    """``text`` as a LIKE pattern matching itself: its ``%`` and ``_`` are text, not wildcards."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def _lower(value: str | None) -> str | None:
    return None if value is None else value.lower()


class _Qmark:
    """A psycopg cursor that takes the ``?`` placeholders the SQLite statements use."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def execute(self, query: str, params: Sequence[Any] = ()) -> None:
        self.cursor.execute(query.replace("?", "%s"), params)

    def fetchall(self) -> list[Any]:
        return list(self.cursor.fetchall())

    def fetchone(self) -> Any:
        return self.cursor.fetchone()

    @property
    def description(self) -> Any:
        return self.cursor.description

    @property
    def rowcount(self) -> int:
        return int(self.cursor.rowcount)


def open_knowledge_store(database_url: DatabaseUrl | str) -> KnowledgeStore:
    """The store that goes with the ledger at ``database_url``: ``knowledge.db`` beside an embedded SQLite
    ledger (in memory for an in-memory one, ``memory://``), the ledger's PostgreSQL schema otherwise."""
    if database_url in ("", "memory:", "memory://"):
        return KnowledgeStore(":memory:")
    database = DatabaseUrl.parse(database_url)
    if database.sqlite_path is not None:
        return KnowledgeStore(DatabaseUrl(kind="sqlite", sqlite_path=database.sqlite_path.parent / "knowledge.db"))
    return KnowledgeStore(database)
