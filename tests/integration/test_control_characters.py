"""Issue 34, item 1: NUL and the other refused control characters (docs/adr/0140) are ``invalid`` at the one
parse path, naming the field, query parameter or header; a knowledge store that meets them in what was committed
before (written past the parser) escapes them with a warning and goes on serving every tenant."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from structlog.testing import capture_logs

from caseboard.coordinator import parse_contribution
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Refusal
from caseboard.domain.outcome import Accepted
from tests.http_server import RunningServer, open_body, running_server
from tests.integration.test_knowledge import promote
from tests.mcp_sessions import call, over_http
from tests.unit.board import claim, hyp, obs, result, verification, work_request

NUL = "\u0000"


def envelope(*items: dict[str, Any], role: str = "specialist") -> dict[str, Any]:
    return {"workspace_id": "ws-1", "author": {"principal": "p-1", "role": role}, "items": list(items)}


@pytest.mark.parametrize("character", ["\u0000", "\u0001", "\u001b", "\u001f", "\u000b"])
def test_a_refused_control_character_is_invalid_naming_its_field(character: str) -> None:
    line = json.dumps(envelope(obs("o1", "auth failures"), obs("o2", f"auth{character}failures")))
    with pytest.raises(Refusal) as refused:
        parse_contribution(line)
    assert refused.value.reason == "invalid" and refused.value.field == "items[1].statement"
    author = json.dumps({**envelope(obs("o1")), "author": {"principal": f"p{character}", "role": "specialist"}})
    with pytest.raises(Refusal) as refused:
        parse_contribution(author)
    assert refused.value.field == "author.principal"


def test_tabs_line_ends_and_an_escaped_backslash_are_kept() -> None:
    statement = "line one\n\tline two\r\\u0000 is six characters here"
    parsed = parse_contribution(json.dumps(envelope(obs("o1", statement))))
    assert parsed.items[0].statement == statement  # type: ignore[union-attr]
    with pytest.raises(Refusal):  # three backslashes: an escaped one, then an escaped NUL
        parse_contribution(json.dumps(envelope(obs("o1", "\\" + NUL))))


@pytest.fixture
def server(postgres_url: str) -> Iterator[RunningServer]:
    with running_server(postgres_url) as running:
        yield running


def post(server: RunningServer, principal: str, role: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    answer = server.as_(principal, role).post("/workspaces/ws-k/contributions", json={"items": items})
    assert answer.status_code == 201, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_http_refuses_control_characters_in_bodies_queries_and_headers(server: RunningServer) -> None:
    operator = server.as_("op", "operator")
    assert operator.post("/workspaces", json=open_body("ws-k")).status_code == 201
    specialist = server.as_("spec", "specialist")
    answer = specialist.post("/workspaces/ws-k/contributions", json={"items": [obs("o1", f"a{NUL}b")]})
    assert answer.status_code == 422 and answer.json()["field"] == "items[0].statement", answer.text
    for path, params in (("/knowledge", "service=a%00b"), ("/artifacts", "source_system=a%00b&media_type=x")):
        method = operator.get if path == "/knowledge" else operator.post
        answer = method(f"{path}?{params}")  # type: ignore[operator]
        assert answer.status_code == 422, answer.text
        assert answer.json() == {
            "ok": False,
            "reason": "invalid",
            "message": answer.json()["message"],
            "field": params.split("=")[0],
        }
    assert operator.get("/knowledge", params={"service": "a\u001bb"}).json()["field"] == "service"

    async def header() -> httpx.Response:  # a client that sends the header's bytes as they are
        transport = httpx.ASGITransport(app=server.api)
        async with httpx.AsyncClient(transport=transport, base_url="http://caseboard") as client:
            return await client.get(
                "/knowledge",
                params={"service": "payments-api"},
                headers=[(b"authorization", b"Bearer x"), (b"x-caseboard-role", b"plan\x01ner")],
            )

    answer = anyio.run(header)
    assert answer.status_code == 422 and answer.json()["field"] == "x-caseboard-role", answer.text


def test_a_nul_committed_past_the_parser_is_escaped_and_every_tenant_is_served(
    server: RunningServer, postgres_url: str
) -> None:
    """A promotion whose statement holds NUL, written to the ledger without the parser (as an old export's
    import would): the knowledge store escapes it with a warning; both tenants' reads answer."""
    operator = server.as_("op", "operator")
    assert operator.post("/workspaces", json=open_body("ws-k")).status_code == 201
    post(server, "spec", "specialist", [obs("o1", "TLS handshake failures on payments-api-3")])
    post(server, "plan", "planner", [hyp("h1", "the intermediate is missing", supporting_evidence=["o1"])])
    post(server, "plan", "planner", [work_request("chk")])
    generation = post(server, "ver", "verifier", [claim("chk")])["items"][0]["generation"]
    post(server, "ver", "verifier", [result("chk", generation, summary="the chain lacks its intermediate")])
    post(server, "ver", "verifier", [verification("h1", "chk", "confirmed")])
    raw = envelope(promote("h1", f"the intermediate{NUL} is missing"), role="operator")
    raw["workspace_id"] = "ws-k"
    contribution = Contribution.model_validate(raw)  # not through the parser
    assert isinstance(server.app.coordinator().submit(contribution, "tenant-a/ws-k"), Accepted)
    other = server.as_("b-op", "operator", tenant="tenant-b")
    assert other.post("/workspaces", json=open_body("ws-b", tenant="tenant-b")).status_code == 201

    with capture_logs() as logs:
        found = server.as_("reader", "planner").get("/knowledge", params={"service": "payments-api"})
    assert found.status_code == 200, found.text
    [entry] = found.json()["entries"]
    assert entry["statement"] == "the intermediate\\u0000 is missing"
    assert any(record["event"] == "knowledge_text_escaped" for record in logs)
    theirs = other.get("/knowledge", params={"service": "payments-api"})
    assert theirs.status_code == 200 and theirs.json()["entries"] == []
    view = other.get("/workspaces/ws-b/view", params={"budget_chars": 6000, "prior_findings": "true"})
    assert view.status_code == 200, view.text
    operator.post("/workspaces", json=open_body("ws-next"))
    ours = operator.get("/workspaces/ws-next/view", params={"budget_chars": 6000, "prior_findings": "true"})
    assert ours.status_code == 200 and "\\\\u0000" in ours.text, ours.text

    async def tool() -> dict[str, Any]:
        async with over_http(server.base_url, server.token("agent", "planner", tenant="tenant-b")) as client:
            return await call(client, "search_knowledge", {"service": "payments-api"})

    assert anyio.run(tool)["ok"] is True

    for argv, expected in (
        (("knowledge", "search", "--service", "payments-api", "--tenant", "tenant-a"), "\\u0000"),
        (("knowledge", "search", "--service", "payments-api", "--tenant", "tenant-b"), "no knowledge entries"),
        (("knowledge", "audit"), "1 entries, 0 without a verification behind them"),
        (("knowledge", "rebuild"), "rebuilt 1 entries from the ledger: equal to the store"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "caseboard", "--database-url", postgres_url, *argv],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and expected in done.stdout, (argv, done.stdout, done.stderr)
