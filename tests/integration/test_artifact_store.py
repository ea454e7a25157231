"""The artifact store on both backends: content addressing, tenants, ranges, the size limit, retention."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest

from caseboard.domain.citations import MAX_EXCERPT_BYTES, Cited, Span
from caseboard.evidence import ArtifactNotFound, ArtifactStore, ArtifactTooLarge, RangeOutside
from caseboard.evidence.model import BLOCK

LOG = b"".join(b"2026-03-02T14:%02d:00Z auth_failure instance=payments-api-%d\n" % (m, m % 3) for m in range(60))


def text(chunks: Iterator[bytes]) -> bytes:
    return b"".join(chunks)


def test_the_same_bytes_stored_twice_are_one_artifact_per_tenant(store: ArtifactStore) -> None:
    first = store.put("tenant-a", [LOG[:100], LOG[100:]], stored_by="log-specialist", media_type="text/plain")
    again = store.put("tenant-a", [LOG], stored_by="someone-else")
    other = store.put("tenant-b", [LOG], stored_by="b-specialist")
    assert first.created and not again.created and other.created
    assert first.meta.artifact_id == again.meta.artifact_id == other.meta.artifact_id
    assert first.meta.artifact_id.startswith("sha256:") and len(first.meta.artifact_id) == 71
    assert again.meta.stored_by == "log-specialist" and again.meta.media_type == "text/plain"
    assert [m.artifact_id for m in store.list("tenant-a")] == [first.meta.artifact_id]
    assert (first.meta.size, first.meta.lines) == (len(LOG), 60)
    assert text(store.read("tenant-a", first.meta.artifact_id)) == LOG


def test_another_tenants_artifact_is_not_found_exactly_like_a_missing_one(store: ArtifactStore) -> None:
    stored = store.put("tenant-a", [LOG], stored_by="p").meta
    with pytest.raises(ArtifactNotFound) as other:
        store.meta("tenant-b", stored.artifact_id)
    with pytest.raises(ArtifactNotFound) as missing:
        store.meta("tenant-b", "sha256:" + "0" * 64)
    assert str(other.value).replace(stored.artifact_id, "ID") == str(missing.value).replace("sha256:" + "0" * 64, "ID")
    assert store.resolve("tenant-b", Cited(stored.artifact_id, Span("lines", 1, 2))) is None


def test_excerpts_by_lines_and_bytes_cut_exactly_the_range_across_blocks(store: ArtifactStore) -> None:
    lines = [b"line %d %s\n" % (n, b"x" * (n % 50)) for n in range(1, 60_001)]
    body = b"".join(lines) + b"tail without newline"
    assert len(body) > 2 * BLOCK
    stored = store.put("tenant-a", [body[i : i + 70_000] for i in range(0, len(body), 70_000)], stored_by="p").meta
    assert stored.lines == 60_001
    aid = stored.artifact_id
    assert text(store.excerpt("tenant-a", aid, Span("lines", 3, 5))) == b"".join(lines[2:5])
    assert text(store.excerpt("tenant-a", aid, Span("lines", 40_000, 40_002))) == b"".join(lines[39_999:40_002])
    assert text(store.excerpt("tenant-a", aid, Span("lines", 60_000, 60_001))) == lines[-1] + b"tail without newline"
    assert text(store.excerpt("tenant-a", aid, Span("bytes", BLOCK - 3, BLOCK + 3))) == body[BLOCK - 3 : BLOCK + 4]
    with pytest.raises(RangeOutside, match="60001 lines"):
        store.excerpt("tenant-a", aid, Span("lines", 60_001, 60_002))
    with pytest.raises(RangeOutside):
        store.excerpt("tenant-a", aid, Span("bytes", len(body), len(body)))


def test_an_upload_over_the_limit_is_refused_while_streaming_and_leaves_nothing(store: ArtifactStore) -> None:
    sent = 0

    def endless() -> Iterator[bytes]:
        nonlocal sent
        while True:
            sent += BLOCK
            yield b"\0" * BLOCK

    with pytest.raises(ArtifactTooLarge):
        store.put("tenant-a", endless(), stored_by="p")
    assert sent <= 9 * BLOCK
    assert store.list("tenant-a") == []


def test_a_removed_artifact_is_gone_but_its_tombstone_is_listed(store: ArtifactStore) -> None:
    aid = store.put("tenant-a", [LOG], stored_by="p").meta.artifact_id
    assert store.remove("tenant-a", aid) and not store.remove("tenant-a", aid)
    with pytest.raises(ArtifactNotFound) as gone:
        store.meta("tenant-a", aid)
    assert gone.value.removed
    assert [m.removed_at is not None for m in store.list("tenant-a")] == [True]
    assert store.put("tenant-a", [LOG], stored_by="p").created  # stored again after retention


def test_a_contributions_citations_resolve_together_exactly_as_each_alone(store: ArtifactStore) -> None:
    lines = [b"line %d %s\n" % (n, b"y" * (n % 40)) for n in range(1, 90_001)]
    body = b"".join(lines)
    assert len(body) > 2 * BLOCK
    aid = store.put("tenant-a", [body], stored_by="p").meta.artifact_id
    small = store.put("tenant-a", [LOG], stored_by="p").meta.artifact_id
    removed = store.put("tenant-a", [LOG + b"removed\n"], stored_by="p").meta.artifact_id
    store.remove("tenant-a", removed)
    theirs = store.put("tenant-b", [LOG + b"theirs\n"], stored_by="p").meta.artifact_id

    def facts(data: bytes) -> tuple[int, str]:
        return len(data), hashlib.sha256(data).hexdigest()

    expected: list[tuple[Cited, tuple[int, str | None] | None]] = [
        (Cited(small, Span("bytes", 0, 9)), facts(LOG[:10])),
        (Cited(aid, Span("bytes", BLOCK - 5, BLOCK + 5)), facts(body[BLOCK - 5 : BLOCK + 6])),  # across blocks
        (Cited(aid, Span("bytes", 10, 2 * BLOCK + 10)), (MAX_EXCERPT_BYTES + 1, None)),  # too long to cite
        (Cited(aid, Span("lines", 40_000, 40_002)), facts(b"".join(lines[39_999:40_002]))),
        (Cited(small, Span("bytes", 5, len(LOG))), (0, None)),  # past the end
        (Cited(small, Span("lines", 61, 61)), (0, None)),
        (Cited(small, Span("bytes", 0, 9)), facts(LOG[:10])),  # the same citation twice
        (Cited("sha256:" + "0" * 64, Span("bytes", 0, 1)), None),  # missing
        (Cited(removed, Span("bytes", 0, 1)), None),  # removed under retention
        (Cited(theirs, Span("bytes", 0, 1)), None),  # another tenant's
        (Cited(aid, Span("bytes", 2 * BLOCK, 2 * BLOCK + 99)), facts(body[2 * BLOCK : 2 * BLOCK + 100])),
    ]
    together = store.resolve_all("tenant-a", [cited for cited, _ in expected])
    alone = [store.resolve("tenant-a", cited) for cited, _ in expected]
    assert together == alone
    for (cited, want), got in zip(expected, together, strict=True):
        assert (None if got is None else (got.excerpt_length, got.excerpt_sha256)) == want, cited.ref
        if got is not None:
            size, count = (len(body), len(lines)) if cited.artifact == aid else (len(LOG), 60)
            assert (got.size, got.lines) == (size, count)
    assert store.resolve_all("tenant-a", []) == []


MEMORY_PROBE = textwrap.dedent(
    """
    import resource, sys
    from caseboard.evidence import ArtifactTooLarge, open_artifact_store
    store = open_artifact_store(sys.argv[1])  # the default limit: 256 MiB
    chunk = b"x" * (1024 * 1024)
    def gibibyte():
        for _ in range(1024):
            yield chunk
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    try:
        store.put("tenant-a", gibibyte(), stored_by="p")
    except ArtifactTooLarge:
        print("refused", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before, len(store.list("tenant-a")))
    """
)


def test_a_gibibyte_upload_over_the_default_limit_is_refused_with_memory_bounded(durable_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_PROBE, durable_url], capture_output=True, text=True, timeout=600, check=True
    )
    verdict, growth_kib, listed = done.stdout.split()
    assert verdict == "refused" and listed == "0"
    assert int(growth_kib) < 64 * 1024, f"peak RSS grew by {growth_kib} KiB while streaming"
