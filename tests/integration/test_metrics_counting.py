"""``/metrics`` counts every refusal of a submission once, by its reason, wherever it is made (the fast path's
parse, the route's validation and checks, the coordinator, the MCP tool); a request to ``/mcp`` with a bad key
is one 401; ``/openapi.json`` is counted under its own route, not ``unmatched``."""

from __future__ import annotations

import re
from collections.abc import Iterator

import anyio
import httpx
import pytest

from tests.http_server import RunningServer, observation, open_body, running_server
from tests.mcp_sessions import call, over_http

pytestmark = pytest.mark.postgres


@pytest.fixture
def server(postgres_url: str) -> Iterator[RunningServer]:
    with running_server(postgres_url) as running:
        yield running


def counter(text: str, name: str, **labels: str) -> float:
    wanted = ",".join(f'{k}="{v}"' for k, v in labels.items())
    found = re.search(rf"^{name}\{{{re.escape(wanted)}\}} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def test_every_refusal_is_counted_once_by_its_reason_and_every_request_under_its_route(server: RunningServer) -> None:
    operator = server.as_("op-1", "operator")
    assert operator.post("/workspaces", json=open_body("ws-m")).status_code == 201
    specialist = server.as_("spec-1", "specialist")
    planner = server.as_("planner-1", "planner")
    path = "/workspaces/ws-m/contributions"
    invalid = [
        specialist.post(path, json={"items": [{"type": "rumour"}]}),  # the fast path's parse
        specialist.post(path, json={"items": [observation("obs-1") | {"bogus": 1}]}),
        specialist.post(path, content=b"items=1", headers={"content-type": "text/plain"}),  # the route's validation
        specialist.post(path, json={"items": []}),
        operator.post("/workspaces", json=open_body("ws-other", tenant="tenant-b")),  # the route's own check
        specialist.post(path, json={"expected_version": 9, "items": [observation("obs-2")]}),  # the coordinator
    ]
    reasons = [r.json()["reason"] for r in invalid]
    assert reasons == ["invalid"] * 4 + ["forbidden", "expected_version_ahead"], [r.json() for r in invalid]
    assert planner.post(path, json={"items": [observation("obs-3")]}).json()["reason"] == "forbidden"
    assert specialist.post(path, json={"items": [observation("obs-4")]}).status_code == 201
    stale = specialist.post(path, json={"expected_version": 1, "items": [observation("obs-5")]})
    assert stale.json()["reason"] == "version_conflict"

    async def over_mcp() -> dict[str, object]:
        async with over_http(server.base_url, server.token("spec-2", "specialist")) as client:
            return await call(client, "submit", {"workspace_id": "ws-m", "items": [{"type": "rumour"}]})

    assert anyio.run(over_mcp)["reason"] == "invalid"
    bad_key = httpx.post(
        f"{server.base_url}/mcp",
        headers={"Authorization": "Bearer cbk_unknown", "Accept": "application/json, text/event-stream"},
        json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
    )
    assert bad_key.status_code == 401
    assert httpx.get(f"{server.base_url}/openapi.json").status_code == 200

    text = httpx.get(f"{server.base_url}/metrics").text
    refusals = "caseboard_refusals_total"
    assert counter(text, refusals, reason="invalid") == 5  # four over HTTP, one over MCP
    assert counter(text, refusals, reason="expected_version_ahead") == 1
    assert counter(text, refusals, reason="forbidden") == 2
    assert counter(text, refusals, reason="version_conflict") == 1
    requests = "caseboard_http_requests_total"
    assert counter(text, requests, method="POST", route="/mcp", status="401") == 1
    assert counter(text, requests, method="GET", route="/openapi.json", status="200") == 1
    assert 'route="unmatched"' not in text
