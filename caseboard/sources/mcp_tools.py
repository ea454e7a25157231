"""Any MCP server's read-only tools, with the official SDK as the client (stdio command or streamable HTTP URL).

One operation, ``call_tool``: the tool must be on the configuration's allow-list (``options.tools``) and the
server must annotate it ``readOnlyHint: true``; a tool without that annotation is refused unless named in
``options.allow_without_read_only_hint``. Both are checked against the server's own tool list before any call,
so a refused tool is never called. The stored response is the call's result as JSON (content and structured
content); a finding per content item cites the bytes of its object; a result the server marks ``isError`` is
a failed result with its text. An endpoint is sent the source's credential, as every HTTP source is; a failure
says what the SDK's errors say, with the endpoint's error statuses. A stdio server is started once and kept
between calls (``KeptSession``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from concurrent.futures import Future
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from types import MappingProxyType
from typing import Any, TypeVar

import anyio
import httpx2
from anyio.from_thread import BlockingPortal
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


T = TypeVar("T")
Used = tuple[str | None, Any]
"""What a call did with the server: why the tool was refused (None when it was not), and its result."""


class KeptSession:
    """A stdio server kept running between calls: started at the first, not at each (``caseboard mcp`` takes ~2 s
    to start). Its session lives on an event loop in a daemon thread of its own, and calls from any thread run
    there, side by side. A call that fails or runs past its deadline ends the session, which stops the server (a
    hung one included); the next call starts another. A call on a session kept from an earlier call that fails
    otherwise is made once more on a new one: the server may have gone while idle, and every tool called is
    read-only."""

    def __init__(self, opener: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        self._opener = opener
        """The session's async context manager (``Client``), entered and left on the loop."""
        self._lock = threading.Lock()
        self._loop: tuple[BlockingPortal, threading.Thread] | None = None
        self._session: tuple[Client, anyio.Event, Future[None]] | None = None
        """The client, what stops its session, and the task that holds it (done once the server is stopped)."""

    def call(self, use: Callable[[Client], Awaitable[T]], deadline: Deadline) -> T:
        """``use`` of the session within ``deadline`` (``TimeoutError`` past it, the wait for a session that another
        call is opening included)."""
        for attempt in (1, 2):
            portal, client, new = self._client(deadline)
            try:
                return portal.call(_within, use, client, deadline.left())
            except TimeoutError:
                self._end(client)
                raise
            except Exception:
                self._end(client)
                if new or attempt == 2:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Stops the server and the loop's thread."""
        with self._lock:
            session, loop, self._session, self._loop = self._session, self._loop, None, None
        if session is not None and loop is not None:
            _stop(loop[0], session)
        if loop is not None:
            with contextlib.suppress(Exception):
                loop[0].call(loop[0].stop)

    def _client(self, deadline: Deadline) -> tuple[BlockingPortal, Client, bool]:
        """The loop's portal, the session, and whether it was opened just now; the session is opened by one call
        at a time, within its deadline, and each waits for that at most until its own."""
        if not self._lock.acquire(timeout=deadline.left()):
            raise TimeoutError
        try:
            if self._loop is None or not self._loop[1].is_alive():
                self._loop, self._session = _loop_thread(), None
            portal = self._loop[0]
            if self._session is not None:
                return portal, self._session[0], False
            held, (client, stop) = portal.start_task(_hold, self._opener, deadline.left())
            self._session = (client, stop, held)
            return portal, client, True
        finally:
            self._lock.release()

    def _end(self, client: Client) -> None:
        with self._lock:
            if self._session is None or self._session[0] is not client or self._loop is None:
                return  # another call ended it already
            session, portal, self._session = self._session, self._loop[0], None
        _stop(portal, session)


