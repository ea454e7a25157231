"""Streamable HTTP at ``/mcp``, in the HTTP API's own application: ``mount_mcp(api, services)``.

Stateless (every POST stands alone: no session to keep, so any worker process can answer any request) and
with JSON responses (one JSON-RPC answer per POST, no event stream). A request without a valid key is
answered 401 ``unauthenticated`` before the MCP machinery sees it, in the HTTP API's error shape; the tools
then act as the key (and ``X-Caseboard-Role``) of the request that calls them.

Every request to ``/mcp`` is answered before FastAPI's middleware stack and router (``CaseboardAPI.first``):
``McpEndpoint.first`` times and counts it under ``/mcp`` and answers an unexpected error 500 in the contract's
shape, as those layers would have.

The SDK's session manager runs inside the application's lifespan: ``mount_mcp`` wraps the lifespan the
application already has, so whatever it does at startup and shutdown still happens, inside the manager's.
DNS-rebinding protection (a check of ``Host`` and ``Origin``) is off: every request must carry an API key,
which a page in a browser cannot forge, exactly as on the HTTP API's other routes (docs/adr/0070).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import Message, Receive, Scope, Send

from caseboard.api.errors import INTERNAL_ERROR, ApiError, not_json, on_http_error
from caseboard.api.fast_path import CaseboardAPI
from caseboard.api.metrics import timed
from caseboard.api.services import Services
from caseboard.coordinator.parse import MAX_BODY_BYTES
from caseboard.mcp_server.identity import authenticate, from_headers
from caseboard.mcp_server.server import build_server

MCP_PATH = "/mcp"
METHODS = ("POST",)
"""The one method a stateless server with JSON responses takes: a POST is a request. Streamable HTTP's GET (a
stream of the server's own messages) and DELETE (the end of a session) are answered 405, which the protocol
allows: there is no session, and the server sends nothing unasked. The SDK would hold a GET of a client of a
protocol before 2026-07-28 open as an event stream that never carries an event, one connection each."""


class McpEndpoint:
    """The ASGI application at ``/mcp``: authenticate, then hand the request to the session manager."""

    def __init__(self, server: Server[Any], svc: Services) -> None:
        self.server = server
        self.svc = svc
        self.manager: StreamableHTTPSessionManager | None = None

    def session_manager(self) -> StreamableHTTPSessionManager:
        """A new manager for one run of the application (a manager runs once). ``streamable_http_app`` makes
        it; the Starlette application it also returns is not used: the route and the lifespan are ours."""
        self.server.streamable_http_app(
            json_response=True,
            stateless_http=True,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=MAX_BODY_BYTES,
        )
        return self.server.session_manager

    async def first(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Every request to ``/mcp``, answered before FastAPI's middleware and router (``CaseboardAPI.first``),
        which cost about a sixth of a tool call and do nothing for it (ADR 0071). So it is timed and counted
        here, under ``/mcp``, with the metrics middleware's own ``timed``."""
        await timed(self.svc.metrics, self.guarded, scope, receive, send, route=MCP_PATH)

    async def guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A method the SDK does not take answered 405, and an unexpected error 500, in the contract's shape, as
        the API's router and error middleware answer them (the error then raised on, for the server's log)."""
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            if scope["method"] in METHODS:
                await self(scope, receive, sending)
            else:
                refused = StarletteHTTPException(405, headers={"Allow": ", ".join(METHODS)})
                await (await on_http_error(Request(scope), refused))(scope, receive, sending)
        except Exception:
            if not started:
                await INTERNAL_ERROR(scope, receive, send)
            raise

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self.manager
        if manager is None:
            body = {"ok": False, "reason": "unavailable", "message": "the MCP endpoint is not running"}
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        headers = Headers(scope=scope)
        credentials = from_headers(headers)
        try:
            await authenticate(self.svc, credentials.token)
        except ApiError as error:
            await JSONResponse(error.body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        content_type = headers.get("content-type")
        if scope["method"] == "POST" and not (content_type or "").lower().startswith("application/json"):
            await not_json(content_type)(scope, receive, send)  # the SDK's own answer is a line of plain text
            return
        await manager.handle_request(scope, receive, send)


def mount_mcp(api: CaseboardAPI, services: Services) -> McpEndpoint:
    """Serve MCP at ``/mcp`` in ``api``, with the same keys, tenants and commit path as its routes."""
    endpoint = McpEndpoint(build_server(services), services)
    api.first[MCP_PATH] = endpoint.first
    previous: Callable[[Any], AbstractAsyncContextManager[Any]] = api.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        manager = endpoint.session_manager()
        async with manager.run():
            endpoint.manager = manager
            try:
                async with previous(app) as state:
                    yield state
            finally:
                endpoint.manager = None

    api.router.lifespan_context = lifespan
    return endpoint
