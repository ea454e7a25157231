"""``GET /workspaces/{id}/health``: a workspace's coordination health, for the key's tenant; ``GET /tenant/health``:
the key's tenant's workspaces summed (docs/health.md).

The figures are those of ``caseboard health WORKSPACE --format json``: folded from the ledger as of the head
or ``?version=N`` (``caseboard/projections/health.py``), after the chain under them is checked. A workspace of
another tenant answers 404 ``unknown_workspace``, exactly as a missing one.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from caseboard.api.auth import CallerDep, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.models import Refusal
from caseboard.api.routes_read import Version
from caseboard.api.routes_write import WorkspaceId
from caseboard.domain.errors import VersionOutOfRange
from caseboard.projections.health import FIGURES, ledger_health
from caseboard.replay.audit import guard_for

router = APIRouter(tags=["reading"])

HEALTH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["workspace_id", "workspace_version", "invalidations", "stale_evidence_in_use", "outstanding_work"],
    "additionalProperties": True,
}


@router.get(
    "/workspaces/{workspace_id}/health",
    summary="Coordination health: invalidations, stale evidence in use, outstanding work, budget, outcomes",
    responses={
        200: {
            "content": {"application/json": {"schema": HEALTH_SCHEMA}},
            "description": "the figures as of the version, with what each means (`meaning`); a figure the "
            "ledger cannot hold is the string `not instrumented`, never 0",
        },
        409: {"model": Refusal, "description": "a commit under it does not match its hash (`tampered`, ADR 0050)"},
        **ERROR_RESPONSES,
    },
)
def workspace_health(
    workspace_id: WorkspaceId, who: CallerDep, svc: ServicesDep, version: Version = None
) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    head = svc.app.ledger.head(key)
    upto = head if version is None else version
    if not 1 <= upto <= head:
        raise VersionOutOfRange(workspace_id, upto, head)
    guard_for(svc.app.ledger).check_version(key, upto)  # a commit that does not match its hash: 409 (ADR 0050)
    report = ledger_health(svc.app.ledger, key, upto)
    return JSONResponse({**report, "meaning": FIGURES})


TENANT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tenant_id", "workspaces", "invalidations", "outstanding_work", "outcomes"],
    "additionalProperties": True,
}


@router.get(
    "/tenant/health",
    summary="Coordination health of the key's tenant: its workspaces' figures at their heads, summed",
    responses={
        200: {
            "content": {"application/json": {"schema": TENANT_SCHEMA}},
            "description": "the tenant's figures summed over its workspaces, with what each means (`meaning`)",
        },
        **ERROR_RESPONSES,
    },
)
def tenant_health(who: CallerDep, svc: ServicesDep) -> JSONResponse:
    figures = svc.metrics.watch(svc.app).of_tenant(who.tenant_id)  # the folds /metrics keeps (ADR 0106)
    return JSONResponse({"tenant_id": who.tenant_id, **figures, "meaning": FIGURES})


@router.get(
    "/workspaces/{workspace_id}/handoffs",
    summary="The workspace's handoffs to people and every attempt to deliver each (docs/pilot.md)",
    responses={
        200: {"description": "`handoffs`: each with its id, version, trigger, state and attempts, oldest first"},
        **ERROR_RESPONSES,
    },
)
def workspace_handoffs(workspace_id: WorkspaceId, who: CallerDep, svc: ServicesDep) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    return JSONResponse({"workspace_id": workspace_id, "handoffs": svc.app.handoffs(key)})
