"""MCP tool-call submissions against the same submissions through the HTTP route, in one run.

One ``caseboard serve`` process (as deployed); the same number of concurrent writers, each on its own workspace
and its own keep-alive connection (``benchmarks.http.KeepAlive``, so the client's CPU stays small on this
two-core machine), commits one observation per request: on one side ``POST /workspaces/{id}/contributions``,
on the other a JSON-RPC ``tools/call`` of ``submit`` posted to ``/mcp`` (stateless streamable HTTP, a JSON
answer). ``mcp_vs_http`` is the ratio of commits per second (goal >= 0.5); ``mcp_tool_call_p99_ms`` the p99 of
a tool call as the writers saw it.
"""

from __future__ import annotations

import json

from benchmarks.context import BenchContext, median
from benchmarks.http import WRITERS, KeepAlive, _observation, _open, _p99, _run_writers, _server_process
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.logs import configure_logging
from caseboard.settings import Settings

PROTOCOL = "2026-07-28"
"""The protocol version the SDK's client negotiates with this server (``mode="auto"``): one self-contained POST
per call, answered in the request's own task."""
MCP_HEADERS = (
    f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL}\r\n"
    "Mcp-Method: tools/call\r\nMcp-Name: submit\r\n"
)
META = {"io.modelcontextprotocol/protocolVersion": PROTOCOL, "io.modelcontextprotocol/clientCapabilities": {}}


def _tool_call(request_id: int, workspace_id: str, obs_id: str) -> bytes:
    arguments = {"workspace_id": workspace_id, "items": [_observation(obs_id)]}
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "submit", "arguments": arguments, "_meta": META},
    }
    return json.dumps(message).encode()


def _round(url: str, commits: int) -> tuple[tuple[float, list[float]], tuple[float, list[float]]]:
    """One round on a fresh schema: ((HTTP rate, latencies), (MCP rate, latencies))."""
    app = build_app(Settings(), database_url=url)
    keys = open_key_store(url)
    try:
        coordinator = app.coordinator()
        for n in range(WRITERS):
            for side in ("http", "mcp"):
                opened = _open(f"{side}-{n}")
                opened["items"][0]["scope"]["tenant_id"] = "bench"
                assert coordinator.submit(parse_contribution(opened))["ok"]
        tokens = [keys.create(f"specialist-{n}", (Role.SPECIALIST,), "bench").token for n in range(WRITERS)]
        with _server_process(url) as port:
            plain = [KeepAlive(port, tokens[n]) for n in range(WRITERS)]
            tools = [KeepAlive(port, tokens[n]) for n in range(WRITERS)]
            for connection in tools:
                connection.headers += MCP_HEADERS

            def over_http(n: int, i: int) -> None:
                body = json.dumps({"items": [_observation(f"obs-{i}")]}).encode()
                status, payload = plain[n].post(f"/workspaces/http-{n}/contributions", body)
                assert status == 201, payload

            def over_mcp(n: int, i: int) -> None:
                status, payload = tools[n].post("/mcp", _tool_call(i + 1, f"mcp-{n}", f"obs-{i}"))
                assert status == 200 and b'"isError":false' in payload.replace(b" ", b""), payload

            over_mcp(0, -1)  # the first call builds the tool's caches: not measured
            http_side = _run_writers(WRITERS, commits, over_http)
            mcp_side = _run_writers(WRITERS, commits, over_mcp)
            for connection in (*plain, *tools):
                connection.close()
        return http_side, mcp_side
    finally:
        keys.close()
        app.close()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", cache=True)  # the section has a process of its own
    commits = 50 if ctx.quick else 500
    ratios, mcp_rates, http_rates, p99s = [], [], [], []
    for round_number in range(ctx.rounds):
        with ctx.fresh_schema() as url:
            (http_rate, _), (mcp_rate, mcp_latencies) = _round(url, commits)
        ratios.append(mcp_rate / http_rate)
        mcp_rates.append(mcp_rate)
        http_rates.append(http_rate)
        p99s.append(_p99(mcp_latencies) * 1000)
        print(
            f"  round {round_number + 1}, {WRITERS} writers: HTTP {http_rate:.0f} commits/s, "
            f"MCP tool calls {mcp_rate:.0f} commits/s (p99 {p99s[-1]:.1f} ms)",
            flush=True,
        )
    return {
        "mcp_submit_per_s": median(mcp_rates),
        "mcp_http_submit_per_s": median(http_rates),
        "mcp_vs_http": median(ratios),
        "mcp_tool_call_p99_ms": median(p99s),
    }
