"""Any MCP server's read-only tools, with the official SDK as the client (stdio command or streamable HTTP URL).

One operation, ``call_tool``: the tool must be on the configuration's allow-list (``options.tools``) and the
server must annotate it ``readOnlyHint: true``; a tool without that annotation is refused unless named in
``options.allow_without_read_only_hint``. Both are checked against the server's own tool list before any call,
so a refused tool is never called. The stored response is the call's result as JSON (content and structured
content); a finding per content item cites the bytes of its object; a result the server marks ``isError`` is
a failed result with its text. An endpoint is sent the source's credential, as every HTTP source is; a failure
says what the SDK's errors say, with the endpoint's error statuses.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters, Tool
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from pydantic import Field, model_validator

from caseboard.sources.base import (
    Answer,
    Deadline,
    Finding,
    Operation,
    Parameters,
    Query,
    SourceFailed,
    SourcePlugin,
    cause,
)
from caseboard.sources.config import SourceConfig
from caseboard.sources.record import json_spans


class Call(Parameters):
    tool: str = Field(min_length=1, max_length=256)
    """The tool's name."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """The tool's arguments."""


class Options(Parameters):
    command: list[str] = Field(default_factory=list)
    """A stdio server's command and arguments; otherwise ``endpoint`` names a streamable HTTP URL."""
    tools: list[str] = Field(min_length=1)
    """The tools that may be called (an allow-list)."""
    env_from: list[str] = Field(default_factory=list)
    """Environment variables passed to a stdio server by name (its database, its key): values never written."""
    allow_without_read_only_hint: list[str] = Field(default_factory=list)
    """Tools of the allow-list that may be called although the server does not annotate them read-only."""

    @model_validator(mode="after")
    def _overrides_are_allowed(self) -> Options:
        stray = sorted(set(self.allow_without_read_only_hint) - set(self.tools))
        if stray:
            raise ValueError(f"allow_without_read_only_hint names tools not in tools: {', '.join(stray)}")
        return self


OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {"call_tool": Operation("call_tool", "one read-only tool of the MCP server", Call, ranged=False)}
)


class McpTools:
    kinds: tuple[str, ...] = ("mcp_query",)
    default_operation = "call_tool"
    operations = OPERATIONS

    def __init__(self, name: str, config: SourceConfig, options: Options) -> None:
        if not options.command and not config.endpoint:
            raise SourceFailed("an MCP source names options.command (stdio) or endpoint (streamable HTTP)")
        if options.command and config.credential is not None:
            raise SourceFailed(
                "an MCP source's credential is sent to its endpoint (streamable HTTP); a stdio server gets its "
                "secrets through options.env_from"
            )
        self.name = name
        self.config = config
        self.options = options
        self.kinds = config.kinds or McpTools.kinds

    def close(self) -> None:
        pass

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "call_tool", "tool": text.strip()}

    @asynccontextmanager
    async def _client(self, deadline: Deadline, headers: dict[str, str] | None, hooks: Any) -> AsyncIterator[Client]:
        """A session with the stdio command, or with the endpoint through an HTTP client that sends ``headers`` (the
        credential) and calls ``hooks`` on each response: the SDK sends an endpoint's headers through the client it
        is given. A stdio server needs no HTTP client, so none is made for it."""
        if self.options.command:
            env = {**get_default_environment(), **{k: os.environ[k] for k in self.options.env_from if k in os.environ}}
            server = StdioServerParameters(command=self.options.command[0], args=self.options.command[1:], env=env)
            async with Client(server, read_timeout_seconds=deadline.left()) as client:
                yield client
            return
        assert self.config.endpoint is not None
        async with (
            httpx2.AsyncClient(headers=headers, timeout=deadline.left(), event_hooks=hooks) as http,
            Client(
                streamable_http_client(self.config.endpoint, http_client=http), read_timeout_seconds=deadline.left()
            ) as client,
        ):
            yield client

    def run(self, query: Query, deadline: Deadline) -> Answer:
        p: Any = query.parameters
        if p.tool not in self.options.tools:
            raise SourceFailed(f"tool {p.tool!r} is not on this source's allow-list ({', '.join(self.options.tools)})")
        return anyio.run(self._call, p.tool, p.arguments, deadline)

    def refusal(self, tool: str, found: Tool | None) -> str | None:
        """Why ``tool`` may not be called, as the server lists it; None when it may."""
        if found is None:
            return f"the server has no tool {tool!r}"
        read_only = found.annotations is not None and found.annotations.read_only_hint is True
        if not read_only and tool not in self.options.allow_without_read_only_hint:
            return (
                f"tool {tool!r} is not annotated readOnlyHint: true; it is called only when "
                "options.allow_without_read_only_hint names it"
            )
        return None

    async def _call(self, tool: str, arguments: dict[str, Any], deadline: Deadline) -> Answer:
        refused: str | None = None
        result = None
        credential = self.config.credential
        headers = credential.headers() if credential is not None else None
        statuses: dict[str, None] = {}  # an endpoint's error statuses, which the SDK's errors do not name

        async def noted(response: httpx2.Response) -> None:
            if response.is_error:
                statuses[f"HTTP {response.status_code} {response.reason_phrase}"] = None

        hooks = {"response": [noted]}
        try:
            with anyio.fail_after(deadline.left()):
                async with self._client(deadline, headers, hooks) as client:
                    listed = {t.name: t for t in (await client.list_tools()).tools}
                    refused = self.refusal(tool, listed.get(tool))
                    if refused is None:
                        result = await client.call_tool(tool, arguments)
        except TimeoutError:
            raise SourceFailed(
                f"the MCP server did not answer within {self.config.guardrails.timeout_s:g} s", timeout=True
            ) from None
        except Exception as error:
            answered = f" (the endpoint answered {', '.join(statuses)})" if statuses else ""
            raise SourceFailed(f"MCP {cause(error)}{answered}") from None
        if refused is not None or result is None:
            raise SourceFailed(refused or f"tool {tool!r} gave no result")
        raw = json.dumps(result.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=True).encode()
        texts = [getattr(c, "text", None) or json.dumps(c.model_dump(mode="json")) for c in result.content]
        if result.is_error:
            raise SourceFailed(f"tool {tool!r} answered an error: {' '.join(texts)[:500]}", raw=raw)
        answer = Answer(raw[: self.config.guardrails.max_bytes], "application/json")
        if len(raw) > self.config.guardrails.max_bytes:
            answer.incomplete.append(f"truncated: response over {self.config.guardrails.max_bytes} bytes")
            answer.unread = True
            return answer
        now = datetime.now(UTC)
        for text, span in zip(texts, json_spans(raw, "content"), strict=False):
            answer.findings.append(Finding(f"{tool}: {' '.join(text.split())[:1000]}", self.name, now, bytes=span))
        answer.answered = (tool,)
        answer.targets = (tool,)
        return answer


PLUGIN = SourcePlugin("mcp", lambda name, config, options: McpTools(name, config, options), Options)
