"""Snapshots are bound to the chain they were folded from (issue 10, item 3; ADR 0048): an edited snapshot row is
ignored and the state folded from the ledger, the tenant that decides visibility is the chain's, and verify
reports the snapshot."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest
import structlog
from structlog.testing import capture_logs

from caseboard.cli.main import main
from caseboard.ledger import open_ledger
from caseboard.replay.verify import verify_ledger
from caseboard.settings import Settings
from tests.http_server import observation, open_body, running_server

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """The CLI logs to the stream of the moment (a capture); later tests must not write there."""
    yield
    structlog.reset_defaults()


WS = "ws-snap"
KEY = f"tenant-a/{WS}"  # the key its tenant's opening stores it under (docs/adr/0130)
GOAL = "Find the failure mechanism"


@pytest.fixture
def snapshotted(postgres_url: str) -> Iterator[str]:
    """A workspace of tenant-a with 12 commits and snapshots at several versions."""
    with running_server(postgres_url) as server:
        server.app.workspaces.snapshot_min = 4
        operator = server.as_("opener", "operator")
        assert operator.post("/workspaces", json=open_body(WS)).status_code == 201
        specialist = server.as_("spec", "specialist")
        for number in range(11):
            answer = specialist.post(f"/workspaces/{WS}/contributions", json={"items": [observation(f"o-{number}")]})
            assert answer.status_code == 201, answer.text
    assert len(rows(postgres_url)) >= 2
    yield postgres_url


def connect(postgres_url: str) -> psycopg.Connection[tuple[object, ...]]:
    schema = parse_qs(urlparse(postgres_url).query)["schema"][0]
    conn = psycopg.connect(postgres_url.split("?")[0], autocommit=True)
    conn.execute(f'SET search_path TO "{schema}"')
    return conn


def rows(postgres_url: str) -> list[tuple[str, int, bytes]]:
    with connect(postgres_url) as conn:
        found = conn.execute(
            "SELECT originator_id, originator_version, state FROM caseboard_snapshots "
            "WHERE originator_id LIKE %s ORDER BY originator_version",
            (f"%/{WS}",),
        ).fetchall()
    return [(str(key), int(version), bytes(state)) for key, version, state in found]  # type: ignore[call-overload]


def edit_latest(postgres_url: str, *, reseal: bool, **changes: object) -> int:
    """Change fields of the latest snapshot's data in place; with ``reseal``, also compute a matching hash."""
    key, version, state = rows(postgres_url)[-1]
    envelope = json.loads(state)
    envelope["data"].update(changes)
    del envelope["hash"]
    body = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
    digest = hashlib.sha256(body).hexdigest() if reseal else json.loads(state)["hash"]
    with connect(postgres_url) as conn:
        conn.execute(
            "UPDATE caseboard_snapshots SET state = %s WHERE originator_id = %s AND originator_version = %s",
            (body[:-1] + b',"hash":"' + digest.encode() + b'"}', key, version),
        )
    return version


def test_an_untouched_ledger_and_its_snapshots_verify(snapshotted: str) -> None:
    ledger = open_ledger(snapshotted)
    try:
        report = verify_ledger(ledger, KEY)
        assert report.intact, report.line()
        assert report.snapshots == len(rows(snapshotted))
        envelope = json.loads(rows(snapshotted)[-1][2])
        commit = ledger.read(KEY, after=envelope["version"] - 1, upto=envelope["version"])[0]
        assert (envelope["workspace_id"], envelope["head_hash"]) == (KEY, commit.hash)
    finally:
        ledger.close()


@pytest.mark.parametrize("reseal", [False, True], ids=["edited", "edited-and-resealed"])
def test_a_snapshot_moved_to_another_tenant_changes_nothing_a_fresh_server_serves(
    snapshotted: str, reseal: bool
) -> None:
    scope = {"tenant_id": "tenant-b", "environment": "production", "service": "payments-api"}
    version = edit_latest(snapshotted, reseal=reseal, goal="Forged goal", scope=scope)
    with running_server(snapshotted) as fresh, capture_logs() as logs:
        tenant_a = fresh.as_("reader-a", "specialist", tenant="tenant-a")
        tenant_b = fresh.as_("reader-b", "specialist", tenant="tenant-b")
        assert tenant_b.get(f"/workspaces/{WS}").status_code == 404
        assert tenant_b.get(f"/workspaces/{WS}/ledger").status_code == 404
        shown = tenant_a.get(f"/workspaces/{WS}")
        assert shown.status_code == 200, shown.text
        assert (shown.json()["goal"], shown.json()["scope"]["tenant_id"]) == (GOAL, "tenant-a")
        assert shown.json()["workspace_version"] == 12
    rejected = [e for e in logs if e["event"] == "snapshot_rejected"]
    assert rejected and rejected[0]["version"] == version and rejected[0]["workspace_id"] == KEY
    ledger = open_ledger(snapshotted)
    try:
        report = verify_ledger(ledger, KEY)
        assert report.problem is not None
        kind = "snapshot_diverged" if reseal else "snapshot_altered"
        assert (report.problem.version, report.problem.kind) == (version, kind)
    finally:
        ledger.close()


