"""A workspace's identity is (tenant, id): each tenant opens its own incident-042, and sees nothing of another's.

Over a real HTTP server on each durable engine; the command line in processes of its own; workspaces of the
operator's namespace (opened on the command line, stored under their bare id as every ledger before
docs/adr/0130) beside the tenants' own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from eventsourcing.persistence import StoredEvent

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import COMMIT_TOPIC
from caseboard.domain.errors import LedgerUnavailable
from caseboard.domain.outcome import Accepted
from caseboard.ledger import open_ledger
from tests.http_server import RunningServer, observation, open_body, running_server
from tests.unit.board import open_item

WS = "incident-042"


def cli(*argv: str) -> tuple[int, str, str]:
    """The command line in a process of its own."""
    done = subprocess.run([sys.executable, "-m", "caseboard", *argv], capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture
def server(durable_url: str) -> Iterator[RunningServer]:
    with running_server(durable_url) as running:
        yield running


def two_tenants(server: RunningServer) -> tuple[httpx.Client, httpx.Client]:
    """Tenant a and tenant b, each with its own incident-042 and one observation in it."""
    a = server.as_("a-operator", "operator", "specialist", tenant="tenant-a")
    b = server.as_("b-operator", "operator", "specialist", tenant="tenant-b")
    for client, tenant in ((a, "tenant-a"), (b, "tenant-b")):
        opened = client.post("/workspaces", json=open_body(WS, tenant), headers={"X-Caseboard-Role": "operator"})
        assert opened.status_code == 201, opened.text
        noted = client.post(
            f"/workspaces/{WS}/contributions",
            json={"items": [observation(f"obs-{tenant}", f"seen by {tenant} only")]},
            headers={"X-Caseboard-Role": "specialist"},
        )
        assert noted.status_code == 201, noted.text
    return a, b


def test_each_tenant_opens_its_own_workspace_of_one_id_and_sees_only_its_own(server: RunningServer) -> None:
    a, b = two_tenants(server)
    read_a = a.get(f"/workspaces/{WS}", headers={"X-Caseboard-Role": "operator"})
    read_b = b.get(f"/workspaces/{WS}", headers={"X-Caseboard-Role": "operator"})
    assert read_a.json()["workspace_id"] == read_b.json()["workspace_id"] == WS
    assert read_a.json()["workspace_version"] == read_b.json()["workspace_version"] == 2
    assert read_a.json()["scope"]["tenant_id"] == "tenant-a"
    assert read_b.json()["scope"]["tenant_id"] == "tenant-b"
    for client, own, other in ((a, "tenant-a", "tenant-b"), (b, "tenant-b", "tenant-a")):
        headers = {"X-Caseboard-Role": "operator"}
        texts = [
            client.get(f"/workspaces/{WS}", headers=headers).text,
            client.get(f"/workspaces/{WS}/ledger", headers=headers).text,
            client.get(f"/workspaces/{WS}/timeline", headers=headers).text,
            client.get(f"/workspaces/{WS}/health", headers=headers).text,
            client.get(f"/workspaces/{WS}/view", params={"budget_chars": 4000}, headers=headers).text,
            client.get(f"/workspaces/{WS}/events", params={"timeout_s": 0.5}, headers=headers).text,
        ]
        assert f"seen by {own} only" in texts[0]
        for text in texts:
            assert other not in text, text[:400]
            assert f"{own}/{WS}" not in text  # the key stays inside caseboard
    events = a.get(f"/workspaces/{WS}/events", params={"timeout_s": 0.5}, headers={"X-Caseboard-Role": "operator"})
    blocks = [block for block in events.text.split("\n\n") if "event: commit" in block]
    data = [json.loads(block.rpartition("data: ")[2]) for block in blocks]
    assert [d["workspace_id"] for d in data] == [WS, WS]


def test_the_ledger_keeps_the_two_apart_and_seals_each_commit_with_its_tenant(server: RunningServer) -> None:
    two_tenants(server)
    ledger = server.app.ledger
    assert ledger.head(WS) == 0  # neither is in the operator's namespace
    assert ledger.keys_named(WS) == [f"tenant-a/{WS}", f"tenant-b/{WS}"]
    for tenant in ("tenant-a", "tenant-b"):
        commits = ledger.read(f"{tenant}/{WS}")
        assert [(c.schema_version, c.tenant_id, c.workspace_id) for c in commits] == [(2, tenant, WS)] * 2
        assert b'"workspace_id":"incident-042","tenant_id":"' + tenant.encode() in commits[0].stored_json
        assert commits[1].previous_hash == commits[0].hash


def test_a_tenant_cannot_open_an_id_twice_and_another_tenant_learns_nothing_from_it(server: RunningServer) -> None:
    a, b = two_tenants(server)
    again = a.post("/workspaces", json=open_body(WS, "tenant-a"), headers={"X-Caseboard-Role": "operator"})
    assert again.status_code == 409
    assert again.json()["reason"] == "workspace_exists"
    fresh = b.post("/workspaces", json=open_body("incident-043", "tenant-b"), headers={"X-Caseboard-Role": "operator"})
    assert fresh.status_code == 201  # nothing tells tenant b which ids tenant a has


def test_a_workspace_of_the_operators_namespace_is_its_tenants_and_no_other_tenant_is_blocked_by_it(
    server: RunningServer, durable_url: str, tmp_path: Path
) -> None:
    lines = tmp_path / "open.jsonl"
    lines.write_text(
        json.dumps({"workspace_id": WS, "author": {"principal": "op", "role": "operator"}, "items": [open_item()]})
        + "\n"
    )
    assert cli("--database-url", durable_url, "submit", WS, "--file", str(lines))[0] == 0
    assert server.app.ledger.read(WS)[0].schema_version == 1  # stored as every ledger before: its bytes unchanged
    a = server.as_("a-reader", "operator", tenant="tenant-a")  # open_item's scope is tenant-a
    assert a.get(f"/workspaces/{WS}").json()["workspace_version"] == 1
    assert a.post("/workspaces", json=open_body(WS, "tenant-a")).json()["reason"] == "workspace_exists"
    b = server.as_("b-operator", "operator", tenant="tenant-b")
    assert b.get(f"/workspaces/{WS}").status_code == 404
    assert b.post("/workspaces", json=open_body(WS, "tenant-b")).status_code == 201
    assert b.get(f"/workspaces/{WS}").json()["scope"]["tenant_id"] == "tenant-b"
    assert a.get(f"/workspaces/{WS}").json()["scope"]["tenant_id"] == "tenant-a"
    # the command line cannot open tenant b's id again in its own namespace
    code, out, _ = cli("--database-url", durable_url, "submit", "tenant-b/" + WS, "--file", str(lines))
    assert code == 1 and json.loads(out)["reason"] == "forbidden"  # the line's scope is tenant-a's


def test_the_command_line_names_a_tenants_workspace_as_tenant_slash_id_and_refuses_an_ambiguous_id(
    server: RunningServer, durable_url: str, tmp_path: Path
) -> None:
    two_tenants(server)
    code, _, err = cli("--database-url", durable_url, "show", WS)
    assert code == 2
    assert err.count("\n") == 1 and "tenant-a/incident-042" in err and "tenant-b/incident-042" in err
    code, out, _ = cli("--database-url", durable_url, "show", f"tenant-b/{WS}")
    assert code == 0 and json.loads(out)["scope"]["tenant_id"] == "tenant-b"
    export = tmp_path / "b.jsonl"
    assert cli("--database-url", durable_url, "export", f"tenant-b/{WS}", "--out", str(export))[0] == 0
    assert cli("verify", str(export))[0] == 0
    lines = export.read_text().splitlines()
    assert all(json.loads(line)["tenant_id"] == "tenant-b" for line in lines)
    # moving a commit into another tenant breaks its hash: the tenant is sealed in it
    moved = tmp_path / "moved.jsonl"
    moved.write_text("\n".join(line.replace('"tenant-b"', '"tenant-c"', 1) for line in lines) + "\n")
    code, out, _ = cli("verify", str(moved), "--format", "json")
    assert code == 1 and json.loads(out)["kind"] == "altered"
    # an import keeps the tenant's namespace; --as renames within it
    other = f"sqlite:///{tmp_path}/other.db"
    assert cli("--database-url", other, "import", str(export))[0] == 0
    assert cli("--database-url", other, "import", str(export), "--as", "incident-044")[0] == 0
    copy = open_ledger(other)
    try:
        assert copy.keys_named(WS) == [f"tenant-b/{WS}"]
        assert [c.tenant_id for c in copy.read("tenant-b/incident-044")] == ["tenant-b", "tenant-b"]
    finally:
        copy.close()
    code, _, err = cli("--database-url", other, "import", str(export), "--as", "tenant-a/x")
    assert code == 2 and "stays in its tenant" in err


def test_a_commit_stored_under_another_key_is_refused_on_read(durable_url: str) -> None:
    ledger = open_ledger(durable_url)
    try:
        line = json.dumps(
            {"workspace_id": WS, "author": {"principal": "op", "role": "operator"}, "items": [open_item()]}
        )
        outcome = Coordinator(ledger).submit(parse_contribution(line), f"tenant-a/{WS}")
        assert isinstance(outcome, Accepted)
        stored = ledger.read(f"tenant-a/{WS}")[0]
        moved = StoredEvent(f"tenant-b/{WS}", 1, COMMIT_TOPIC, stored.stored_json)  # tenant-a's bytes, b's key
        ledger.events.insert_events([moved])
        with pytest.raises(LedgerUnavailable, match="stored under"):
            ledger.read(f"tenant-b/{WS}")
    finally:
        ledger.close()
