"""The artifact store against plain files, on both backends (docs/adr/0080).

``artifact_upload_vs_file`` (PostgreSQL) and ``artifact_upload_files_vs_file`` (the embedded store): the
store's upload throughput over writing the same bytes, in the same 1 MiB chunks, to a file that is then
fsynced (the store fsyncs too, or commits), medians of several rounds; the goal is at least 0.5.
``artifact_excerpt_vs_file`` and ``artifact_excerpt_files_vs_file``: excerpts read per second (``bytes``
A-B, the 20 lines in the middle of the artifact) over reading the same byte range from a file (open, seek,
read). ``artifact_excerpt_lines*_vs_file_scan``: the same 20 lines cited as ``lines`` A-B, over a reader of
the file that finds them by counting lines (it has no index).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.context import BenchContext, median
from caseboard.domain.citations import Span
from caseboard.evidence import ArtifactStore, open_artifact_store

CHUNK = 1 << 20


def payload(mib: int) -> list[bytes]:
    line = b"2026-03-02T14:03:00Z auth_failure instance=payments-api-2 reason=certificate_unknown\n"
    block = (line * (CHUNK // len(line) + 1))[:CHUNK]
    return [block] * mib


def rate(work: Callable[[], object], count: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _ in range(count):
            work()
        times.append(time.perf_counter() - started)
    return count / median(times)


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
    rounds = 1 if ctx.quick else ctx.rounds
    counter = iter(range(10**9))

    def upload() -> None:  # fresh bytes each time: a repeated upload would be found, not stored
        chunks = payload(mib)
        stamp = b"%d\n" % next(counter)
        chunks[0] = stamp + chunks[0][len(stamp) :]
        store.put("bench", iter(chunks), stored_by="bench")

    uploads = rate(upload, 1, rounds)
    writes = rate(lambda: file_write(folder, payload(mib)), 1, rounds)
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
    excerpts = rate(read_store, count, rounds)
    reads = rate(read_plain, count, rounds)
    lines = rate(read_lines_store, count // 10, rounds)
    scans = rate(scan_plain, count // 10, rounds)
    print(
        f"{name or '_postgres'}: upload {uploads * mib:.0f} MiB/s vs file {writes * mib:.0f} MiB/s; "
        f"byte excerpts {excerpts:.0f}/s vs file reads {reads:.0f}/s; "
        f"line excerpts {lines:.0f}/s vs file scans {scans:.0f}/s",
        flush=True,
    )
    return {
        f"artifact_upload{name}_vs_file": uploads / writes,
        f"artifact_excerpt{name}_vs_file": excerpts / reads,
        f"artifact_excerpt_lines{name}_vs_file_scan": lines / scans,
    }


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
            finally:
                store.close()
    return figures
