"""Snapshots on PostgreSQL: read back as written; a second writer of the same version is ignored; stored
compressed by lz4 where the server has it, and still stored where it does not; a snapshot written before
(format 1, records as lists of values) still loads (docs/adr/0181)."""

from __future__ import annotations

import dataclasses
import json

import psycopg
import pytest
from eventsourcing.persistence import StoredEvent
from psycopg.sql import SQL
from structlog.testing import capture_logs

from caseboard.coordinator import Coordinator
from caseboard.database_url import DatabaseUrl
from caseboard.domain.commit import seal
from caseboard.ledger import open_ledger
from caseboard.ledger import postgres as recorders
from caseboard.ledger.base import SNAPSHOT_TOPIC
from caseboard.projections import Workspaces
from caseboard.projections.shape import shape_fingerprint
from caseboard.reducers import get_reducer
from tests.integration.test_concurrency_postgres import observation, opening
from tests.unit.test_cold_paths import _layout_before

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


def _compression(postgres_url: str) -> list[str | None]:
    database = DatabaseUrl.parse(postgres_url)
    with psycopg.connect(**database.conninfo) as conn:
        rows = conn.execute(
            SQL("SELECT pg_column_compression(state) FROM {}.caseboard_snapshots ORDER BY originator_version").format(
                psycopg.sql.Identifier(database.schema)
            )
        ).fetchall()
    return [row[0] for row in rows]


def _lz4_supported(postgres_url: str) -> bool:
    with psycopg.connect(**DatabaseUrl.parse(postgres_url).conninfo) as conn:
        try:
            conn.execute("SET default_toast_compression = 'lz4'")
        except psycopg.Error:
            return False
    return True


def test_a_snapshot_is_stored_compressed_by_lz4_and_without_it_where_the_server_refuses_it(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not _lz4_supported(postgres_url):
        pytest.skip("this PostgreSQL server was built without lz4")
    data = {"records": [[f"obs-{n}", "auth failures " * 8, n] for n in range(3000)]}  # compressible, > 2 KB
    ledger = open_ledger(postgres_url)
    try:
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 1000, data)
        monkeypatch.setattr(recorders, "LZ4", SQL("SET LOCAL default_toast_compression = 'no-such-method'"))
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 2000, data)
        ledger.save_snapshot("ws-1", "workspace-rules-v1", 3000, data)  # the refusal is remembered
        assert [s.version for s in ledger.stored_snapshots("ws-1", "workspace-rules-v1")] == [1000, 2000, 3000]
        for version in (1000, 2000, 3000):
            snapshot = ledger.latest_snapshot("ws-1", "workspace-rules-v1", upto=version)
            assert snapshot is not None and snapshot.data == data
    finally:
        ledger.close()
    assert _compression(postgres_url) == ["lz4", "pglz", "pglz"]


def test_a_snapshot_written_before_in_format_1_loads_into_the_state_it_holds(postgres_url: str) -> None:
    """A ledger written before this format keeps its snapshots: the standard library's JSON, records as lists."""
    ledger = open_ledger(postgres_url)
    try:
        coordinator = Coordinator(ledger)
        assert coordinator.submit(opening("ws-old")).ok
        for n in range(4):
            assert coordinator.submit(observation("ws-old", f"obs-{n}", "alice")).ok
        reducer = get_reducer()
        state = coordinator.workspaces.current("ws-old")
        head = ledger.read("ws-old")[-1]
        envelope = {
            "format": 1,
            "workspace_id": "ws-old",
            "reducer": reducer.name,
            "version": head.version,
            "head_hash": head.hash,
            "shape": shape_fingerprint(type(state)),
            "data": _layout_before(json.loads(json.dumps(reducer.dump(state)))),
        }
        body = seal(json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode())
        key = f"{reducer.name}/ws-old"
        ledger.snapshots.insert_events([StoredEvent(key, head.version, SNAPSHOT_TOPIC, body)])
        loads: list[int] = []
        counted = dataclasses.replace(reducer, load=lambda data: loads.append(1) or reducer.load(data))
        with capture_logs() as logs:
            loaded = Workspaces(ledger, counted).current("ws-old")
        assert loads == [1] and not [e for e in logs if e["event"] == "snapshot_rejected"]
        assert type(loaded.observations) is dict  # the layout before: decoded at once, as it was
        assert reducer.render(loaded) == reducer.render(state)
    finally:
        ledger.close()
