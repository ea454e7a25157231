"""Streaming over an artifact's bytes: hashing and indexing on the way in, cutting a span on the way out.

Both backends keep an artifact in fixed blocks of ``BLOCK`` bytes and a line index of one integer per
``LINE_STEP`` bytes (the newlines before that byte; docs/adr/0083), so an excerpt of lines A-B starts reading
at most ``LINE_STEP`` bytes before line A, never at the start of a large artifact or of its block.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Iterator

from caseboard.domain.citations import MAX_EXCERPT_BYTES, CitationFacts, Span
from caseboard.evidence.model import BLOCK, LINE_STEP, ArtifactTooLarge


class Intake:
    """Counts, hashes and indexes an upload as it streams, and cuts it into blocks of ``BLOCK`` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.newlines = 0
        self.block_lines: list[int] = []
        self.step_lines: list[int] = []
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
        for start in range(0, len(block), LINE_STEP):  # blocks start at multiples of LINE_STEP
            self.step_lines.append(self.newlines)
            self.newlines += block.count(b"\n", start, start + LINE_STEP)
        self.last_byte = block[-1:]
        return block

    @property
    def artifact_id(self) -> str:
        return "sha256:" + self._hash.hexdigest()

    @property
    def lines(self) -> int:
        return self.newlines + (1 if self.size and self.last_byte != b"\n" else 0)


def line_start(first: int, step: int, step_lines: tuple[int, ...]) -> tuple[int, int]:
    """Where to start reading for line ``first``: (byte offset, newlines before it), from the index entry
    nearest before the newline that ends line ``first - 1``."""
    if first == 1 or not step_lines:
        return 0, 0
    entry = max(bisect.bisect_left(step_lines, first - 1) - 1, 0)
    return entry * step, step_lines[entry]


def cut_lines(first: int, last: int, newlines: int, pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Lines ``first``-``last`` of ``pieces``, which start after ``newlines`` newlines (any cut of pieces)."""
    return _cut_lines(first, last, newlines, pieces)


WINDOW = 512


def _nth_newline(data: bytes, start: int, n: int) -> tuple[int, int]:
    """(the position of the ``n``-th newline at or after ``start``, 0), or (-1, the newlines there are) when
    there are fewer: ``WINDOW`` bytes are counted at a time, never past the newline looked for, then the last
    window is searched newline by newline."""
    position, end, seen = start, len(data), 0
    while position < end:
        here = data.count(b"\n", position, position + WINDOW)
        if seen + here >= n:
            found = position - 1
            for _ in range(n - seen):
                found = data.index(b"\n", found + 1)
            return found, 0
        seen += here
        position += WINDOW
    return -1, seen


def _cut_lines(first: int, last: int, newlines: int, pieces: Iterator[bytes]) -> Iterator[bytes]:
    inside = first == 1
    for data in pieces:
        position = 0
        if not inside:
            found, seen = _nth_newline(data, 0, first - 1 - newlines)
            if found < 0:
                newlines += seen
                continue
            position = found + 1
            newlines = first - 1
            inside = True
        found, seen = _nth_newline(data, position, last - newlines)
        if found < 0:
            if position < len(data):
                yield data[position:]
            newlines += seen
            continue
        yield data[position : found + 1]
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
