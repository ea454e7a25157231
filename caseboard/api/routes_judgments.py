"""``GET /workspaces/{id}/judgments``: every recorded model call of a workspace (caseboard.agent.audit)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from caseboard.agent.audit import judgments
from caseboard.api.auth import CallerDep, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.routes_write import WorkspaceId
from caseboard.replay.audit import guard_for

router = APIRouter(tags=["reading"])


class JudgmentEntry(BaseModel):
    """One recorded model call."""

    workspace_version: int
    """The commit that carries the judgment."""
    at: str
    author: dict[str, str]
    invocation_id: str
    component: str
    model: str
    prompt_sha256: str
    prompt_artifact: str
    """The exact messages sent: an artifact of the workspace's tenant (``GET /artifacts/{id}``)."""
    reply_artifact: str | None = None
    """The exact reply received, an artifact of the workspace's tenant; null when the judgment does not name one
    (no reply, or recorded before replies were kept)."""
    input_workspace_version: int
    """The version the model was shown."""
    evidence_revisions: dict[str, int]
    usage: dict[str, int] | None
    latency_ms: int | None
    attempts: int | None
    contributed: list[str]
    """The item types the reply contributed in the same commit (none when refused)."""
    refusal: dict[str, Any] | None
    """Why the reply contributed nothing: its refusal as recorded."""


class JudgmentList(BaseModel):
    workspace_id: str
    after: int
    judgments: list[JudgmentEntry]


@router.get(
    "/workspaces/{workspace_id}/judgments",
    response_model=JudgmentList,
    responses=ERROR_RESPONSES,
    summary="Every recorded model call: model, tokens, latency, the version shown and what came of it",
)
def list_judgments(
    workspace_id: WorkspaceId,
    who: CallerDep,
    svc: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62, description="only judgments committed after this version")] = 0,
) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    entries = judgments(guard_for(svc.app.ledger).commits(key, after=after))  # checked rows (ADR 0144)
    return JSONResponse({"workspace_id": workspace_id, "after": after, "judgments": entries})
