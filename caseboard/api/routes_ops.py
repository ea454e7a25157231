"""Operations: health and Prometheus metrics (no workspace or tenant names).

``/health`` takes no credentials. ``/metrics`` sums every tenant's workspaces, so it answers only the deployment's
own monitoring (ADR 0141): a client sending ``Authorization: Bearer <CASEBOARD_METRICS_TOKEN>`` when that is set,
else only a client on the loopback interface; anyone else gets ``unauthenticated`` (401) or ``forbidden`` (403).

``/health`` answers within a second whatever the database does: it runs one probe of the stores at a time
(the ledger, the key store, the artifact store, the knowledge store: ADR 0145) on a thread, waits for it at
most ``HEALTH_TIMEOUT_S``, and answers 503 when a store failed or the probe did not answer in time (a late
probe is left to finish; the next request starts another only once it has). While the ledger's
connections are being refused after a failed connect, the probe fails at once (ADR 0040).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from ipaddress import ip_address

import structlog
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from caseboard.api.auth import ServicesDep
from caseboard.api.errors import RETRY_AFTER_S, ApiError
from caseboard.api.metrics import CONTENT_TYPE
from caseboard.api.models import Health
from caseboard.api.services import Services
from caseboard.domain.errors import Reason
from caseboard.evidence.model import ArtifactNotFound
from caseboard.replay.audit import guard_for

router = APIRouter(tags=["operations"])
log = structlog.get_logger("caseboard.api")

HEALTH_TIMEOUT_S = 0.8
PROBE_WORKSPACE = "caseboard-health-probe"
PROBE_TOKEN = "cbk_healthprobe0_none"
"""Shaped like a key's token (so the key store is asked), and no key's."""
OK, UNAVAILABLE, NO_ANSWER = "ok", "unavailable", f"no answer within {HEALTH_TIMEOUT_S:g} s"
SLOW_STORES_S = 5.0
"""The artifact and knowledge stores are asked at most this often while they answer (each question connects)."""


@router.get(
    "/health",
    response_model=Health,
    responses={
        503: {"model": Health, "description": "a store is unreachable, or did not answer within 0.8 s"},
    },
    summary="Are the ledger and the other stores reachable (answers within a second)",
)
async def health(request: Request, svc: ServicesDep) -> JSONResponse:
    stores = await _probe(request, svc)
    if any(state != OK for state in stores.values()):
        body = {"status": "unavailable", **stores, "chain": _chain(svc)}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_S})
    return JSONResponse({"status": "ok", **stores, "chain": _chain(svc)})


def _chain(svc: Services) -> dict[str, object]:
    """The last re-verification of the chains under the cached workspaces (ADR 0144): a tampered chain is not
    an outage (the other workspaces are served), so it is reported here and the status stays as it is."""
    guard = guard_for(svc.app.ledger)
    tampered, at = guard.tampered(), guard.rechecked_at
    status = "not_checked" if at is None else "tampered" if tampered else "intact"
    when = None if at is None else datetime.fromtimestamp(at, UTC).isoformat()
    return {"status": status, "tampered": tampered, "checked": guard.rechecked, "checked_at": when}


def _stores(svc: Services, slow: _SlowStores) -> dict[str, str]:
    """One cheap question to each store the server uses (ADR 0145): ``ok`` or ``unavailable``; what a store
    said is logged, never answered (it may carry the database's own words). The ledger and the key store are
    asked at every probe; the artifact and knowledge stores, whose questions cost a connection of their own,
    at most every ``SLOW_STORES_S`` while every store answers (their last answers are reported in between)."""
    app = svc.app
    states = _ask(
        {"ledger": lambda: app.ledger.head(PROBE_WORKSPACE), "keys": lambda: svc.keys.authenticate(PROBE_TOKEN)}
    )
    now = time.monotonic()
    if now - slow.asked_at >= SLOW_STORES_S or any(state != OK for state in (*states.values(), *slow.states.values())):
        slow.asked_at = now
        slow.states = _ask(
            {
                "artifacts": lambda: _absent_artifact(svc),
                "knowledge": lambda: app.knowledge().store.search(PROBE_WORKSPACE, service=PROBE_WORKSPACE),
            }
        )
    return {**states, **slow.states}


def _ask(questions: dict[str, Callable[[], object]]) -> dict[str, str]:
    states = {}
    for name, question in questions.items():
        try:
            question()
        except Exception as error:  # any failure of a store is its unavailability (logged)
            log.warning("health_store_unavailable", store=name, error=" ".join(str(error).split())[:500])
            states[name] = UNAVAILABLE
        else:
            states[name] = OK
    return states


@dataclass
class _SlowStores:
    """When a server last asked its artifact and knowledge stores, and what they answered."""

    asked_at: float = float("-inf")
    states: dict[str, str] = field(default_factory=dict)


def _absent_artifact(svc: Services) -> None:
    try:
        svc.app.artifacts.meta(PROBE_WORKSPACE, "sha256:" + "0" * 64)
    except ArtifactNotFound:
        return


async def _probe(request: Request, svc: Services) -> dict[str, str]:
    """Each store's state, from one probe at a time on a thread, waited for at most ``HEALTH_TIMEOUT_S``."""
    loop = asyncio.get_running_loop()
    state = request.app.state
    probe: asyncio.Future[dict[str, str]] | None = getattr(state, "health_probe", None)
    if probe is None or probe.done() or probe.get_loop() is not loop:
        slow = getattr(state, "slow_stores", None)
        if slow is None:
            slow = state.slow_stores = _SlowStores()
        probe = asyncio.ensure_future(loop.run_in_executor(None, _stores, svc, slow))
        probe.add_done_callback(lambda done: done.cancelled() or done.exception())  # a late one's error is read
        state.health_probe = probe
    try:
        return await asyncio.wait_for(asyncio.shield(probe), HEALTH_TIMEOUT_S)
    except TimeoutError:
        return dict.fromkeys(("ledger", "keys", "artifacts", "knowledge"), NO_ANSWER)


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics (text format 0.0.4)",
    responses={
        200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
        401: {"description": "`CASEBOARD_METRICS_TOKEN` is set and the request does not carry it"},
        403: {"description": "no `CASEBOARD_METRICS_TOKEN` is set and the client is not on the loopback interface"},
    },
)
def metrics(request: Request, svc: ServicesDep) -> PlainTextResponse:
    may_read_metrics(request, svc.app.settings.metrics_token)
    return PlainTextResponse(svc.metrics.render(), media_type=CONTENT_TYPE)


def may_read_metrics(request: Request, token: str | None) -> None:
    """Refuse a reader of ``/metrics`` who is not the deployment's monitoring (module docstring)."""
    if token is not None:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
            raise ApiError(
                Reason.UNAUTHENTICATED,
                "GET /metrics needs Authorization: Bearer <the server's CASEBOARD_METRICS_TOKEN>",
                headers={"WWW-Authenticate": "Bearer"},
            )
        return
    host = request.client.host if request.client is not None else ""
    try:
        loopback = ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ApiError(
            Reason.FORBIDDEN,
            "GET /metrics answers only clients on the server's loopback interface: set CASEBOARD_METRICS_TOKEN "
            "to let a scraper elsewhere read it with that bearer token (docs/operator-guide.md)",
        )
