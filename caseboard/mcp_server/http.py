"""Streamable HTTP at ``/mcp``, in the HTTP API's own application: ``mount_mcp(api, services)``.

Stateless (every POST stands alone: no session to keep, so any worker process can answer any request) and
with JSON responses (one JSON-RPC answer per POST, no event stream). A request without a valid key is
answered 401 ``unauthenticated`` before the MCP machinery sees it, in the HTTP API's error shape; the tools
then act as the key (and ``X-Caseboard-Role``) of the request that calls them.

The SDK's session manager runs inside the application's lifespan: ``mount_mcp`` wraps the lifespan the
application already has, so whatever it does at startup and shutdown still happens, inside the manager's.
DNS-rebinding protection (a check of ``Host`` and ``Origin``) is off: every request must carry an API key,
which a page in a browser cannot forge, exactly as on the HTTP API's other routes (docs/adr/0070).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from fastapi import FastAPI
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from caseboard.api.errors import ApiError
from caseboard.api.services import Services
from caseboard.mcp_server.identity import authenticate, from_headers
from caseboard.mcp_server.server import build_server

MCP_PATH = "/mcp"
MAX_BODY_BYTES = 2 * 1024 * 1024


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

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self.manager
        if manager is None:
            body = {"ok": False, "reason": "unavailable", "message": "the MCP endpoint is not running"}
            await JSONResponse(body, status_code=503)(scope, receive, send)
            return
        credentials = from_headers(Headers(scope=scope))
        try:
            await authenticate(self.svc, credentials.token)
        except ApiError as error:
            await JSONResponse(error.body, status_code=401, headers={"WWW-Authenticate": "Bearer"})(
                scope, receive, send
            )
            return
        await manager.handle_request(scope, receive, send)


def mount_mcp(api: FastAPI, services: Services) -> McpEndpoint:
    """Serve MCP at ``/mcp`` in ``api``, with the same keys, tenants and commit path as its routes."""
    endpoint = McpEndpoint(build_server(services), services)
    # First in the routing table: every tool call is then matched at once, not after each of the API's routes
    # (whose matching costs more per call than a whole route of the API's own, ADR 0071).
    api.router.routes.insert(0, Route(MCP_PATH, endpoint, methods=["GET", "POST", "DELETE"], include_in_schema=False))
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
