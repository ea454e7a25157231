"""``GET /workspaces/{id}/handoffs``: a workspace's handoffs and their delivery, for the key's tenant only."""

from __future__ import annotations

from pathlib import Path

from caseboard.settings import Settings
from tests.http_server import open_body, running_server


def test_the_handoffs_of_a_workspace_are_listed_for_its_tenant_only(tmp_path: Path) -> None:
    tenants = tmp_path / "tenants.toml"
    tenants.write_text('[[tenants.tenant-a.webhooks]]\nurl = "http://127.0.0.1:9/hook"\nsecret_env = "NO_SUCH_VAR"\n')
    settings = Settings(tenants_file=str(tenants))
    with running_server(f"sqlite:///{tmp_path}/ledger.db", settings=settings) as server:
        operator = server.as_("op", "operator")
        assert operator.post("/workspaces", json=open_body("ws-h")).status_code == 201
        assert operator.get("/workspaces/ws-h/handoffs").json() == {"workspace_id": "ws-h", "handoffs": []}
        escalate = {"type": "status", "to": "budget_exhausted", "reason": "spent", "handoff": "take it from here"}
        assert operator.post("/workspaces/ws-h/contributions", json={"items": [escalate]}).status_code == 201
        [entry] = operator.get("/workspaces/ws-h/handoffs").json()["handoffs"]
        assert entry == {
            "handoff_id": "tenant-a/ws-h@2/handoff",
            "workspace_version": 2,
            "trigger": "budget_exhausted",
            "state": "pending",  # a webhook is configured and no worker has tried yet
            "attempts": [],
        }
        other = server.as_("op-b", "operator", tenant="tenant-b").get("/workspaces/ws-h/handoffs")
        assert other.status_code == 404 and other.json()["reason"] == "unknown_workspace"
