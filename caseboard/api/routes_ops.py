"""Operations: health and Prometheus metrics (no workspace or tenant names).

``/health`` takes no credentials. ``/metrics`` sums every tenant's workspaces, so it answers only the deployment's
own monitoring (ADR 0141): a client sending ``Authorization: Bearer <CASEBOARD_METRICS_TOKEN>`` when that is set,
else only a client on the loopback interface; anyone else gets ``unauthenticated`` (401) or ``forbidden`` (403).

``/health`` answers within a second whatever the database does: it runs one probe of the ledger at a time
on a thread, waits for it at most ``HEALTH_TIMEOUT_S``, and answers 503 when the probe failed or did not
answer in time (a late probe is left to finish; the next request starts another only once it has). While
the ledger's connections are being refused after a failed connect, the probe fails at once (ADR 0040).
"""

from __future__ import annotations

import asyncio
import hmac
from ipaddress import ip_address

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from caseboard.api.auth import ServicesDep
from caseboard.api.errors import RETRY_AFTER_S, ApiError
from caseboard.api.metrics import CONTENT_TYPE
from caseboard.api.models import Health
from caseboard.api.services import Services
from caseboard.domain.errors import LedgerUnavailable, Reason

router = APIRouter(tags=["operations"])

HEALTH_TIMEOUT_S = 0.8
PROBE_WORKSPACE = "caseboard-health-probe"


@router.get(
    "/health",
    response_model=Health,
    responses={503: {"model": Health, "description": "the ledger is unreachable, or did not answer within 0.8 s"}},
    summary="Is the ledger reachable (answers within a second)",
)
async def health(request: Request, svc: ServicesDep) -> JSONResponse:
    problem = await _probe(request, svc)
    if problem is not None:
        body = {"status": "unavailable", "ledger": problem}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_S})
    return JSONResponse({"status": "ok", "ledger": "ok"})


async def _probe(request: Request, svc: Services) -> str | None:
    """None when the ledger answered a read within ``HEALTH_TIMEOUT_S``, else what went wrong."""
    loop = asyncio.get_running_loop()
    state = request.app.state
    probe: asyncio.Future[int] | None = getattr(state, "health_probe", None)
    if probe is None or probe.done() or probe.get_loop() is not loop:
        probe = asyncio.ensure_future(loop.run_in_executor(None, svc.app.ledger.head, PROBE_WORKSPACE))
        probe.add_done_callback(lambda done: done.cancelled() or done.exception())  # a late one's error is read
        state.health_probe = probe
    try:
        await asyncio.wait_for(asyncio.shield(probe), HEALTH_TIMEOUT_S)
    except TimeoutError:
        return f"the ledger did not answer within {HEALTH_TIMEOUT_S:g} s"
    except LedgerUnavailable as error:
        return str(error)
    return None


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
