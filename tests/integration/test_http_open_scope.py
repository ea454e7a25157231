"""Opening a workspace over HTTP: the tenant is the key's, so ``scope.tenant_id`` may be left out; given, it must
be the key's tenant (docs/agents.md shows the body)."""

from __future__ import annotations

from pathlib import Path

from tests.http_server import LIMITS, running_server


def test_an_opening_without_a_tenant_opens_in_the_keys_tenant_and_another_tenant_is_forbidden(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path}/ledger.db") as server:
        operator = server.as_("op-1", "operator", tenant="tenant-c")
        body = {
            "workspace_id": "incident-7",
            "scope": {"environment": "production", "service": "payments-api"},
            "goal": "Find the failure mechanism",
            "runtime_limits": LIMITS,
        }
        opened = operator.post("/workspaces", json=body)
        assert opened.status_code == 201, opened.json()
        assert operator.get("/workspaces/incident-7").json()["scope"]["tenant_id"] == "tenant-c"
        other = {**body, "workspace_id": "incident-8", "scope": {**body["scope"], "tenant_id": "tenant-d"}}
        refused = operator.post("/workspaces", json=other)
        assert (refused.status_code, refused.json()["field"]) == (403, "scope.tenant_id")
        same = {**body, "workspace_id": "incident-9", "scope": {**body["scope"], "tenant_id": "tenant-c"}}
        assert operator.post("/workspaces", json=same).status_code == 201
