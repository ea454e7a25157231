"""The console's routes over HTTP, without a browser: the contract's refusals (no key, another tenant's workspace,
versions out of range), the list's stream of server-sent events, and a judgment whose prompt the store no longer
has ("missing")."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from caseboard.handoff.document import build
from tests.http_server import RunningServer, observation, open_body, running_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/ledger.db") as running:
        yield running


def test_the_console_refuses_as_the_contract_does_and_shows_no_other_tenants_workspace(server: RunningServer) -> None:
    a = server.as_("operator-a", "operator", tenant="tenant-a")
    b = server.as_("operator-b", "operator", tenant="tenant-b")
    assert a.post("/workspaces", json=open_body("ws-1")).status_code == 201
    for path in ("/ui/api/workspaces", "/ui/workspaces/ws-1/judgments", "/ui/workspaces/ws-1/diff", "/workspaces"):
        anonymous = httpx.get(server.base_url + path, timeout=10)
        assert anonymous.status_code == 401 and anonymous.json()["reason"] == "unauthenticated", path
    for path in ("/ui/workspaces/ws-1/judgments", "/ui/workspaces/ws-1/diff", "/ui/workspaces/ws-1/events"):
        foreign = b.get(path)
        assert foreign.status_code == 404 and foreign.json()["reason"] == "unknown_workspace", path
    assert b.get("/workspaces").json()["total"] == 0
    assert b.get("/ui/api/workspaces").json()["workspaces"] == []
    assert a.get("/ui/api/workspaces").json()["workspaces"][0]["workspace_id"] == "ws-1"
    beyond = a.get("/ui/workspaces/ws-1/diff", params={"from": 1, "to": 5})
    assert beyond.status_code == 422 and beyond.json()["reason"] == "invalid"
    backwards = a.get("/ui/workspaces/ws-1/diff", params={"from": 2, "to": 1})
    assert backwards.status_code == 422 and backwards.json()["field"] == "from"
    wrong = a.get("/workspaces", params={"limit": 0})
    assert wrong.status_code == 422 and wrong.json()["reason"] == "invalid"
    cookie = httpx.get(server.base_url + "/ui/", cookies={"caseboard_key": server.token("x", "reporter")}, timeout=10)
    assert cookie.status_code == 200 and '"workspace_id":"ws-1"' in cookie.text  # the first page, for its script


def test_the_lists_stream_sends_the_page_at_once_and_again_when_a_workspace_of_the_tenant_moves(
    server: RunningServer,
) -> None:
    token = server.token("operator-a", "operator", tenant="tenant-a")
    a = server.client(token)
    b = server.as_("operator-b", "operator", tenant="tenant-b")
    logs = server.as_("logs-a", "specialist", tenant="tenant-a")
    assert a.post("/workspaces", json=open_body("ws-1")).status_code == 201
    events: list[dict[str, object]] = []
    with httpx.stream(
        "GET",
        server.base_url + "/ui/api/workspaces/events",
        params={"q": "ws-"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    ) as stream:
        lines = stream.iter_lines()
        for line in lines:
            if line.startswith("data: "):
                events.append(json.loads(line.removeprefix("data: ")))
                if len(events) == 1:
                    assert b.post("/workspaces", json=open_body("ws-b", tenant="tenant-b")).status_code == 201
                    answer = logs.post("/workspaces/ws-1/contributions", json={"items": [observation("obs-1")]})
                    assert answer.status_code == 201
                else:
                    break
    first, second = events
    assert [(r["workspace_id"], r["workspace_version"]) for r in first["workspaces"]] == [("ws-1", 1)]  # type: ignore[index]
    assert [(r["workspace_id"], r["workspace_version"]) for r in second["workspaces"]] == [("ws-1", 2)]  # type: ignore[index]


def test_a_judgment_whose_prompt_was_removed_shows_missing(server: RunningServer) -> None:
    a = server.as_("operator-a", "operator", tenant="tenant-a")
    planner = server.as_("planner-1", "planner", tenant="tenant-a")
    assert a.post("/workspaces", json=open_body("ws-1")).status_code == 201
    prompt = b'[{"content":"what next?","role":"user"}]'
    digest = hashlib.sha256(prompt).hexdigest()
    server.app.artifacts.put("tenant-a", [prompt], stored_by="planner-1", media_type="application/json")
    judgment = {
        "type": "judgment",
        "invocation_id": "inv-1",
        "component": "planner.v1 turn",
        "model": "m",
        "prompt_sha256": digest,
        "input_workspace_version": 1,
        "output": {"reply": {"items": []}, "usage": {"total_tokens": 12}},
    }
    assert planner.post("/workspaces/ws-1/contributions", json={"items": [judgment]}).status_code == 201
    shown = planner.get("/ui/workspaces/ws-1/judgments")
    assert shown.status_code == 200
    assert 'class="bytes prompt" data-check="verified"' in shown.text
    assert 'class="bytes reply" data-check="recorded"' in shown.text  # no stored reply named: the recorded one
    assert server.app.artifacts.remove("tenant-a", f"sha256:{digest}")
    removed = planner.get("/ui/workspaces/ws-1/judgments")
    assert 'class="bytes prompt" data-check="missing"' in removed.text


def test_the_investigation_page_shows_every_check_a_handoff_lists_as_incomplete_a_failed_one_with_why(
    server: RunningServer,
) -> None:
    """A handoff lists every check not completed (``handoff/document.py``) and links to this page: each is on it,
    in flight or among the incomplete checks, a failed one with its reason (it had been on neither)."""
    a = server.as_("operator-a", "operator", tenant="tenant-a")
    planner = server.as_("planner-1", "planner", tenant="tenant-a")
    tls = server.as_("certificate-check-specialist", "specialist", tenant="tenant-a")
    assert a.post("/workspaces", json=open_body("ws-2")).status_code == 201
    asked = [
        {"type": "work_request", "request_id": request, "kind": "certificate_check", "target": "payments-api"}
        for request in ("tls-failed", "tls-partial", "tls-waiting")
    ]
    assert planner.post("/workspaces/ws-2/contributions", json={"items": asked}).status_code == 201
    claims = [
        {"type": "work_claim", "request_id": request, "lease_s": 300} for request in ("tls-failed", "tls-partial")
    ]
    assert tls.post("/workspaces/ws-2/contributions", json={"items": claims}).status_code == 201
    why = "certs chain failed: no answer within the deadline of 5 s"
    query = {"time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:02:00Z"], "filters": {}, "targets": [],
             "completed": False}  # fmt: skip
    failed = {"type": "work_result", "request_id": "tls-failed", "generation": 1, "status": "failed",
              "summary": why, "query": query}  # fmt: skip
    partial = {"type": "work_result", "request_id": "tls-partial", "generation": 1, "status": "completed",
               "summary": "1 of 2 instances read", "query": query}  # fmt: skip  # the reducer's incomplete_work
    assert tls.post("/workspaces/ws-2/contributions", json={"items": [failed, partial]}).status_code == 201
    projection = a.get("/workspaces/ws-2").json()
    listed = build("tenant-a/ws-2", projection, datetime.now(UTC), "human_review_required", None).incomplete_checks
    page = a.get("/ui/workspaces/ws-2").text
    shown = re.findall(r'<tr class="(?:work|incomplete)" data-id="([^"]+)">', page)
    assert sorted(shown) == sorted(check.request_id for check in listed) == ["tls-failed", "tls-partial", "tls-waiting"]
    assert (
        'data-id="tls-partial"><td><code>tls-partial</code></td>\n<td><span class="status status-incomplete">' in page
    )
    row = page.split('<tr class="incomplete" data-id="tls-failed">', 1)[1].split("</tr>", 1)[0]
    assert "failed" in row and why in row and "targets, filters, completion" in row
