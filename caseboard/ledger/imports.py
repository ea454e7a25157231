"""Which workspaces were imported as records, and the version each record ends at (docs/adr/0158).

    caseboard_imports   workspace key -> the imported head version, the source's head hash, when

An import writes its mark before its commits and removes it when they do not land, so a workspace whose
commits can be read is marked whenever it was imported. A workspace is a record while its head is the
marked version: the only commit the coordinator accepts on one is an operator's ``reopen``, after which the
head has moved past the mark. The table is created by the first import; a ledger without it has no record.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from caseboard.domain.errors import LedgerUnavailable

TABLE = "caseboard_imports"
CREATE = (
    "CREATE TABLE IF NOT EXISTS {table} (workspace_key TEXT PRIMARY KEY, head_version BIGINT NOT NULL, "
    "source_head_hash TEXT, imported_at DOUBLE PRECISION NOT NULL)"
)


class ImportMarks:
    """The marks over one ledger's connections: ``transaction(write)`` yields a cursor whose ``execute`` takes
    the engine's placeholder (``?`` on SQLite, ``%s`` on PostgreSQL), ``table`` names the table in the ledger's
    schema and ``exists`` says whether it was created yet."""

    def __init__(
        self,
        transaction: Callable[[bool], Any],
        table: str,
        placeholder: str,
        exists: Callable[[Any], bool],
    ) -> None:
        self._transaction = transaction
        self._table = table
        self._p = placeholder
        self._exists = exists

    def mark(self, key: str, head_version: int, source_head_hash: str | None) -> None:
        p = self._p
        try:
            with self._transaction(True) as cur:
                cur.execute(CREATE.format(table=self._table))
                cur.execute(f"DELETE FROM {self._table} WHERE workspace_key = {p}", (key,))
                cur.execute(
                    f"INSERT INTO {self._table} (workspace_key, head_version, source_head_hash, imported_at) "
                    f"VALUES ({p}, {p}, {p}, {p})",
                    (key, head_version, source_head_hash, time.time()),
                )
        except Exception as error:
            raise LedgerUnavailable(f"the ledger's import mark could not be written: {error}") from error

    def unmark(self, key: str) -> None:
        try:
            with self._transaction(True) as cur:
                if self._exists(cur):
                    cur.execute(f"DELETE FROM {self._table} WHERE workspace_key = {self._p}", (key,))
        except Exception as error:
            raise LedgerUnavailable(f"the ledger's import mark could not be removed: {error}") from error

    def head(self, key: str) -> int | None:
        """The version the imported record ``key`` ends at; None when it was never imported."""
        try:
            with self._transaction(False) as cur:
                if not self._exists(cur):
                    return None
                cur.execute(f"SELECT head_version FROM {self._table} WHERE workspace_key = {self._p}", (key,))
                row = cur.fetchone()
                if isinstance(row, dict):  # PostgreSQL's cursors give rows as dicts
                    row = (row["head_version"],)
        except LedgerUnavailable:
            raise
        except Exception as error:
            raise LedgerUnavailable(f"the ledger's import marks could not be read: {error}") from error
        return None if row is None else int(row[0])


class MemoryMarks:
    """The marks of an in-memory ledger (tests)."""

    def __init__(self) -> None:
        self._heads: dict[str, int] = {}

    def mark(self, key: str, head_version: int, source_head_hash: str | None) -> None:
        self._heads[key] = head_version

    def unmark(self, key: str) -> None:
        self._heads.pop(key, None)

    def head(self, key: str) -> int | None:
        return self._heads.get(key)