async def _hold(opener: Callable[[], AbstractAsyncContextManager[Client]], seconds: float, *, task_status: Any) -> None:
    """Opens the session within ``seconds`` and holds it until stopped; leaving it stops the server."""
    with anyio.CancelScope(deadline=anyio.current_time() + seconds) as opening:
        async with opener() as client:
            opening.deadline = math.inf  # opened: it lasts until stopped
            stop = anyio.Event()
            task_status.started((client, stop))
            await stop.wait()
    if opening.cancelled_caught:
        raise TimeoutError("the session was not opened within the deadline")


def _stop(portal: BlockingPortal, session: tuple[Client, anyio.Event, Future[None]]) -> None:
    """Stops a session and waits until its server is stopped."""
    with contextlib.suppress(Exception):
        portal.call(session[1].set)
        session[2].result()


async def _within(use: Callable[[Client], Awaitable[T]], client: Client, seconds: float) -> T:
    with anyio.fail_after(seconds):
        return await use(client)


def _loop_thread() -> tuple[BlockingPortal, threading.Thread]:
    """A portal to an event loop that runs in a daemon thread of its own until the portal is stopped."""
    ready: Future[BlockingPortal] = Future()

    async def serve() -> None:
        async with BlockingPortal() as portal:
            ready.set_result(portal)
            await portal.sleep_until_stopped()

    thread = threading.Thread(target=anyio.run, args=(serve,), name="mcp-session", daemon=True)
    thread.start()
    return ready.result(), thread


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
        self._kept = KeptSession(self._stdio_client) if options.command else None

    def close(self) -> None:
        if self._kept is not None:
            self._kept.close()

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "call_tool", "tool": text.strip()}

    def _stdio_client(self) -> Client:
        """A session with the stdio command; each request is waited for at most the source's timeout."""
        env = {**get_default_environment(), **{k: os.environ[k] for k in self.options.env_from if k in os.environ}}
        server = StdioServerParameters(command=self.options.command[0], args=self.options.command[1:], env=env)
        return Client(server, read_timeout_seconds=self.config.guardrails.timeout_s)

    @asynccontextmanager
    async def _endpoint_client(
        self, deadline: Deadline, headers: dict[str, str] | None, hooks: Any
    ) -> AsyncIterator[Client]:
        """A session with the endpoint through an HTTP client that sends ``headers`` (the credential) and calls
        ``hooks`` on each response: the SDK sends an endpoint's headers through the client it is given."""
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
        statuses: dict[str, None] = {}  # an endpoint's error statuses, which the SDK's errors do not name
        try:
            if self._kept is not None:
                refused, result = self._kept.call(partial(self._use, p.tool, p.arguments), deadline)
            else:
                refused, result = anyio.run(self._over_http, p.tool, p.arguments, deadline, statuses)
        except TimeoutError:
            raise SourceFailed(
                f"the MCP server did not answer within {self.config.guardrails.timeout_s:g} s", timeout=True
            ) from None
        except Exception as error:
            answered = f" (the endpoint answered {', '.join(statuses)})" if statuses else ""
            raise SourceFailed(f"MCP {cause(error)}{answered}") from None
        return self._answer(p.tool, refused, result)

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

    async def _use(self, tool: str, arguments: dict[str, Any], client: Client) -> Used:
        """The tool called when the server lists it read-only (or it is allowed without the hint)."""
        listed = {t.name: t for t in (await client.list_tools()).tools}
        refused = self.refusal(tool, listed.get(tool))
        return refused, None if refused is not None else await client.call_tool(tool, arguments)

    async def _over_http(
        self, tool: str, arguments: dict[str, Any], deadline: Deadline, statuses: dict[str, None]
    ) -> Used:
        credential = self.config.credential
        headers = credential.headers() if credential is not None else None

        async def noted(response: httpx2.Response) -> None:
            if response.is_error:
                statuses[f"HTTP {response.status_code} {response.reason_phrase}"] = None

        with anyio.fail_after(deadline.left()):
            async with self._endpoint_client(deadline, headers, {"response": [noted]}) as client:
                return await self._use(tool, arguments, client)

    def _answer(self, tool: str, refused: str | None, result: Any) -> Answer:
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
