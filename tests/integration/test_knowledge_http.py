"""``GET /knowledge`` and the MCP tool ``search_knowledge``: the key's tenant's entries only, labelled as prior
findings from other incidents, with provenance; a bad argument is a structured refusal, never a 500."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest

from tests.http_server import RunningServer, open_body, running_server
from tests.integration.test_knowledge import promote, retire
from tests.mcp_sessions import call, over_http
from tests.unit.board import claim, hyp, obs, result, verification, work_request


def post(server: RunningServer, principal: str, role: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    answer = server.as_(principal, role).post("/workspaces/ws-k/contributions", json={"items": items})
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


@pytest.fixture
def server(sqlite_url: str) -> Iterator[RunningServer]:
    with running_server(sqlite_url) as running:
        assert running.as_("op", "operator").post("/workspaces", json=open_body("ws-k")).status_code == 201
        post(running, "spec", "specialist", [obs("o1", "TLS handshake failures on payments-api-3")])
        post(running, "plan", "planner", [hyp("h1", "the intermediate is missing", supporting_evidence=["o1"])])
        post(running, "plan", "planner", [work_request("chk")])
        generation = post(running, "ver", "verifier", [claim("chk")])["items"][0]["generation"]
        post(running, "ver", "verifier", [result("chk", generation, summary="the chain lacks its intermediate")])
        post(running, "ver", "verifier", [verification("h1", "chk", "confirmed")])
        yield running


def test_the_tenant_reads_its_prior_findings_and_another_tenant_nothing(server: RunningServer) -> None:
    promoted = post(server, "op", "operator", [promote("h1")])["workspace_version"]
    reader = server.as_("reader", "planner")
    found = reader.get("/knowledge", params={"service": "payments-api", "q": "Intermediate"})
    assert found.status_code == 200
    body = found.json()
    assert body["tenant_id"] == "tenant-a" and "not evidence" in body["label"]
    [entry] = body["entries"]
    assert entry["entry_id"] == f"ws-k:{promoted}:0" and entry["kind"] == "prior_finding"
    assert entry["provenance"]["verification"] == {
        "workspace_version": promoted - 1,
        "hypothesis": "h1",
        "verified_by": "ver",
    }
    assert entry["provenance"]["evidence"] == ["o1"] and entry["current"] is True
    assert reader.get("/knowledge", params={"service": "checkout"}).json()["entries"] == []
    other = server.as_("intruder", "operator", tenant="tenant-b")
    assert other.get("/knowledge", params={"service": "payments-api", "include_retired": True}).json() == {
        "tenant_id": "tenant-b",
        "label": body["label"],
        "entries": [],
    }
    post(server, "op", "operator", [retire(entry["entry_id"])])
    assert reader.get("/knowledge", params={"service": "payments-api"}).json()["entries"] == []
    [kept] = reader.get("/knowledge", params={"service": "payments-api", "include_retired": True}).json()["entries"]
    assert kept["retired"]["reason"] == "the chain was complete there" and kept["current"] is False


def test_a_bad_query_is_a_structured_refusal(server: RunningServer) -> None:
    reader = server.as_("reader", "planner")
    for params in ({}, {"service": ""}, {"service": "s", "q": "x" * 300}, {"service": "s", "limit": 0}):
        answer = reader.get("/knowledge", params=params)
        assert answer.status_code == 422, params
        assert answer.json()["ok"] is False and answer.json()["reason"] == "invalid"


def test_the_mcp_tool_answers_what_the_route_answers(server: RunningServer) -> None:
    post(server, "op", "operator", [promote("h1")])
    route = server.as_("reader", "planner").get("/knowledge", params={"service": "payments-api"}).json()

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with over_http(server.base_url, server.token("agent", "planner")) as client:
            found = await call(client, "search_knowledge", {"service": "payments-api"})
            refused = await call(client, "search_knowledge", {"service": "payments-api", "tenant": "tenant-b"})
            return found, refused

    found, refused = anyio.run(scenario)
    assert found["ok"] is True and found["entries"] == route["entries"] and len(found["entries"]) == 1
    assert refused["ok"] is False and refused["reason"] == "invalid"


def test_a_closed_incident_s_finding_is_promoted_and_another_incident_s_view_shows_it_when_asked(
    server: RunningServer,
) -> None:
    """Knowledge is promoted once an incident is over: a closed workspace still takes ``promote``. A later
    incident of the same service sees it in ``/view`` only with ``prior_findings=true``, in its own section."""
    closing = {"type": "status", "to": "closed", "reason": "resolved"}
    post(server, "op", "operator", [closing])
    promoted = post(server, "op", "operator", [promote("h1")])["workspace_version"]
    operator = server.as_("op", "operator")
    assert operator.post("/workspaces", json=open_body("ws-next")).status_code == 201
    planner = server.as_("plan", "planner")
    plain = planner.get("/workspaces/ws-next/view", params={"budget_chars": 6000})
    assert plain.status_code == 200, plain.text
    assert "prior_finding" not in plain.text
    asked = planner.get("/workspaces/ws-next/view", params={"budget_chars": 6000, "prior_findings": "true"})
    assert asked.status_code == 200, asked.text
    [entry] = [e for e in asked.json()["entries"] if e["section"] == "prior_findings"]
    assert entry["ref"] == f"ws-k:{promoted}:0" and "NOT evidence for this incident" in entry["note"]
    other = server.as_("intruder", "operator", tenant="tenant-b")
    assert other.post("/workspaces", json=open_body("ws-other", tenant="tenant-b")).status_code == 201
    theirs = other.get("/workspaces/ws-other/view", params={"budget_chars": 6000, "prior_findings": "true"})
    assert theirs.status_code == 200 and "prior_finding" not in theirs.text
