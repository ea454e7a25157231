"""MCP client sessions for tests, with the official SDK's client: over streamable HTTP with a bearer key, or
over stdio against ``caseboard mcp``; and incident-042 as ``submit`` tool arguments."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.conftest import scenario_lines, stale_install
from tests.e2e.test_serve_demo import free_port, wait_until_healthy


@asynccontextmanager
async def over_http(base_url: str, token: str, role: str | None = None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    if role is not None:
        headers["X-Caseboard-Role"] = role
    http = create_mcp_http_client(headers=headers)
    async with http, Client(streamable_http_client(f"{base_url}/mcp", http_client=http)) as client:
        yield client


def stdio_parameters(database_url: str, token: str, role: str | None = None) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env.update(CASEBOARD_DATABASE_URL=database_url, CASEBOARD_API_KEY=token, CASEBOARD_LOG_LEVEL="warning")
    if role is not None:
        env["CASEBOARD_ROLE"] = role
    return StdioServerParameters(command=sys.executable, args=["-m", "caseboard", "mcp", "--trust-timestamps"], env=env)


@asynccontextmanager
async def over_stdio(database_url: str, token: str, role: str | None = None) -> AsyncIterator[Client]:
    async with Client(stdio_parameters(database_url, token, role)) as client:
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The structured answer of a tool call; a refusal is marked as a tool error, an answer is not."""
    result = await client.call_tool(tool, arguments)
    body = result.structured_content
    assert isinstance(body, dict), result
    assert result.is_error is (body["ok"] is False), body
    assert json.loads(result.content[0].text) == body or tool == "read_view"  # type: ignore[union-attr]
    return body


def submit_arguments(line: str) -> tuple[dict[str, str], dict[str, Any]]:
    """(author, the submit tool's arguments) of one contribution line: the author is the key's."""
    contribution = json.loads(line)
    author = contribution.pop("author")
    return author, contribution


def scenario_with_stale_install() -> list[str]:
    """incident-042's lines with the stale install submitted before the last one (it is refused)."""
    lines = scenario_lines()
    return [*lines[:-1], stale_install().strip(), lines[-1]]


@dataclass
class ServeProcess:
    base_url: str
    process: subprocess.Popen[bytes]


@contextmanager
def caseboard_serve(database_url: str, *extra: str) -> Iterator[ServeProcess]:
    """``caseboard serve`` in a process of its own, on a free loopback port, until the block ends."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env.update(CASEBOARD_DATABASE_URL=database_url, CASEBOARD_LOG_LEVEL="warning")
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port), *extra]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            wait_until_healthy(base, process, time.monotonic() + 60)
            yield ServeProcess(base, process)
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
