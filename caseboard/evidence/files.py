"""The embedded artifact store: files under ``.caseboard/artifacts/`` next to the SQLite ledger.

Layout: ``ROOT/<tenant>/<hex[:2]>/<hex>`` holds the bytes and ``<hex>.json`` the metadata (the tenant's
directory name is its id percent-encoded, so an id with ``/`` stays one directory). An upload is written to
``ROOT/.partial/`` and fsynced, then renamed into place; the metadata is written last, and created with a
hard link, which fails when it exists, so of two processes storing the same bytes one creates the artifact
and the other finds it. An artifact is visible only once its metadata is there: a killed upload leaves at
most a file in ``.partial/`` (swept when older than a day) and nothing anyone can list or read.
"""

from __future__ import annotations

import builtins
import json
import os
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from caseboard.domain.citations import ARTIFACT_ID_RE, CitationFacts, Cited, Span
from caseboard.evidence.model import (
    BLOCK,
    DEFAULT_MAX_BYTES,
    DEFAULT_MEDIA_TYPE,
    LINE_STEP,
    ArtifactMeta,
    ArtifactNotFound,
    RangeOutside,
    Stored,
)
from caseboard.evidence.scan import Intake, cut_lines, facts, line_start

PARTIAL_MAX_AGE_S = 24 * 3600
META_CACHE = 4096


