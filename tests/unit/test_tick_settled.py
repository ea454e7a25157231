"""The controller's tick re-decides only the workspaces under investigation: one that is escalated, exhausted or
closed is forgotten until a notification names it again, one that is not closed once no claim in it is held.
Re-deciding every escalated incident each tick held a worker's interpreter for about a second a tick at a hundred
of them, and handoffs waited behind it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.store import DispatchStore
from caseboard.settings import Settings
from caseboard.workers.host import ConsumerHost
from caseboard.workers.live import build_host

LIMITS = dict.fromkeys(
    ("max_selected_items", "max_investigation_cycles", "max_open_questions", "max_proposals", "max_pending_work"), 5
)


def submit(
    app: Any, workspace_id: str, items: list[dict[str, Any]], author: tuple[str, str] = ("op", "operator")
) -> None:
    body = {"workspace_id": workspace_id, "author": {"principal": author[0], "role": author[1]}, "items": items}
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


@contextmanager
def opened(tmp_path: Path, *workspace_ids: str) -> Iterator[tuple[Any, ConsumerHost]]:
    """An app on a fresh ledger with ``workspace_ids`` opened, and a host with a controller."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    app = build_app(Settings.from_env(), database_url=url)
    store = DispatchStore(url)
    try:
        scope = {"tenant_id": "t", "environment": "e", "service": "s"}
        opening = {"type": "open", "scope": scope, "goal": "g", "runtime_limits": LIMITS, "execution_mode": "read_only"}
        for workspace_id in workspace_ids:
            submit(app, workspace_id, [opening])
        yield app, build_host(app, store)
    finally:
        store.close()
        app.close()


def test_an_escalated_workspace_leaves_the_tick_and_a_notification_brings_it_back(tmp_path: Path) -> None:
    with opened(tmp_path, "ws-open", "ws-escalated") as (app, host):
        submit(app, "ws-escalated", [{"type": "status", "to": "human_review_required", "reason": "r", "handoff": "h"}])
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


@contextmanager
def claimed_then(tmp_path: Path, status: dict[str, Any]) -> Iterator[tuple[Any, ConsumerHost]]:
    """A workspace in which a specialist claimed a request for 60 s, then was given ``status``; and a host whose
    controller has taken it in."""
    with opened(tmp_path, "ws-held") as (app, host):
        request = {"type": "work_request", "request_id": "logs-1", "kind": "log_query", "target": "payments-api"}
        submit(app, "ws-held", [request], ("planner", "planner"))
        submit(app, "ws-held", [{"type": "work_claim", "request_id": "logs-1", "lease_s": 60}], ("spec", "specialist"))
        submit(app, "ws-held", [{"type": "status", **status}])
        host.handle(snapshot("ws-held", 4))
        yield app, host


def lapse(host: ConsumerHost) -> None:
    """The controller's clock past the lease."""
    assert host.controller is not None
    host.controller.clock = lambda: datetime.now(UTC) + timedelta(seconds=61)


def test_a_stopped_workspace_stays_in_the_tick_while_a_claim_is_held_until_the_sweep_reclaims_it(
    tmp_path: Path,
) -> None:
    """A specialist claimed a check, then died; the workspace was escalated meanwhile. Forgotten at once, it would
    keep the request claimed for good (health and the console counting it held). It stays in the tick until the
    lease lapses, the sweep reclaims the request, and it leaves."""
    with claimed_then(tmp_path, {"to": "human_review_required", "reason": "r", "handoff": "h"}) as (app, host):
        host.tick()  # the lease is live: nothing to sweep, and the workspace stays
        assert host.workspaces == {"ws-held"} and app.ledger.head("ws-held") == 4
        lapse(host)
        host.tick()  # lapsed: reclaimed
        assert app.ledger.head("ws-held") == 5
        work = app.workspaces.show("ws-held")["work"]
        assert [(w["request_id"], w["status"], w["holder"]) for w in work] == [("logs-1", "awaiting_result", None)]
        host.tick()  # nothing held any longer: it leaves
        assert host.workspaces == set() and app.ledger.head("ws-held") == 5


def test_a_closed_workspace_leaves_the_tick_whatever_it_holds(tmp_path: Path) -> None:
    """A closed workspace refuses a reclaim: sweeping it would be refused at every tick."""
    with claimed_then(tmp_path, {"to": "closed", "reason": "r"}) as (app, host):
        lapse(host)
        host.tick()
        assert host.workspaces == set() and app.ledger.head("ws-held") == 4
