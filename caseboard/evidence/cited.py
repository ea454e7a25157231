"""The excerpts a ledger cites, read back from the store: for the model-facing view and for audits."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from caseboard.domain.citations import Span
from caseboard.domain.commit import Commit
from caseboard.evidence.model import ArtifactError, ArtifactNotFound, ArtifactStore, RangeOutside


@dataclass(frozen=True, slots=True)
class CitedExcerpt:
    """One excerpt a commit recorded: where it is cited, and what the coordinator hashed."""

    version: int
    item: int
    observation: str
    evidence_ref: str
    record: dict[str, Any]

    @property
    def span(self) -> Span:
        if "lines" in self.record:
            return Span("lines", *self.record["lines"])
        return Span("bytes", *self.record["bytes"])


def cited_in(commits: Iterable[Commit]) -> list[CitedExcerpt]:
    """Every excerpt recorded in ``commits``, in ledger order."""
    found = []
    for commit in commits:
        for index, (item, decision) in enumerate(zip(commit.items, commit.decisions, strict=True)):
            record = decision.get("excerpt")
            if not record:
                continue
            body = getattr(item, "observation", None) or item
            ref = getattr(body, "evidence_ref", None)
            if ref is not None:
                found.append(CitedExcerpt(commit.version, index, str(decision.get("id", "")), ref, record))
    return found


def read_excerpt(store: ArtifactStore, tenant_id: str, cited: CitedExcerpt) -> bytes | None:
    """The bytes of a cited excerpt as the store holds them now; None when the artifact is gone (removed under
    retention, or the range no longer inside: the store does not hold what was cited)."""
    try:
        return b"".join(store.excerpt(tenant_id, cited.record["artifact"], cited.span))
    except (ArtifactNotFound, RangeOutside):
        return None


def excerpts_for(
    store: Callable[[], ArtifactStore], tenant_id: str | None, commits: list[Commit]
) -> dict[str, bytes | None]:
    """Each cited evidence_ref of ``commits`` with its bytes from the store (the store is opened only when
    something is cited)."""
    cited = cited_in(commits)
    if not cited or tenant_id is None:
        return {}
    opened = store()
    return {c.evidence_ref: read_excerpt(opened, tenant_id, c) for c in cited}


MAX_SHOWN_BYTES = 512 * 1024
"""The most bytes of a prompt or reply ``stored_bytes`` hands back to be shown (all of them are hashed)."""


def stored_bytes(artifacts: ArtifactStore, tenant_id: str, sha256: str) -> dict[str, Any]:
    """The artifact ``sha256:<sha256>`` of the tenant, checked against the hash a judgment recorded: ``check`` is
    ``verified`` when the stored bytes hash to it, ``mismatch`` when they do not (the artifact was altered), and
    ``missing`` when the store has no such artifact (never stored, or removed under retention); ``text`` the
    bytes as UTF-8 (at most ``MAX_SHOWN_BYTES``; undecodable bytes replaced), None when missing."""
    digest = hashlib.sha256()
    shown = bytearray()
    try:
        for block in artifacts.read(tenant_id, f"sha256:{sha256}"):
            digest.update(block)
            if len(shown) < MAX_SHOWN_BYTES:
                shown += block[: MAX_SHOWN_BYTES - len(shown)]
    except ArtifactError as error:
        return {"check": "missing", "sha256": sha256, "found_sha256": None, "text": None, "detail": str(error)}
    found = digest.hexdigest()
    return {
        "check": "verified" if found == sha256 else "mismatch",
        "sha256": sha256,
        "found_sha256": found,
        "text": shown.decode("utf-8", errors="replace"),
        "detail": None if found == sha256 else f"the stored bytes hash to {found}",
    }
