"""Operations: health and Prometheus metrics (no credentials, no workspace or tenant names)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, PlainTextResponse

from caseboard.api.auth import ServicesDep
from caseboard.api.metrics import CONTENT_TYPE
from caseboard.api.models import Health
from caseboard.domain.errors import LedgerUnavailable

router = APIRouter(tags=["operations"])


@router.get("/health", response_model=Health, responses={503: {"model": Health}}, summary="Is the ledger reachable")
def health(svc: ServicesDep) -> JSONResponse:
    try:
        svc.app.ledger.head("caseboard-health-probe")
    except LedgerUnavailable as error:
        return JSONResponse({"status": "unavailable", "ledger": str(error)}, status_code=503)
    return JSONResponse({"status": "ok", "ledger": "ok"})


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    summary="Prometheus metrics (text format 0.0.4)",
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
)
def metrics(svc: ServicesDep) -> PlainTextResponse:
    return PlainTextResponse(svc.metrics.render(), media_type=CONTENT_TYPE)
