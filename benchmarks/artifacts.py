"""The artifact store against plain files, on both backends (docs/adr/0080, 0083).

``artifact_upload_vs_file`` (PostgreSQL) and ``artifact_upload_files_vs_file`` (the embedded store): the
store's upload throughput over writing the same bytes, in the same 1 MiB chunks, to a file that is then
fsynced; the goal is at least 0.5. Durability is alike but not the same: the file store fsyncs the artifact's
bytes before renaming them into place (its metadata file is not fsynced: a crash can lose a whole artifact,
never show half of one); PostgreSQL commits with the server's ``fsync`` and ``synchronous_commit`` (every
byte goes through its WAL). ``artifact_excerpt_vs_file`` and ``artifact_excerpt_files_vs_file``: excerpts
read per second (``bytes`` A-B, the 20 lines in the middle of the artifact) over reading the same byte range
from a file (open, seek, read), the goal at least 0.5. ``artifact_excerpt_lines*_vs_file``: the same 20 lines
cited as ``lines`` A-B over the same file read of their byte range (a reader that already knows where they
are); ``artifact_excerpt_lines*_vs_file_scan`` over a reader that finds them by counting lines. For
PostgreSQL, ``artifact_excerpt_vs_round_trip``: byte excerpts over bare ``SELECT 1`` round trips on one
connection, the floor any query-per-excerpt store stands on.

Every figure is the median over rounds of the ratio within a round, the store's run and the baseline's run
back to back, so that a busy machine weighs on both alike.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlparse, urlunparse

import psycopg

from benchmarks.context import BenchContext, median
from caseboard.domain.citations import Span
from caseboard.evidence import ArtifactStore, open_artifact_store

CHUNK = 1 << 20


def payload(mib: int) -> list[bytes]:
    line = b"2026-03-02T14:03:00Z auth_failure instance=payments-api-2 reason=certificate_unknown\n"
    block = (line * (CHUNK // len(line) + 1))[:CHUNK]
    return [block] * mib


def rate(work: Callable[[], object], count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        work()
    return count / (time.perf_counter() - started)


def ratio(store: Callable[[], object], baseline: Callable[[], object], count: int, rounds: int) -> tuple[float, ...]:
    """(median of store/baseline per round, median store rate, median baseline rate), the two back to back."""
    pairs = [(rate(store, count), rate(baseline, count)) for _ in range(rounds)]
    return (
        median([a / b for a, b in pairs]),
        median([a for a, _ in pairs]),
        median([b for _, b in pairs]),
    )


def file_write(folder: Path, chunks: list[bytes]) -> None:
    path = folder / "baseline.bin"
    with open(path, "wb") as out:
        for chunk in chunks:
            out.write(chunk)
        out.flush()
        os.fsync(out.fileno())
    path.unlink()


def measure(store: ArtifactStore, folder: Path, ctx: BenchContext, name: str) -> dict[str, float]:
    mib = 4 if ctx.quick else 64
    rounds = 1 if ctx.quick else max(ctx.rounds, 3)
    counter = iter(range(10**9))

    def upload() -> None:  # fresh bytes each time: a repeated upload would be found, not stored
        chunks = payload(mib)
        stamp = b"%d\n" % next(counter)
        chunks[0] = stamp + chunks[0][len(stamp) :]
        store.put("bench", iter(chunks), stored_by="bench")

    uploads, upload_rate, write_rate = ratio(upload, lambda: file_write(folder, payload(mib)), 1, rounds)
    stored = store.put("bench", iter(payload(mib)), stored_by="bench").meta
    middle = stored.lines // 2
    span = Span("lines", middle, middle + 19)
    excerpt = b"".join(store.excerpt("bench", stored.artifact_id, span))
    whole = b"".join(payload(mib))
    start = whole.index(excerpt)
    plain = folder / "plain.bin"
    plain.write_bytes(whole)

    def read_plain() -> bytes:
        with open(plain, "rb") as handle:
            handle.seek(start)
            return handle.read(len(excerpt))

    def read_store() -> bytes:
        return b"".join(store.excerpt("bench", stored.artifact_id, by_bytes))

    def read_lines_store() -> bytes:
        return b"".join(store.excerpt("bench", stored.artifact_id, span))

    def scan_plain() -> bytes:
        with open(plain, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if number == middle:
                    return line + b"".join(handle.readline() for _ in range(19))
        return b""

    by_bytes = Span("bytes", start, start + len(excerpt) - 1)
    assert read_plain() == read_store() == read_lines_store() == scan_plain()
    count = 50 if ctx.quick else 2000
    excerpts, excerpt_rate, read_rate = ratio(read_store, read_plain, count, rounds)
    lines, lines_rate, _ = ratio(read_lines_store, read_plain, count, rounds)
    scanned, _, scan_rate = ratio(read_lines_store, scan_plain, count // 20, rounds)
    print(
        f"{name or '_postgres'}: upload {upload_rate * mib:.0f} MiB/s vs file {write_rate * mib:.0f} MiB/s; "
        f"byte excerpts {excerpt_rate:.0f}/s vs file reads {read_rate:.0f}/s; "
        f"line excerpts {lines_rate:.0f}/s vs file scans {scan_rate:.0f}/s",
        flush=True,
    )
    return {
        f"artifact_upload{name}_vs_file": uploads,
        f"artifact_excerpt{name}_vs_file": excerpts,
        f"artifact_excerpt_lines{name}_vs_file": lines,
        f"artifact_excerpt_lines{name}_vs_file_scan": scanned,
    }


def round_trips(url: str, store: ArtifactStore, aid: str, span: Span, ctx: BenchContext) -> dict[str, float]:
    """Byte excerpts from PostgreSQL over bare round trips on one connection, back to back."""
    conninfo = urlunparse(urlparse(url)._replace(query=""))
    with psycopg.connect(conninfo, autocommit=True) as conn:
        figure, excerpt_rate, trip_rate = ratio(
            lambda: b"".join(store.excerpt("bench", aid, span)),
            lambda: conn.execute("SELECT 1", prepare=True).fetchone(),
            50 if ctx.quick else 2000,
            1 if ctx.quick else max(ctx.rounds, 3),
        )
    print(f"_postgres: byte excerpts {excerpt_rate:.0f}/s vs SELECT 1 round trips {trip_rate:.0f}/s", flush=True)
    return {"artifact_excerpt_vs_round_trip": figure}


def run(ctx: BenchContext) -> dict[str, float]:
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="caseboard-bench-") as tmp:
        folder = Path(tmp)
        files = open_artifact_store(f"sqlite:///{folder}/ledger.db")
        figures.update(measure(files, folder, ctx, "_files"))
        with ctx.fresh_schema() as url:
            store = open_artifact_store(url)
            try:
                figures.update(measure(store, folder, ctx, ""))
                last = store.list("bench")[-1]
                middle = Span("bytes", last.size // 2, last.size // 2 + 1800)
                figures.update(round_trips(url, store, last.artifact_id, middle, ctx))
            finally:
                store.close()
    return figures
