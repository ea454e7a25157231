"""The MCP server on standard input and output, for agents that launch their tools as processes.

The key and role are the process's (``caseboard mcp`` reads ``CASEBOARD_API_KEY`` and ``CASEBOARD_ROLE`` once
and passes them here); the key is checked before the server starts, so a missing, unknown or revoked key is
the caller's mistake, and it is checked again at every call (within the key cache's second), as over HTTP.
Standard output carries only the protocol; logs go to standard error.

At the end of standard input (a script that pipes its requests in, then closes the pipe), every request read
before it is still answered before the process exits, for up to ``DRAIN_S``: the SDK's loop would cancel them at
once, losing the answer to a submission that may have committed. The process sits between the transport and the
server's loop with two streams of its own, and counts the requests read against the answers written. A line that
is not a JSON-RPC message, which the SDK's loop drops unanswered, is answered there as JSON-RPC 2.0 says: an
error with a null id (parse error, or invalid request).
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)
from pydantic import ValidationError

from caseboard.api.auth import authorize
from caseboard.api.errors import ApiError
from caseboard.api.services import KeyCache, Services
from caseboard.app import App
from caseboard.domain.errors import ConfigurationError
from caseboard.keys import KeyStore
from caseboard.mcp_server.identity import Credentials
from caseboard.mcp_server.server import build_server

API_KEY = "CASEBOARD_API_KEY"
ROLE = "CASEBOARD_ROLE"
DRAIN_S = 30.0
"""How long the requests read before the end of standard input may take to be answered before the process
exits: the database's statement timeout, the longest a call waits on the ledger."""


def check(keys: KeyStore, credentials: Credentials) -> None:
    """``ConfigurationError`` (one line for the command line) unless the key is active and may act in the role."""
    if not credentials.token:
        raise ConfigurationError(f"{API_KEY} is not set: put an API key from 'caseboard keys create' in it")
    key = keys.authenticate(credentials.token)
    if key is None:
        raise ConfigurationError(f"the API key in {API_KEY} is unknown or revoked")
    try:
        authorize(key, credentials.role)
    except ApiError as error:
        message = str(error).replace("X-Caseboard-Role", ROLE)
        raise ConfigurationError(message) from None


def serve_stdio(app: App, keys: KeyStore, credentials: Credentials, *, trust_timestamps: bool = False) -> None:
    check(keys, credentials)
    services = Services(app=app, keys=keys, trust_timestamps=trust_timestamps, key_cache=KeyCache(1.0))
    server = build_server(services, credentials=credentials)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            unanswered = Unanswered()
            to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            server_writes, to_client = anyio.create_memory_object_stream[SessionMessage](0)

            async def inbound() -> None:
                async with to_server:
                    try:
                        async for item in read_stream:
                            if isinstance(item, Exception):
                                await write_stream.send(SessionMessage(unreadable(item)))
                                continue
                            unanswered.read(item)
                            await to_server.send(item)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return  # the loop ended on its own: nothing is left to answer
                    await unanswered.drained(DRAIN_S)

            async def outbound() -> None:
                async with write_stream, to_client:
                    async for item in to_client:
                        await write_stream.send(item)
                        unanswered.written(item)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(inbound)
                async with anyio.create_task_group() as serving:
                    serving.start_soon(outbound)  # ends once the loop has closed its stream and all is written
                    await server.run(server_reads, server_writes, server.create_initialization_options())
                tasks.cancel_scope.cancel()  # standard input may still be open when the loop ends on its own

    anyio.run(run)


def unreadable(error: Exception) -> JSONRPCError:
    """The answer to a line of standard input that is not a JSON-RPC message: its first problem, in one line."""
    problems = error.errors() if isinstance(error, ValidationError) else []
    if any(problem["type"] == "json_invalid" for problem in problems):
        message = f"a line that is not JSON: {problems[0]['msg']}"
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message=message))
    detail = type(error).__name__
    if problems:  # as a request: the first member of the union the loop tried (its name leads each path)
        where = ".".join(str(part) for part in problems[0]["loc"][1:])
        detail = f"{where}: {problems[0]['msg']}" if where else problems[0]["msg"]
    message = f"a line that is not a JSON-RPC 2.0 message ({detail})"
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message))


class Unanswered:
    """The ids of the requests read and not yet answered (a request the client cancels needs no answer)."""

    def __init__(self) -> None:
        self.ids: set[int | str] = set()  # as sent: 1 and "1" are two requests
        self._changed = anyio.Event()

    def read(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCRequest):
            self.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            self._answered((message.params or {}).get("requestId"))

    def written(self, item: SessionMessage) -> None:
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self._answered(item.message.id)

    async def drained(self, timeout_s: float) -> None:
        """Once every request read is answered, or after ``timeout_s``."""
        with anyio.move_on_after(timeout_s):
            while self.ids:
                await self._changed.wait()

    def _answered(self, request_id: Any) -> None:
        if isinstance(request_id, int | str):  # a cancellation may name anything
            self.ids.discard(request_id)
        self._changed.set()
        self._changed = anyio.Event()
