"""Every request to ``/mcp`` is answered before FastAPI's middleware and router (``CaseboardAPI.first``): it is
still timed and counted under ``/mcp``, an unexpected error is still a 500 and a method the SDK does not take a
405, in the contract's shape; and no OpenTelemetry span is opened where nothing can record it. On an embedded
ledger in a real server (uvicorn in a thread)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.lowlevel import Server

from caseboard.mcp_server import server as mcp_server
from caseboard.mcp_server.http import MCP_PATH, McpEndpoint
from caseboard.mcp_server.server import build_server
from tests.http_server import RunningServer, running_server

PROTOCOL = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/ledger.db") as running:
        yield running


def tool_call(server: RunningServer, token: str | None, name: str = "whoami") -> httpx.Response:
    params = {"name": name, "arguments": {}, "_meta": META}
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": PROTOCOL}
    headers |= {"Mcp-Method": "tools/call", "Mcp-Name": name}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return httpx.post(f"{server.base_url}{MCP_PATH}", json=message, headers=headers, timeout=30)


def counted(server: RunningServer, method: str, status: int) -> float:
    """``caseboard_http_requests_total`` of ``/mcp`` for one method and status, 0 when absent."""
    metrics = httpx.get(f"{server.base_url}/metrics", timeout=30).text
    labels = f'method="{method}",route="/mcp",status="{status}"'
    found = re.search(rf"^caseboard_http_requests_total\{{{re.escape(labels)}\}} (\S+)$", metrics, re.MULTILINE)
    return 0.0 if found is None else float(found[1])


def endpoint_of(server: RunningServer) -> McpEndpoint:
    first: Any = server.api.first[MCP_PATH]
    endpoint = first.__self__
    assert isinstance(endpoint, McpEndpoint)
    return endpoint


def test_tool_calls_are_answered_and_counted_under_mcp_with_their_status(server: RunningServer) -> None:
    specialist = server.token("spec-first", "specialist")
    for _ in range(3):
        answer = tool_call(server, specialist)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["structuredContent"]["principal"] == "spec-first"
    refused = tool_call(server, None)
    assert refused.status_code == 401 and refused.json()["reason"] == "unauthenticated"
    assert counted(server, "POST", 200) == 3
    assert counted(server, "POST", 401) == 1
    metrics = httpx.get(f"{server.base_url}/metrics", timeout=30).text
    assert 'caseboard_http_request_duration_seconds_count{route="/mcp"} 4' in metrics


def test_an_unexpected_error_is_a_500_in_the_contracts_shape_and_counted(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    specialist = server.token("spec-broken", "specialist")
    manager = endpoint_of(server).manager
    assert manager is not None

    async def broken(*_: Any) -> None:
        raise RuntimeError("a bug in the MCP machinery")

    monkeypatch.setattr(manager, "handle_request", broken)
    answer = tool_call(server, specialist)
    assert answer.status_code == 500
    assert answer.json()["ok"] is False and answer.json()["reason"] == "internal"
    assert counted(server, "POST", 500) == 1
    monkeypatch.undo()
    assert tool_call(server, specialist).status_code == 200  # the server goes on answering


def test_every_method_is_answered_and_counted_and_one_a_stateless_server_does_not_take_is_a_405_in_the_contracts_shape(
    server: RunningServer,
) -> None:
    specialist = server.token("spec-get", "specialist")
    headers = {"Authorization": f"Bearer {specialist}", "Accept": "application/json, text/event-stream"}
    for protocol, count in ((PROTOCOL, 1), ("2025-03-26", 2)):
        # Before: a client of the older protocol was held open as an event stream that never carried an event.
        got = httpx.get(
            f"{server.base_url}{MCP_PATH}", headers={**headers, "MCP-Protocol-Version": protocol}, timeout=5
        )
        assert got.status_code == 405 and got.headers["allow"] == "POST"
        assert got.json()["message"] == "GET /mcp: allowed methods: POST"
        assert counted(server, "GET", 405) == count
    headers["MCP-Protocol-Version"] = PROTOCOL
    for method in ("PUT", "DELETE"):
        refused = httpx.request(method, f"{server.base_url}{MCP_PATH}", headers=headers, timeout=30)
        assert refused.status_code == 405 and refused.headers["allow"] == "POST"
        body = refused.json()
        assert (body["ok"], body["reason"]) == (False, "method_not_allowed")
        assert body["message"] == f"{method} /mcp: allowed methods: POST"
        assert counted(server, method, 405) == 1
    unauthenticated = httpx.post(f"{server.base_url}{MCP_PATH}", timeout=30)
    assert unauthenticated.status_code == 401 and unauthenticated.json()["reason"] == "unauthenticated"


def test_no_opentelemetry_span_is_opened_per_request_unless_an_opentelemetry_sdk_is_installed(
    server: RunningServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK's only default middleware is its OpenTelemetry span (if a release adds another, this fails and the
    rule in ``build_server`` must be looked at again); caseboard drops it when nothing could record a span."""
    (default,) = Server("probe").middleware
    assert type(default).__name__ == "OpenTelemetryMiddleware"
    assert find_spec("opentelemetry.sdk") is None  # caseboard does not depend on one
    assert endpoint_of(server).server.middleware == []
    services = server.api.state.services
    monkeypatch.setattr(mcp_server, "find_spec", lambda name: object() if name == "opentelemetry.sdk" else None)
    (kept,) = build_server(services).middleware
    assert type(kept) is type(default)
