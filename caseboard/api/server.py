"""``create_app``: the FastAPI application over a composed ``App`` and a key store. Nothing runs at import."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError

from caseboard.api import (
    routes_artifacts,
    routes_console,
    routes_events,
    routes_health,
    routes_intake,
    routes_judgments,
    routes_knowledge,
    routes_ops,
    routes_read,
    routes_ui,
    routes_write,
)
from caseboard.api.docs_assets import serve_docs_offline
from caseboard.api.errors import ApiError, on_api_error, on_caseboard_error, on_validation_error
from caseboard.api.fast_path import CaseboardAPI
from caseboard.api.metrics import MetricsMiddleware
from caseboard.api.services import KeyCache, Services
from caseboard.app import App
from caseboard.coordinator.parse import MAX_BODY_BYTES
from caseboard.domain.errors import CaseboardError
from caseboard.keys import KeyStore
from caseboard.replay.audit import ChainWatch, guard_for

DESCRIPTION = """\
Event-sourced incident investigation workspaces, over HTTP.

Authenticate with `Authorization: Bearer <token>` (a key from `caseboard keys create`). The key decides the
author of every contribution (its principal, and the role it acts in: `X-Caseboard-Role` when it holds
several) and the tenant whose workspaces it can see; a workspace of another tenant answers 404, exactly as
a missing one. Every error body is `{"ok": false, "reason": <token>, "message": ..., "field": ...}`.
"""


def create_app(
    app: App,
    keys: KeyStore,
    *,
    trust_timestamps: bool = False,
    poll_interval_s: float = 0.2,
    key_cache_s: float = 1.0,
    close_on_shutdown: bool = False,
) -> FastAPI:
    """``close_on_shutdown``: the server owns ``app`` and ``keys`` and closes them when it shuts down, after
    the submissions in progress (a server process built from the environment); otherwise the caller does."""
    services = Services(
        app=app,
        keys=keys,
        trust_timestamps=trust_timestamps,
        poll_interval_s=poll_interval_s,
        key_cache=KeyCache(key_cache_s),
    )

    watch = ChainWatch(guard_for(app.ledger), app.workspaces.cached_heads, app.settings.chain_recheck_s)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        watch.start()  # the chains under the cached heads, verified again on a schedule (ADR 0144)
        yield
        watch.close()
        services.events.close()
        api.close_submitters()
        if close_on_shutdown:
            keys.close()
            app.close()

    api = CaseboardAPI(
        title="caseboard", version="1", description=DESCRIPTION, max_body_size=MAX_BODY_BYTES, lifespan=lifespan
    )
    api.state.services = services
    for module in (routes_write, routes_read, routes_events, routes_ops, routes_artifacts, routes_judgments):
        api.include_router(module.router)
    api.include_router(routes_health.router)  # GET /workspaces/{id}/health (docs/health.md)
    api.include_router(routes_knowledge.router)  # GET /knowledge: prior findings (docs/knowledge.md)
    api.include_router(routes_console.router)  # GET /workspaces: the tenant's list (docs/console.md)
    api.include_router(routes_ui.router)  # /ui/: the auditor's pages (docs/auditor.md) and the console
    api.include_router(routes_intake.router)  # POST /intake/...: alerts open and feed workspaces (docs/pilot.md)
    serve_docs_offline(api)  # /docs and /redoc with their assets served here, never from a CDN
    from caseboard.mcp_server import mount_mcp  # here, not at the top: it imports this package's modules

    mount_mcp(api, services)  # MCP (streamable HTTP) at /mcp, over the same services: caseboard/mcp_server
    api.add_exception_handler(ApiError, on_api_error)
    api.add_exception_handler(RequestValidationError, on_validation_error)
    api.add_exception_handler(CaseboardError, on_caseboard_error)
    services.metrics.watch(app)  # the ledger's coordination health at each scrape (docs/health.md)
    api.add_middleware(MetricsMiddleware, metrics=services.metrics)
    return api