class FileArtifactStore:
    def __init__(self, root: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.root = root
        self.max_bytes = max_bytes
        self.partial = root / ".partial"
        self.partial.mkdir(parents=True, exist_ok=True)
        self._metas: dict[str, tuple[tuple[int, int, int], ArtifactMeta]] = {}
        self._where: dict[tuple[str, str], tuple[str, str]] = {}
        self._sweep()

    def _sweep(self) -> None:
        cutoff = time.time() - PARTIAL_MAX_AGE_S
        for stale in self.partial.iterdir():
            try:
                if stale.stat().st_mtime < cutoff:
                    stale.unlink()
            except OSError:
                pass  # another process took it away

    def _locate(self, tenant_id: str, artifact_id: str) -> tuple[str, str]:
        """The paths of an artifact's bytes and metadata, as strings (a read's hot path builds no ``Path``)."""
        key = (tenant_id, artifact_id)
        found = self._where.get(key)
        if found is None:
            if ARTIFACT_ID_RE.fullmatch(artifact_id) is None:
                raise ArtifactNotFound(artifact_id)
            hexdigest = artifact_id.removeprefix("sha256:")
            folder = os.path.join(self.root, quote(tenant_id, safe=""), hexdigest[:2])
            found = (os.path.join(folder, hexdigest), os.path.join(folder, f"{hexdigest}.json"))
            if len(self._where) >= META_CACHE:
                self._where.clear()
            self._where[key] = found
        return found

    def _paths(self, tenant_id: str, artifact_id: str) -> tuple[Path, Path]:
        blob, meta = self._locate(tenant_id, artifact_id)
        return Path(blob), Path(meta)

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
        del durable  # these files are not flushed by the ledger's commit: always fsynced here
        intake = Intake(self.max_bytes)
        temp = self.partial / uuid.uuid4().hex
        try:
            with open(temp, "wb") as out, ThreadPoolExecutor(1) as writer:
                # block n is written on a thread while block n+1 is hashed here (both release the GIL);
                # at most two blocks are held
                writing: Future[int] | None = None
                for block in intake.blocks(chunks):
                    if writing is not None:
                        writing.result()
                    writing = writer.submit(out.write, block)
                if writing is not None:
                    writing.result()
                out.flush()
                os.fsync(out.fileno())
            blob, meta_path = self._paths(tenant_id, intake.artifact_id)
            existing = self._read_meta(meta_path)
            if existing is not None and existing.removed_at is None and blob.exists():
                return Stored(existing, created=False)
            blob.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temp, blob)
        finally:
            temp.unlink(missing_ok=True)
        meta = ArtifactMeta(
            artifact_id=intake.artifact_id,
            tenant_id=tenant_id,
            media_type=media_type,
            size=intake.size,
            lines=intake.lines,
            source_system=source_system,
            stored_by=stored_by,
            stored_at=datetime.now(UTC),
            block_lines=tuple(intake.block_lines),
            step_lines=tuple(intake.step_lines),
        )
        created = self._write_meta(meta_path, meta, replace=existing is not None)
        return Stored(meta if created else self.meta(tenant_id, intake.artifact_id), created=created)

    def _write_meta(self, path: Path, meta: ArtifactMeta, *, replace: bool) -> bool:
        temp = self.partial / f"{uuid.uuid4().hex}.json"
        record: dict[str, Any] = {**meta.public(), "block_lines": list(meta.block_lines)}
        if meta.step_lines:  # docs/adr/0083
            record.update(line_step=meta.line_step, step_lines=list(meta.step_lines))
        try:
            temp.write_text(json.dumps(record), encoding="utf-8")
            if replace:
                os.replace(temp, path)
                return True
            try:
                os.link(temp, path)
            except FileExistsError:
                return False
            return True
        finally:
            temp.unlink(missing_ok=True)

    def _read_meta(self, path: str | Path) -> ArtifactMeta | None:
        """The metadata in ``path``, from a cache checked against the file's inode and mtime (a metadata
        file is only ever replaced whole, by a rename)."""
        key = str(path)
        try:
            stat = os.stat(key)
        except FileNotFoundError:
            return None
        stamp = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        cached = self._metas.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        meta = self._load_meta(Path(key))
        if meta is not None:
            if len(self._metas) >= META_CACHE:
                self._metas.clear()
            self._metas[key] = (stamp, meta)
        return meta

    @staticmethod
    def _load_meta(path: Path) -> ArtifactMeta | None:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        removed = record.get("removed_at")
        return ArtifactMeta(
            artifact_id=record["artifact_id"],
            tenant_id=record["tenant_id"],
            media_type=record["media_type"],
            size=record["size"],
            lines=record["lines"],
            source_system=record["source_system"],
            stored_by=record["stored_by"],
            stored_at=datetime.fromisoformat(record["stored_at"]),
            block_lines=tuple(record["block_lines"]),
            removed_at=datetime.fromisoformat(removed) if removed else None,
            line_step=record.get("line_step", LINE_STEP),
            step_lines=tuple(record.get("step_lines", ())),  # absent in metadata written before ADR 0083
        )

    def meta(self, tenant_id: str, artifact_id: str) -> ArtifactMeta:
        meta = self._read_meta(self._locate(tenant_id, artifact_id)[1])
        if meta is None:
            raise ArtifactNotFound(artifact_id)
        if meta.removed_at is not None:
            raise ArtifactNotFound(artifact_id, removed=True)
        return meta

    @staticmethod
    def _open(blob: Path, artifact_id: str) -> Any:
        try:
            return open(blob, "rb")  # closed by the generator that reads it
        except FileNotFoundError:
            raise ArtifactNotFound(artifact_id, removed=True) from None

    def _blocks(self, blob: Path, artifact_id: str, start: int) -> Iterator[bytes]:
        return _read_blocks(self._open(blob, artifact_id), start)

    def read(self, tenant_id: str, artifact_id: str) -> Iterator[bytes]:
        self.meta(tenant_id, artifact_id)
        return self._blocks(self._paths(tenant_id, artifact_id)[0], artifact_id, 0)

    def excerpt(self, tenant_id: str, artifact_id: str, span: Span) -> Iterator[bytes]:
        meta = self.meta(tenant_id, artifact_id)
        if not span.inside(meta.size, meta.lines):
            raise RangeOutside(artifact_id, span, meta.size, meta.lines)
        return self._cut(meta, span)

    def _cut(self, meta: ArtifactMeta, span: Span) -> Iterator[bytes]:
        if span.unit == "bytes":  # straight to the range: one open, then pread
            blob = self._locate(meta.tenant_id, meta.artifact_id)[0]
            return _pread(blob, meta.artifact_id, span.first, span.last + 1 - span.first)
        offset, newlines = line_start(span.first, *meta.line_index())
        blob = self._locate(meta.tenant_id, meta.artifact_id)[0]
        pieces = _pread_growing(_open_fd(blob, meta.artifact_id), offset, meta.size - offset)
        return cut_lines(span.first, span.last, newlines, pieces)

    def list(self, tenant_id: str) -> list[ArtifactMeta]:
        folder = self.root / quote(tenant_id, safe="")
        found = [self._read_meta(path) for path in sorted(folder.glob("*/*.json"))]
        return sorted((m for m in found if m is not None), key=lambda m: (m.stored_at, m.artifact_id))

    def remove(self, tenant_id: str, artifact_id: str) -> bool:
        blob, meta_path = self._paths(tenant_id, artifact_id)
        meta = self._read_meta(meta_path)
        if meta is None or meta.removed_at is not None:
            return False
        tombstone = ArtifactMeta(**{**_fields(meta), "removed_at": datetime.now(UTC)})
        self._write_meta(meta_path, tombstone, replace=True)
        blob.unlink(missing_ok=True)
        return True

    def resolve(self, tenant_id: str, cited: Cited) -> CitationFacts | None:
        try:
            meta = self.meta(tenant_id, cited.artifact)
            return facts(meta.size, meta.lines, cited.span, lambda: self._cut(meta, cited.span))
        except ArtifactNotFound:
            return None

    def resolve_all(self, tenant_id: str, cited: Sequence[Cited]) -> builtins.list[CitationFacts | None]:
        return [self.resolve(tenant_id, one) for one in cited]

    def close(self) -> None:
        pass


