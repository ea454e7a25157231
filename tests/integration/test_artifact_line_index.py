"""The line index (docs/adr/0083) on both backends: every line excerpt equals the lines of the bytes, wherever
the range starts and ends against the index's steps and the blocks, and an artifact stored before the index
(metadata without it) reads the same."""

from __future__ import annotations

import bisect
import json
import random
from pathlib import Path

import psycopg
from psycopg.sql import SQL

from caseboard.domain.citations import Span
from caseboard.evidence import ArtifactStore, open_artifact_store
from caseboard.evidence.files import FileArtifactStore
from caseboard.evidence.model import BLOCK, LINE_STEP
from caseboard.evidence.postgres import PostgresArtifactStore


def body_and_lines(seed: int) -> tuple[bytes, list[bytes]]:
    """Lines of every length: empty ones, short ones, and some longer than an index step or a block."""
    rng = random.Random(seed)
    lines: list[bytes] = []
    size = 0
    while size < 2 * BLOCK + LINE_STEP // 3:
        pick = rng.random()
        width = 0 if pick < 0.05 else rng.randrange(LINE_STEP, BLOCK + 5000) if pick > 0.995 else rng.randrange(120)
        line = b"%d " % len(lines) + b"x" * width + b"\n"
        lines.append(line)
        size += len(line)
    lines.append(b"last line without its newline")
    return b"".join(lines), lines


def spans(lines: list[bytes], seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    count = len(lines)
    # where a step or a block boundary falls: the line holding that byte, and its neighbours
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line)
    edges = [bisect.bisect_right(offsets, k * LINE_STEP) for k in range(1, at // LINE_STEP + 1)]
    chosen = [(1, 1), (1, 3), (count, count), (count - 2, count), (1, count)]
    for _ in range(150):
        first = rng.choice(edges if rng.random() < 0.5 else range(1, count + 1))
        first = min(max(first + rng.randrange(-2, 3), 1), count)
        chosen.append((first, min(count, first + rng.randrange(25))))
    return chosen


def expected(lines: list[bytes], first: int, last: int) -> bytes:
    return b"".join(lines[first - 1 : last])


def test_every_line_excerpt_is_the_lines_of_the_bytes(store: ArtifactStore) -> None:
    body, lines = body_and_lines(14)
    stored = store.put("tenant-a", [body[i : i + 300_001] for i in range(0, len(body), 300_001)], stored_by="p")
    meta = stored.meta
    assert meta.lines == len(lines)
    for first, last in spans(lines, 83):
        got = b"".join(store.excerpt("tenant-a", meta.artifact_id, Span("lines", first, last)))
        assert got == expected(lines, first, last), (first, last)


def test_an_artifact_stored_before_the_line_index_reads_the_same(durable_url: str, tmp_path: Path) -> None:
    body, lines = body_and_lines(83)
    store = open_artifact_store(durable_url, max_bytes=8 * BLOCK)
    aid = store.put("tenant-a", [body], stored_by="p").meta.artifact_id
    store.close()
    # take the index away, as metadata written before it looks
    if isinstance(store, FileArtifactStore):
        meta_path = store._paths("tenant-a", aid)[1]
        record = json.loads(meta_path.read_text())
        assert record.pop("step_lines") and record.pop("line_step") == LINE_STEP
        meta_path.write_text(json.dumps(record))
    else:
        assert isinstance(store, PostgresArtifactStore)
        with psycopg.connect(store.conninfo, autocommit=True) as conn:
            changed = conn.execute(
                SQL("UPDATE {} SET line_step = NULL, step_lines = NULL WHERE artifact_id = %s").format(store.artifacts),
                (aid,),
            ).rowcount
            assert changed == 1
    reopened = open_artifact_store(durable_url, max_bytes=8 * BLOCK)
    try:
        if isinstance(reopened, FileArtifactStore):  # read as it was stored: the blocks' index only
            assert reopened.meta("tenant-a", aid).line_index() == (BLOCK, reopened.meta("tenant-a", aid).block_lines)
        for first, last in spans(lines, 14)[:60]:
            got = b"".join(reopened.excerpt("tenant-a", aid, Span("lines", first, last)))
            assert got == expected(lines, first, last), (first, last)
    finally:
        reopened.close()
