"""Snapshots on PostgreSQL: read back as written; a second writer of the same version is ignored."""

from __future__ import annotations

import pytest

from caseboard.ledger import open_ledger

pytestmark = pytest.mark.postgres


def test_a_large_snapshot_reads_back_as_written_and_a_duplicate_version_is_ignored(postgres_url: str) -> None:
    ledger = open_ledger(postgres_url)
    try:
        data = {"records": [[f"obs-{n}", "é" * 50, n, None] for n in range(5000)]}
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 4000, data)
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 4000, {"other": True})
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 4500, {"later": True})
        at_4000 = ledger.latest_snapshot("ws-1", "workspace-rules-v1", upto=4499)
        latest = ledger.latest_snapshot("ws-1", "workspace-rules-v1", upto=10_000)
        assert at_4000 is not None and latest is not None
        assert (at_4000.version, at_4000.data) == (4000, data)
        assert (latest.version, latest.data) == (4500, {"later": True})
        assert ledger.latest_snapshot("ws-1", "workspace-rules-v1", upto=3999) is None
        assert ledger.latest_snapshot("ws-2", "workspace-rules-v1", upto=10_000) is None
    finally:
        ledger.close()
