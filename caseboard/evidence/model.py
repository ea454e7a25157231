"""The artifact store's protocol, its records and its errors (docs/adr/0080).

CaseboardError
└── ArtifactError                  something about an artifact that the caller can act on
    ├── ArtifactNotFound           no such artifact in the tenant (also: another tenant's, a removed one)
    ├── ArtifactTooLarge           the upload crossed the size limit while streaming; nothing was stored
    └── RangeOutside               the lines or bytes asked for are not inside the artifact
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Protocol

from caseboard.domain.citations import CitationFacts, Cited, Span
from caseboard.domain.errors import CaseboardError

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
BLOCK = 1024 * 1024
"""Artifacts are kept in blocks of this many bytes (rows in PostgreSQL)."""
LINE_STEP = 16 * 1024
"""The line index has one entry per this many bytes (docs/adr/0083): a line excerpt reads from at most this far
before its first line. A divisor of ``BLOCK``."""
DEFAULT_MEDIA_TYPE = "application/octet-stream"
MEDIA_TYPE_MAX = 255
"""The longest media type recorded with an artifact (over HTTP, a longer ``Content-Type`` is cut to it)."""
SOURCE_SYSTEM_MAX = 256
"""The longest name of the system an artifact came from."""


class ArtifactError(CaseboardError):
    pass


class ArtifactNotFound(ArtifactError):
    def __init__(self, artifact_id: str, *, removed: bool = False) -> None:
        self.artifact_id = artifact_id
        self.removed = removed
        what = "was removed under retention" if removed else "is not in this tenant's artifact store"
        super().__init__(f"artifact {artifact_id} {what}; `caseboard artifacts list` shows what is stored")


class ArtifactTooLarge(ArtifactError):
    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(
            f"the artifact is over the limit of {limit} bytes (CASEBOARD_ARTIFACT_MAX_BYTES); nothing was stored: "
            "store a smaller artifact (split the bundle) or raise the limit"
        )


class ArtifactAltered(ArtifactError):
    """Bytes read from the store whose SHA-256 is not the artifact's id: changed where they are stored."""

    def __init__(self, artifact_id: str) -> None:
        self.artifact_id = artifact_id
        super().__init__(
            f"artifact {artifact_id}: its stored bytes no longer hash to its id (altered in the store); they are "
            "not served. Store the original again (caseboard artifacts put) to repair it"
        )


class RangeOutside(ArtifactError):
    def __init__(self, artifact_id: str, span: Span, size: int, lines: int) -> None:
        self.span = span
        super().__init__(f"{span.unit} {span.text()} is not inside artifact {artifact_id}: {span.extent(size, lines)}")


@dataclass(frozen=True, slots=True)
class ArtifactMeta:
    """What is recorded with an artifact. ``block_lines[k]`` is the number of newlines before block k;
    ``step_lines[k]`` before byte ``k * line_step`` (docs/adr/0083; empty for an artifact stored before that
    index, whose line excerpts then start from its block)."""

    artifact_id: str
    tenant_id: str
    media_type: str
    size: int
    lines: int
    source_system: str | None
    stored_by: str
    stored_at: datetime
    block_lines: tuple[int, ...] = ()
    removed_at: datetime | None = None
    line_step: int = LINE_STEP
    step_lines: tuple[int, ...] = ()

    def line_index(self) -> tuple[int, tuple[int, ...]]:
        """(bytes per entry, newlines before each entry's byte): the fine index, or the blocks' one."""
        return (self.line_step, self.step_lines) if self.step_lines else (BLOCK, self.block_lines)

    def public(self) -> dict[str, Any]:
        """The metadata as shown to callers (JSON)."""
        shown = asdict(self)
        for index in ("block_lines", "line_step", "step_lines"):
            del shown[index]
        shown["stored_at"] = self.stored_at.isoformat().replace("+00:00", "Z")
        shown["removed_at"] = self.removed_at.isoformat().replace("+00:00", "Z") if self.removed_at else None
        return shown


@dataclass(frozen=True, slots=True)
class Stored:
    meta: ArtifactMeta
    created: bool
    """False when the tenant already had these bytes: the same bytes twice are one artifact."""


class ArtifactStore(Protocol):
    """Artifacts by ``sha256:<hex>`` of their bytes, per tenant. Every method takes the tenant; an artifact of
    another tenant is ``ArtifactNotFound`` exactly like a missing one."""

    max_bytes: int

    def put(
        self,
        tenant_id: str,
        chunks: Iterable[bytes],
        *,
        stored_by: str,
        media_type: str = DEFAULT_MEDIA_TYPE,
        source_system: str | None = None,
        durable: bool = True,
    ) -> Stored:
        """Stream ``chunks`` in; ``ArtifactTooLarge`` as soon as they cross ``max_bytes``. Nothing is visible
        until the whole artifact is stored. ``durable=False``: the bytes are stored to be cited by a commit
        that follows, whose durable commit makes them durable too, so the store need not wait for its own disk
        flush (PostgreSQL: an asynchronous commit, docs/adr/0177); the store's answer is otherwise the same,
        and a backend whose durability is not the ledger's (files) flushes anyway."""
        ...

    def meta(self, tenant_id: str, artifact_id: str) -> ArtifactMeta: ...

    def read(self, tenant_id: str, artifact_id: str) -> Iterator[bytes]:
        """The artifact's bytes, block by block (``ArtifactNotFound`` raised before the first)."""
        ...

    def excerpt(self, tenant_id: str, artifact_id: str, span: Span) -> Iterator[bytes]:
        """The bytes of ``span`` (``ArtifactNotFound`` or ``RangeOutside`` raised before the first)."""
        ...

    def list(self, tenant_id: str) -> list[ArtifactMeta]: ...

    def remove(self, tenant_id: str, artifact_id: str) -> bool:
        """Retention: forget the bytes, keep a tombstone of the metadata. False when there was nothing."""
        ...

    def resolve(self, tenant_id: str, cited: Cited) -> CitationFacts | None:
        """``resolve_all`` of one citation."""
        ...

    def resolve_all(self, tenant_id: str, cited: Sequence[Cited]) -> builtins.list[CitationFacts | None]:
        """The facts a commit decides on (ADR 0081), for each citation in order; None for an artifact the tenant
        does not have (``CitationResolver``)."""
        ...

    def close(self) -> None: ...
