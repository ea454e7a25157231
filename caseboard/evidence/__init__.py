"""The evidence repository: artifacts by the SHA-256 of their bytes, per tenant, apart from the ledger.

``open_artifact_store(database_url, ...)`` picks the backend that goes with the ledger: files under
``artifacts/`` next to a SQLite ledger (``.caseboard/artifacts/`` by default), tables of their own in the
schema of a PostgreSQL one (docs/adr/0080).
"""

from __future__ import annotations

from pathlib import Path

from caseboard.domain.errors import ConfigurationError
from caseboard.evidence.model import (
    DEFAULT_MAX_BYTES,
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
    "ArtifactError",
    "ArtifactMeta",
    "ArtifactNotFound",
    "ArtifactStore",
    "ArtifactTooLarge",
    "RangeOutside",
    "Stored",
    "open_artifact_store",
]


def open_artifact_store(database_url: str, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ArtifactStore:
    scheme = database_url.split(":", 1)[0]
    if scheme == "sqlite" and database_url.startswith("sqlite:///") and len(database_url) > len("sqlite:///"):
        from caseboard.evidence.files import FileArtifactStore

        return FileArtifactStore(Path(database_url[len("sqlite:///") :]).parent / "artifacts", max_bytes=max_bytes)
    if scheme in ("postgresql", "postgres"):
        from caseboard.evidence.postgres import PostgresArtifactStore

        return PostgresArtifactStore(database_url, max_bytes=max_bytes)
    raise ConfigurationError(
        f"no artifact store goes with {database_url!r}: the store follows the ledger (sqlite:///path or postgresql://)"
    )
