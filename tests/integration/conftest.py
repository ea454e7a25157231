"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from caseboard.evidence import ArtifactStore, open_artifact_store
from caseboard.evidence.model import BLOCK


@pytest.fixture(params=["files", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ledger URL an artifact store follows: the file store beside a SQLite ledger, or PostgreSQL's."""
    if request.param == "files":
        return f"sqlite:///{tmp_path}/ledger.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def store(store_url: str) -> Iterator[ArtifactStore]:
    """An artifact store of each kind, bounded at eight blocks an artifact."""
    opened = open_artifact_store(store_url, max_bytes=8 * BLOCK)
    yield opened
    opened.close()
