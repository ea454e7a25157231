"""Fixtures shared by the integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from caseboard.evidence import ArtifactStore, open_artifact_store
from caseboard.evidence.model import BLOCK


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest) -> str:
    """A ledger URL on each durable engine: a SQLite file (its artifacts are files beside it) or a fresh
    PostgreSQL schema (``sqlite_url`` and ``postgres_url`` of tests/conftest.py)."""
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def store(durable_url: str) -> Iterator[ArtifactStore]:
    """An artifact store of each kind, bounded at eight blocks an artifact."""
    opened = open_artifact_store(durable_url, max_bytes=8 * BLOCK)
    yield opened
    opened.close()
