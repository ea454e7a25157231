"""The controller's tick re-decides only the workspaces under investigation: one that is escalated, exhausted or
closed is forgotten until a notification names it again. Re-deciding every escalated incident each tick held a
worker's interpreter for about a second a tick at a hundred of them, and handoffs waited behind it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.settings import Settings
from caseboard.workers.live import build_host

LIMITS = dict.fromkeys(
    ("max_selected_items", "max_investigation_cycles", "max_open_questions", "max_proposals", "max_pending_work"), 5
)


def submit(app: Any, workspace_id: str, items: list[dict[str, Any]]) -> None:
    body = {"workspace_id": workspace_id, "author": {"principal": "op", "role": "operator"}, "items": items}
    assert app.coordinator().submit(parse_contribution(json.dumps(body)))["ok"]


def snapshot(workspace_id: str, version: int) -> dict[str, Any]:
    notification = Notification(
        id=f"{workspace_id}@{version}/snapshot_changed",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id=workspace_id,
        workspace_version=version,
    )
    return notification.model_dump(exclude_none=True)


def test_an_escalated_workspace_leaves_the_tick_and_a_notification_brings_it_back(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    app = build_app(Settings.from_env(), database_url=url)
    store = DispatchStore(url)
    try:
        scope = {"tenant_id": "t", "environment": "e", "service": "s"}
        opening = {"type": "open", "scope": scope, "goal": "g", "runtime_limits": LIMITS, "execution_mode": "read_only"}
        for workspace_id in ("ws-open", "ws-escalated"):
            submit(app, workspace_id, [opening])
        submit(app, "ws-escalated", [{"type": "status", "to": "human_review_required", "reason": "r", "handoff": "h"}])
        host = build_host(app, store)
        host.handle(snapshot("ws-open", 1))
        host.handle(snapshot("ws-escalated", 2))
        assert host.workspaces == {"ws-open", "ws-escalated"}
        heads = {ws: app.ledger.head(ws) for ws in host.workspaces}
        host.tick()
        assert host.workspaces == {"ws-open"}
        assert app.ledger.head("ws-escalated") == heads["ws-escalated"]
        host.tick()  # it stays out, and the tick goes on deciding the other
        assert host.workspaces == {"ws-open"}
        host.handle(snapshot("ws-escalated", 3))  # a notification brings it back
        assert "ws-escalated" in host.workspaces
    finally:
        store.close()
        app.close()
