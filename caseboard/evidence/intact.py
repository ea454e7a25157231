"""Serving an artifact's bytes only while they still hash to its id (docs/adr/0142).

An artifact's id is the SHA-256 of its bytes, checked when it is stored; whoever can write the store (the files
under ``artifacts/``, the PostgreSQL tables) can change the bytes afterwards. ``check_intact`` reads them once
and raises ``ArtifactAltered`` when they do not hash to the id, before anything is served; ``intact_chunks``
serves them hashing as it goes and keeps the last chunk back until the digest holds, so bytes changed between
the check and the serving end the response short of its ``Content-Length`` instead of completing it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

from caseboard.evidence.model import ArtifactAltered, ArtifactStore


def check_intact(store: ArtifactStore, tenant_id: str, artifact_id: str) -> None:
    """``ArtifactAltered`` unless the tenant's artifact's stored bytes hash to ``artifact_id``."""
    digest = hashlib.sha256()
    for chunk in store.read(tenant_id, artifact_id):
        digest.update(chunk)
    if f"sha256:{digest.hexdigest()}" != artifact_id:
        raise ArtifactAltered(artifact_id)


def intact_chunks(store: ArtifactStore, tenant_id: str, artifact_id: str) -> Iterator[bytes]:
    """The artifact's bytes, the last chunk only once all of them hashed to ``artifact_id`` (else
    ``ArtifactAltered``, raised instead of it)."""
    digest = hashlib.sha256()
    held: bytes | None = None
    for chunk in store.read(tenant_id, artifact_id):
        digest.update(chunk)
        if held is not None:
            yield held
        held = chunk
    if f"sha256:{digest.hexdigest()}" != artifact_id:
        raise ArtifactAltered(artifact_id)
    if held is not None:
        yield held
