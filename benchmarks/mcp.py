"""MCP tool-call submissions against the same submissions through the HTTP route, in one run.

One ``caseboard serve`` process (as deployed); the same number of concurrent writers, each on its own workspace
and its own keep-alive connection (``benchmarks.http.KeepAlive``, so the client's CPU stays small on this
two-core machine), commits one observation per request: on one side ``POST /workspaces/{id}/contributions``,
on the other a JSON-RPC ``tools/call`` of ``submit`` posted to ``/mcp`` (stateless streamable HTTP, a JSON
answer). ``mcp_vs_http`` is the ratio of commits per second (goal >= 0.5); ``mcp_tool_call_p99_ms`` the p99 of
a tool call as the writers saw it. The two sides alternate which runs first from round to round, so a change
in the machine's other load during a round does not always favour the same side.

``mcp_cpu_vs_http`` is the same comparison in server CPU (user and system seconds of the ``caseboard serve``
process per commit, from /proc: HTTP's over MCP's), and ``mcp_server_cpu_per_call_ms`` the CPU of one tool
call: figures of cost that other processes on a shared machine do not move, where a rate depends on how much
of the two cores the server gets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchmarks.context import BenchContext, median, p99_of
from benchmarks.http import WRITERS, KeepAlive, _observation, _open, _run_writers, _server_process
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


def _server_cpu_s(port: int) -> float | None:
    """CPU seconds (user and system) the ``caseboard serve`` child listening on ``port`` has used so far, from
    /proc; None where there is no /proc or no such child. A figure of cost that the machine's other load does
    not change, unlike a rate."""
    me = Path(f"/proc/{os.getpid()}/task")
    if not me.is_dir():
        return None
    children: set[int] = set()
    for task in me.iterdir():
        try:  # a thread can end between the listing and the read
            children.update(int(pid) for pid in (task / "children").read_text().split())
        except OSError:
            continue
    for pid in children:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if b"serve" not in command or str(port).encode() not in command:
                continue
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return None


@dataclass
class Side:
    """One side of a round: its commits per second, the latencies its writers saw, the server's CPU per
    commit (seconds, None without /proc)."""

    rate: float
    latencies: list[float]
    cpu_per_commit: float | None


def _measured(port: int, commits: int, submit: Callable[[int, int], None]) -> Side:
    before = _server_cpu_s(port)
    rate, latencies = _run_writers(WRITERS, commits, submit)
    after = _server_cpu_s(port)
    cpu = None if before is None or after is None else (after - before) / (WRITERS * commits)
    return Side(rate, latencies, cpu)


def _round(url: str, commits: int, mcp_first: bool) -> tuple[Side, Side]:
    """One round on a fresh schema: (the HTTP side, the MCP side), run in the order ``mcp_first`` says."""
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
            # Each side connects just before it runs: the server closes a keep-alive connection left idle past
            # its timeout, which the other side can outlast on a busy machine.
            plain: list[KeepAlive] = []
            tools: list[KeepAlive] = []

            def over_http(n: int, i: int) -> None:
                body = json.dumps({"items": [_observation(f"obs-{i}")]}).encode()
                status, payload = plain[n].post(f"/workspaces/http-{n}/contributions", body)
                assert status == 201, payload

            def over_mcp(n: int, i: int) -> None:
                status, payload = tools[n].post("/mcp", _tool_call(i + 1, f"mcp-{n}", f"obs-{i}"))
                assert status == 200 and b'"isError":false' in payload.replace(b" ", b""), payload

            def http_side() -> Side:
                plain.extend(KeepAlive(port, tokens[n]) for n in range(WRITERS))
                return _measured(port, commits, over_http)

            def mcp_side() -> Side:
                tools.extend(KeepAlive(port, tokens[n]) for n in range(WRITERS))
                for connection in tools:
                    connection.headers += MCP_HEADERS
                over_mcp(0, -1)  # the first call builds the tool's caches: not measured
                return _measured(port, commits, over_mcp)

            if mcp_first:
                over_mcp_side = mcp_side()
                over_http_side = http_side()
            else:
                over_http_side = http_side()
                over_mcp_side = mcp_side()
            for connection in (*plain, *tools):
                connection.close()
        return over_http_side, over_mcp_side
    finally:
        keys.close()
        app.close()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", cache=True)  # the section has a process of its own
    commits = 50 if ctx.quick else 500
    ratios, mcp_rates, http_rates, p99s, cpu_ratios, mcp_cpus = [], [], [], [], [], []
    for round_number in range(ctx.rounds):
        with ctx.fresh_schema() as url:
            over_http, over_mcp = _round(url, commits, mcp_first=round_number % 2 == 1)
        ratios.append(over_mcp.rate / over_http.rate)
        mcp_rates.append(over_mcp.rate)
        http_rates.append(over_http.rate)
        p99s.append(p99_of(over_mcp.latencies) * 1000)
        cpu = ""
        if over_http.cpu_per_commit and over_mcp.cpu_per_commit:
            cpu_ratios.append(over_http.cpu_per_commit / over_mcp.cpu_per_commit)
            mcp_cpus.append(over_mcp.cpu_per_commit * 1000)
            cpu = (
                f"; server CPU per commit: HTTP {over_http.cpu_per_commit * 1000:.2f} ms, "
                f"MCP {over_mcp.cpu_per_commit * 1000:.2f} ms"
            )
        print(
            f"  round {round_number + 1}, {WRITERS} writers: HTTP {over_http.rate:.0f} commits/s, "
            f"MCP tool calls {over_mcp.rate:.0f} commits/s (p99 {p99s[-1]:.1f} ms){cpu}",
            flush=True,
        )
    figures = {
        "mcp_submit_per_s": median(mcp_rates),
        "mcp_http_submit_per_s": median(http_rates),
        "mcp_vs_http": median(ratios),
        "mcp_tool_call_p99_ms": median(p99s),
    }
    if cpu_ratios:
        figures["mcp_cpu_vs_http"] = median(cpu_ratios)
        figures["mcp_server_cpu_per_call_ms"] = median(mcp_cpus)
    return figures
