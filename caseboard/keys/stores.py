"""Key stores: a table ``caseboard_api_keys`` beside the ledger (SQLite or PostgreSQL), or memory for tests.

The table is created on first use, in the same database (and PostgreSQL schema) as the ledger, so one
``CASEBOARD_DATABASE_URL`` names both. Rows are never deleted: a revoked key keeps its record.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import ConfigurationError, LedgerUnavailable
from caseboard.domain.items import Role
from caseboard.keys.model import ApiKey, IssuedKey, KeyStore, hash_secret, matches, new_token, split_token

TABLE = "caseboard_api_keys"
COLUMNS = "key_id, secret_sha256, principal, roles, tenant_id, label, created_at, revoked_at"


def _now() -> datetime:
    return datetime.now(UTC)


def _record(row: Sequence[Any]) -> tuple[ApiKey, str]:
    key_id, secret_sha256, principal, roles, tenant_id, label, created_at, revoked_at = row
    key = ApiKey(
        key_id=key_id,
        principal=principal,
        roles=tuple(Role(r) for r in roles.split(",")),
        tenant_id=tenant_id,
        label=label,
        created_at=datetime.fromisoformat(created_at),
        revoked_at=datetime.fromisoformat(revoked_at) if revoked_at else None,
    )
    return key, secret_sha256


class MemoryKeyStore:
    """The in-memory twin, for unit tests and ``memory://`` ledgers."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[ApiKey, str]] = {}
        self._guard = threading.Lock()

    def create(self, principal: str, roles: tuple[Role, ...], tenant_id: str, label: str | None = None) -> IssuedKey:
        key, token = _new_key(principal, roles, tenant_id, label)
        key_id = key.key_id
        with self._guard:
            self._rows[key_id] = (key, hash_secret(token))
        return IssuedKey(key=key, token=token)

    def authenticate(self, token: str) -> ApiKey | None:
        key_id = split_token(token)
        row = self._rows.get(key_id) if key_id else None
        if row is None or not matches(token, row[1]) or not row[0].active:
            return None
        return row[0]

    def list(self) -> list[ApiKey]:
        return sorted((key for key, _ in self._rows.values()), key=lambda k: (k.created_at, k.key_id))

    def revoke(self, key_id: str) -> ApiKey | None:
        with self._guard:
            row = self._rows.get(key_id)
            if row is None:
                return None
            key = row[0] if row[0].revoked_at else row[0].model_copy(update={"revoked_at": _now()})
            self._rows[key_id] = (key, row[1])
            return key

    def close(self) -> None:
        pass


def _new_key(principal: str, roles: tuple[Role, ...], tenant_id: str, label: str | None) -> tuple[ApiKey, str]:
    """A new key and its token (the token is shown once; only its hash is kept)."""
    key_id, token = new_token()
    key = ApiKey(
        key_id=key_id, principal=principal, roles=_roles(roles), tenant_id=tenant_id, label=label, created_at=_now()
    )
    return key, token


class SqlKeyStore:
    """Keys in a SQL table; ``run`` executes one statement (``%s`` placeholders) and returns its rows."""

    def __init__(self, table: str, run: Any, closer: Any = None) -> None:
        self.table = table
        self._run = run
        self._closer = closer
        self._run(
            f"CREATE TABLE IF NOT EXISTS {table} (key_id text PRIMARY KEY, secret_sha256 text NOT NULL, "
            "principal text NOT NULL, roles text NOT NULL, tenant_id text NOT NULL, label text, "
            "created_at text NOT NULL, revoked_at text)",
            (),
        )

    def create(self, principal: str, roles: tuple[Role, ...], tenant_id: str, label: str | None = None) -> IssuedKey:
        key, token = _new_key(principal, roles, tenant_id, label)
        key_id = key.key_id
        self._run(
            f"INSERT INTO {self.table} ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, NULL)",
            (
                key_id,
                hash_secret(token),
                principal,
                ",".join(r.value for r in key.roles),
                tenant_id,
                label,
                key.created_at.isoformat(),
            ),
        )
        return IssuedKey(key=key, token=token)

    def authenticate(self, token: str) -> ApiKey | None:
        key_id = split_token(token)
        if key_id is None:
            return None
        rows = self._run(f"SELECT {COLUMNS} FROM {self.table} WHERE key_id = %s", (key_id,))
        if not rows:
            return None
        key, stored = _record(rows[0])
        if not matches(token, stored) or not key.active:
            return None
        return key

    def list(self) -> list[ApiKey]:
        rows = self._run(f"SELECT {COLUMNS} FROM {self.table} ORDER BY created_at, key_id", ())
        return [_record(row)[0] for row in rows]

    def revoke(self, key_id: str) -> ApiKey | None:
        self._run(
            f"UPDATE {self.table} SET revoked_at = %s WHERE key_id = %s AND revoked_at IS NULL",
            (_now().isoformat(), key_id),
        )
        rows = self._run(f"SELECT {COLUMNS} FROM {self.table} WHERE key_id = %s", (key_id,))
        return _record(rows[0])[0] if rows else None

    def close(self) -> None:
        if self._closer is not None:
            self._closer()


def _roles(roles: tuple[Role, ...]) -> tuple[Role, ...]:
    if not roles:
        raise ConfigurationError("a key needs at least one role")
    return tuple(dict.fromkeys(Role(r) for r in roles))


def open_key_store(url: DatabaseUrl | str, *, pool_size: int = 4) -> KeyStore:
    """The key store that lives beside the ledger named by ``url``."""
    if url == "memory://":
        return MemoryKeyStore()
    database = DatabaseUrl.parse(url)
    if database.sqlite_path is not None:
        return _sqlite(database.sqlite_path)
    return _postgres(database, pool_size)


def _sqlite(path: Path) -> SqlKeyStore:
    path.parent.mkdir(parents=True, exist_ok=True)

    def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            with sqlite3.connect(path, timeout=30) as conn:
                rows = conn.execute(sql.replace("%s", "?"), params).fetchall()
            conn.close()
        except sqlite3.Error as error:
            raise LedgerUnavailable(f"the key store at {path} failed: {error}") from error
        return rows

    return SqlKeyStore(TABLE, run)


def _postgres(database: DatabaseUrl, pool_size: int) -> SqlKeyStore:
    """Keys on PostgreSQL, through the ledger's kind of pool: every wait bounded, and a prompt
    ``LedgerUnavailable`` while the database is unreachable (caseboard/ledger/connections.py)."""
    import psycopg

    from caseboard.ledger.connections import Connections

    schema = database.schema
    pool = Connections(database.conninfo, size=pool_size)
    try:
        with psycopg.connect(**pool.conninfo, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    except psycopg.Error as error:
        raise LedgerUnavailable(f"cannot reach PostgreSQL for the key store: {error}") from error

    def run(sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        try:
            conn = pool.getconn()
        except psycopg.Error as error:
            raise LedgerUnavailable(f"the key store cannot reach PostgreSQL: {error}") from error
        try:
            cursor = conn.execute(sql, params, prepare=True)
            rows = cursor.fetchall() if cursor.description else []
        except psycopg.Error as error:
            pool.putconn(conn, error)
            raise LedgerUnavailable(f"the key store failed: {error}") from error
        pool.putconn(conn)
        return rows

    return SqlKeyStore(f'"{schema}".{TABLE}', run, pool.close)