def test_a_whitespace_edit_of_a_snapshot_is_caught_and_the_state_folded_from_the_ledger(snapshotted: str) -> None:
    key, version, state = rows(snapshotted)[-1]
    with connect(snapshotted) as conn:
        conn.execute(
            "UPDATE caseboard_snapshots SET state = %s WHERE originator_id = %s AND originator_version = %s",
            (state.replace(b",", b", ", 1), key, version),
        )
    ledger = open_ledger(snapshotted)
    try:
        report = verify_ledger(ledger, KEY)
        assert report.problem is not None and report.problem.kind == "snapshot_altered"
    finally:
        ledger.close()
    with running_server(snapshotted) as fresh:
        shown = fresh.as_("reader-a", "specialist").get(f"/workspaces/{WS}?version={version}")
        assert shown.status_code == 200 and shown.json()["goal"] == GOAL


def test_a_snapshot_of_another_chain_is_not_used(snapshotted: str) -> None:
    """Bound to a head hash the ledger does not hold at its version (a ledger rebuilt, a row copied over)."""
    key, version, state = rows(snapshotted)[-1]
    envelope = json.loads(state)
    envelope["head_hash"] = "0" * 64
    envelope["data"]["goal"] = "From another chain"
    del envelope["hash"]
    body = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
    sealed = body[:-1] + b',"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'"}'
    with connect(snapshotted) as conn:
        conn.execute(
            "UPDATE caseboard_snapshots SET state = %s WHERE originator_id = %s AND originator_version = %s",
            (sealed, key, version),
        )
    with running_server(snapshotted) as fresh:
        assert fresh.as_("reader-a", "specialist").get(f"/workspaces/{WS}").json()["goal"] == GOAL
    ledger = open_ledger(snapshotted)
    try:
        report = verify_ledger(ledger, KEY)
        assert report.problem is not None and report.problem.kind == "snapshot_unbound"
    finally:
        ledger.close()


def test_caseboard_verify_reports_an_edited_snapshot_with_exit_status_1(
    snapshotted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--database-url", snapshotted, "verify", WS, "--format", "json"]) == 0
    intact = json.loads(capsys.readouterr().out)
    assert intact["intact"] and intact["snapshots"] == len(rows(snapshotted))
    version = edit_latest(snapshotted, reseal=False, goal="Forged goal")
    assert main(["--database-url", snapshotted, "verify", WS, "--format", "json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["intact"], report["first_bad_version"], report["kind"]) == (False, version, "snapshot_altered")


def test_with_a_snapshot_key_a_resealed_snapshot_of_the_same_tenant_is_not_served(postgres_url: str) -> None:
    """Issue 34, item 8 (ADR 0048's limit): whoever can write the database can re-seal an edited snapshot; with
    ``CASEBOARD_SNAPSHOT_KEY`` it must also carry a MAC made with the server's key, which they do not have."""
    keyed = Settings(snapshot_key="snapshot-key-1")
    with running_server(postgres_url, settings=keyed) as server:
        server.app.workspaces.snapshot_min = 4
        assert server.as_("opener", "operator").post("/workspaces", json=open_body(WS)).status_code == 201
        specialist = server.as_("spec", "specialist")
        for number in range(11):
            answer = specialist.post(f"/workspaces/{WS}/contributions", json={"items": [observation(f"o-{number}")]})
            assert answer.status_code == 201, answer.text
    assert "mac" in json.loads(rows(postgres_url)[-1][2])
    with running_server(postgres_url, settings=keyed) as fresh, capture_logs() as logs:
        assert fresh.as_("reader-a", "specialist").get(f"/workspaces/{WS}").json()["goal"] == GOAL
    assert not [e for e in logs if e["event"] == "snapshot_rejected"]  # its own snapshots are used

    version = edit_latest(postgres_url, reseal=True, goal="Forged goal")  # its old MAC kept, now wrong
    served_from_the_ledger(postgres_url, keyed, version)
    key, _, state = rows(postgres_url)[-1]
    unsigned = json.loads(state)
    del unsigned["mac"], unsigned["hash"]  # then no MAC at all, re-sealed
    body = json.dumps(unsigned, separators=(",", ":"), ensure_ascii=False).encode()
    with connect(postgres_url) as conn:
        conn.execute(
            "UPDATE caseboard_snapshots SET state = %s WHERE originator_id = %s AND originator_version = %s",
            (body[:-1] + b',"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'"}', key, version),
        )
    served_from_the_ledger(postgres_url, keyed, version)
    served_from_the_ledger(postgres_url, Settings(snapshot_key="another-key"), version)


def served_from_the_ledger(postgres_url: str, settings: Settings, version: int) -> None:
    with running_server(postgres_url, settings=settings) as fresh, capture_logs() as logs:
        shown = fresh.as_("reader-a", "specialist").get(f"/workspaces/{WS}")
        assert shown.status_code == 200 and shown.json()["goal"] == GOAL, shown.text
    assert version in [e["version"] for e in logs if e["event"] == "snapshot_rejected"]
