"""Streaming over an artifact's bytes: hashing and indexing on the way in, cutting a span on the way out.

Both backends keep an artifact in fixed blocks of ``BLOCK`` bytes and a line index of one integer per
block (the newlines before it), so an excerpt of lines A-B starts reading at the block where line A can
begin, never at the start of a large artifact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator

from caseboard.domain.citations import MAX_EXCERPT_BYTES, CitationFacts, Span
from caseboard.evidence.model import BLOCK, ArtifactTooLarge


class Intake:
    """Counts, hashes and indexes an upload as it streams, and cuts it into blocks of ``BLOCK`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.newlines = 0
        self.block_lines: list[int] = []
        self.last_byte = b""
        self._hash = hashlib.sha256()
        self._pending = bytearray()

    def blocks(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        """Each full block, then the last partial one; ``ArtifactTooLarge`` once past the limit."""
        for chunk in chunks:
            if not chunk:
                continue
            self.size += len(chunk)
            if self.size > self.limit:
                raise ArtifactTooLarge(self.limit)
            self._hash.update(chunk)
            if not self._pending and len(chunk) == BLOCK:  # a whole block as it came: no copy
                yield self._indexed(chunk)
                continue
            self._pending += chunk
            while len(self._pending) >= BLOCK:
                block = bytes(self._pending[:BLOCK])
                del self._pending[:BLOCK]
                yield self._indexed(block)
        if self._pending:
            yield self._indexed(bytes(self._pending))
            self._pending.clear()

    def _indexed(self, block: bytes) -> bytes:
        self.block_lines.append(self.newlines)
        self.newlines += block.count(b"\n")
        self.last_byte = block[-1:]
        return block

    @property
    def artifact_id(self) -> str:
        return "sha256:" + self._hash.hexdigest()

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.size and self.last_byte != b"\n" else 0)


def start_block(span: Span, block_lines: tuple[int, ...]) -> int:
    """The first block to read for ``span``."""
    if span.unit == "bytes":
        return span.first // BLOCK
    if span.first == 1:
        return 0
    # line A begins after newline A-1: in the last block that starts before that newline
    start = 0
    for index, before in enumerate(block_lines):
        if before < span.first - 1:
            start = index
        else:
            break
    return start


def cut(span: Span, blocks: Iterator[bytes], block: int, block_lines: tuple[int, ...]) -> Iterator[bytes]:
    """The bytes of ``span`` from ``blocks``, which start at block number ``block``."""
    if span.unit == "bytes":
        yield from _cut_bytes(span.first - block * BLOCK, span.last + 1 - block * BLOCK, blocks)
    else:
        yield from _cut_lines(span.first, span.last, block_lines[block] if block_lines else 0, blocks)


def _cut_bytes(start: int, end: int, blocks: Iterator[bytes]) -> Iterator[bytes]:
    offset = 0
    for data in blocks:
        lo, hi = max(start - offset, 0), min(end - offset, len(data))
        if lo < hi:
            yield data[lo:hi]
        offset += len(data)
        if offset >= end:
            return


WINDOW = 4096


def _nth_newline(data: bytes, start: int, n: int) -> int:
    """The position of the ``n``-th newline at or after ``start`` (there are at least ``n``): windows of
    ``WINDOW`` bytes are counted whole, then the last one is searched newline by newline."""
    position = start
    while True:
        here = data.count(b"\n", position, position + WINDOW)
        if here >= n:
            break
        n -= here
        position += WINDOW
    found = position - 1
    for _ in range(n):
        found = data.index(b"\n", found + 1)
    return found


def _cut_lines(first: int, last: int, newlines: int, blocks: Iterator[bytes]) -> Iterator[bytes]:
    inside = first == 1
    for data in blocks:
        position = 0
        if not inside:
            need = first - 1 - newlines
            here = data.count(b"\n")
            if here < need:
                newlines += here
                continue
            position = _nth_newline(data, 0, need) + 1
            newlines += need
            inside = True
        need = last - newlines
        rest = data.count(b"\n", position)
        if rest < need:
            if position < len(data):
                yield data[position:]
            newlines += rest
            continue
        yield data[position : _nth_newline(data, position, need) + 1]
        return


def facts(size: int, lines: int, span: Span, excerpt: Callable[[], Iterator[bytes]]) -> CitationFacts:
    """The facts a commit decides on: the excerpt hashed, if the span is inside and not too long."""
    if not span.inside(size, lines):
        return CitationFacts(size, lines, 0, None)
    digest, length = hashlib.sha256(), 0
    for piece in excerpt():
        length += len(piece)
        if length > MAX_EXCERPT_BYTES:
            return CitationFacts(size, lines, MAX_EXCERPT_BYTES + 1, None)
        digest.update(piece)
    return CitationFacts(size, lines, length, digest.hexdigest())
