"""``GET /workspaces/{id}/judgments``: every recorded model call of a workspace (caseboard.agent.audit)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from caseboard.agent.audit import judgments
from caseboard.api.auth import CallerDep, ServicesDep, visible
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.routes_write import WorkspaceId

router = APIRouter(tags=["reading"])


@router.get(
    "/workspaces/{workspace_id}/judgments",
    responses=ERROR_RESPONSES,
    summary="Every recorded model call: model, tokens, latency, the version shown and what came of it",
)
def list_judgments(
    workspace_id: WorkspaceId,
    who: CallerDep,
    svc: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62, description="only judgments committed after this version")] = 0,
) -> JSONResponse:
    visible(svc, who, workspace_id)
    entries = judgments(svc.app.ledger.iter_commits(workspace_id, after=after))
    return JSONResponse({"workspace_id": workspace_id, "after": after, "judgments": entries})
