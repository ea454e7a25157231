"""Operations: health and Prometheus metrics (no credentials, no workspace or tenant names).

``/health`` answers within a second whatever the database does: it runs one probe of the ledger at a time
on a thread, waits for it at most ``HEALTH_TIMEOUT_S``, and answers 503 when the probe failed or did not
answer in time (a late probe is left to finish; the next request starts another only once it has). While
the ledger's connections are being refused after a failed connect, the probe fails at once (ADR 0040).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse

from caseboard.api.auth import ServicesDep
from caseboard.api.errors import RETRY_AFTER_S
from caseboard.api.metrics import CONTENT_TYPE
from caseboard.api.models import Health
from caseboard.api.services import Services
from caseboard.domain.errors import LedgerUnavailable
from caseboard.replay.audit import guard_for

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
        body = {"status": "unavailable", "ledger": problem, "chain": _chain(svc)}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_S})
    return JSONResponse({"status": "ok", "ledger": "ok", "chain": _chain(svc)})


def _chain(svc: Services) -> dict[str, object]:
    """The last re-verification of the chains under the cached workspaces (ADR 0144): a tampered chain is not
    an outage (the other workspaces are served), so it is reported here and the status stays as it is."""
    guard = guard_for(svc.app.ledger)
    tampered, at = guard.tampered(), guard.rechecked_at
    status = "not_checked" if at is None else "tampered" if tampered else "intact"
    when = None if at is None else datetime.fromtimestamp(at, UTC).isoformat()
    return {"status": status, "tampered": tampered, "checked": guard.rechecked, "checked_at": when}


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
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(svc: ServicesDep) -> PlainTextResponse:
    return PlainTextResponse(svc.metrics.render(), media_type=CONTENT_TYPE)
