"""The evidence repository: artifacts by the SHA-256 of their bytes, per tenant, apart from the ledger.

``open_artifact_store(database_url, ...)`` picks the backend that goes with the ledger: files under
``artifacts/`` next to a SQLite ledger (``.caseboard/artifacts/`` by default), tables of their own in the
schema of a PostgreSQL one (docs/adr/0080).
"""

from __future__ import annotations

from caseboard.database_url import DatabaseUrl
from caseboard.evidence.model import (
    DEFAULT_MAX_BYTES,
    ArtifactAltered,
    ArtifactError,
    ArtifactMeta,
    ArtifactNotFound,
    ArtifactStore,
    ArtifactTooLarge,
    RangeOutside,
    Stored,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "ArtifactAltered",
    "ArtifactError",
    "ArtifactMeta",
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactTooLarge",
    "RangeOutside",
    "Stored",
    "open_artifact_store",
]


def open_artifact_store(database_url: DatabaseUrl | str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ArtifactStore:
    database = DatabaseUrl.parse(database_url)
    if database.sqlite_path is not None:
        from caseboard.evidence.files import FileArtifactStore

        return FileArtifactStore(database.sqlite_path.parent / "artifacts", max_bytes=max_bytes)
    from caseboard.evidence.postgres import PostgresArtifactStore

    return PostgresArtifactStore(database, max_bytes=max_bytes)