def _fields(meta: ArtifactMeta) -> dict[str, Any]:
    return {name: getattr(meta, name) for name in ArtifactMeta.__slots__}


def _read_blocks(handle: Any, start: int) -> Iterator[bytes]:
    with handle:
        handle.seek(start * BLOCK)
        while data := handle.read(BLOCK):
            yield data


def _open_fd(blob: str, artifact_id: str) -> int:
    try:
        return os.open(blob, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ArtifactNotFound(artifact_id, removed=True) from None


def _pread(blob: str, artifact_id: str, offset: int, length: int) -> Iterator[bytes]:
    """``length`` bytes of ``blob`` from ``offset``: read at once when they fit in a block (the file is
    closed before this returns), else block by block as the caller iterates."""
    fd = _open_fd(blob, artifact_id)
    if length > BLOCK:
        return _pread_blocks(fd, offset, length)
    try:
        data = os.pread(fd, length, offset)
        if len(data) < length:  # a regular file reads short only at its end, or when interrupted
            data += b"".join(_pread_blocks(os.dup(fd), offset + len(data), length - len(data)))
    finally:
        os.close(fd)
    return iter((data,))


def _pread_blocks(fd: int, offset: int, length: int) -> Iterator[bytes]:
    try:
        while length > 0 and (data := os.pread(fd, min(length, BLOCK), offset)):
            offset += len(data)
            length -= len(data)
            yield data
    finally:
        os.close(fd)


def _pread_growing(fd: int, offset: int, length: int) -> Iterator[bytes]:
    """Up to ``length`` bytes from ``offset`` in pieces of ``2 * LINE_STEP`` bytes (the line looked for begins
    in the first ``LINE_STEP``), doubling up to ``BLOCK``: a few lines cost one small read, a long range few
    large ones."""
    size = 2 * LINE_STEP
    try:
        while length > 0 and (data := os.pread(fd, min(length, size), offset)):
            offset += len(data)
            length -= len(data)
            size = min(size * 2, BLOCK)
            yield data
    finally:
        os.close(fd)
