"""Reads never create a ledger: a SQLite ledger file that does not exist holds no workspace."""

from __future__ import annotations

from typing import NoReturn

from caseboard.domain.errors import CaseboardError
from caseboard.settings import sqlite_path


def ledger_exists(url: str) -> bool:
    """False only for a SQLite ledger whose file is absent (a server's database is asked, not assumed)."""
    path = sqlite_path(url)
    return path is None or path.exists()


def raise_no_ledger(workspace_id: str, url: str) -> NoReturn:
    raise CaseboardError(
        f"unknown workspace {workspace_id!r}: there is no ledger at {sqlite_path(url)} "
        "(CASEBOARD_DATABASE_URL or --database-url names the ledger; a read creates none)"
    )
