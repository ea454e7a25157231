"""``GET /workspaces``: the key's tenant's workspaces, newest first, a page at a time, with the console's filters.

The rows come from the process's ``Directory`` (``caseboard/projections/directory.py``): the notification log
folded once, then only what was committed since, so a listing costs one read of the log and a filter over
rows in memory, however many workspaces the tenant has (ADR 0151). Only the key's tenant's workspaces are
listed. The console's list page (``/ui/``) reads the same function, ``listing``, under its cookie.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from caseboard.api.auth import CallerDep, ServicesDep
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.services import Services
from caseboard.domain.items import Status

router = APIRouter(tags=["reading"])

FRESH_S = 0.05
"""A listing reads the log again when the last read is older than this: requests arriving together share one."""


class Budgeted(BaseModel):
    used: int
    budget: int | None
    """None when the workspace sets no ``max_investigation_cycles``."""


class ModelCalls(Budgeted):
    tokens: int
    """The tokens the judgments' usage records."""


class WorkspaceRow(BaseModel):
    """One workspace as the list shows it."""

    workspace_id: str
    status: str
    status_reason: str | None
    handoff: str | None
    owner: str | None
    workspace_version: int
    service: str | None
    environment: str | None
    goal: str
    opened_at: str
    last_commit_at: str
    age_s: float
    """Seconds since the opening commit, by the server's clock."""
    since_last_commit_s: float
    model_calls: ModelCalls
    """Judgments recorded, against ``max_investigation_cycles`` x the calls allowed per cycle."""
    cycles: Budgeted
    needs_person: list[str]
    """Why it waits for a person: its status (``human_review_required``, ``budget_exhausted``,
    ``evidence_incomplete``) and ``late_counterevidence``; empty when nothing waits."""
    late_counterevidence: int | bool | None
    """What the projection's ``late_counterevidence`` holds (a count); null when the reducer's projection has
    no such field."""
    order: int
    """The row's place in the order its tenant's workspaces opened in: ``before`` of the next page."""


class WorkspaceList(BaseModel):
    tenant_id: str
    total: int
    """Rows that match the filters, on every page."""
    workspaces: list[WorkspaceRow]
    next_before: int | None
    """``before`` for the next page; null on the last."""


Statuses = Annotated[
    list[Status] | None,
    Query(max_length=16, description="only these statuses (repeat the parameter for several)"),
]
NeedsPerson = Annotated[
    bool,
    Query(
        description="only workspaces waiting for a person: human_review_required, budget_exhausted, "
        "evidence_incomplete, or late counterevidence"
    ),
]
Text = Annotated[
    str | None,
    Query(
        max_length=200,
        description="only rows whose id, service, goal, status reason or handoff contain this (case ignored)",
    ),
]
Before = Annotated[int | None, Query(ge=0, le=2**62, description="the page after this `order` (`next_before`)")]
Limit = Annotated[int, Query(ge=1, le=200)]


def listing(
    svc: Services,
    tenant_id: str,
    status: Sequence[str] | None,
    needs_person: bool,
    q: str | None,
    before: int | None,
    limit: int,
) -> dict[str, Any]:
    """The page, after reading what the log holds since the last listing."""
    svc.directory.refresh(FRESH_S)
    return svc.directory.listing(
        tenant_id,
        statuses=frozenset(status or ()),
        needs_person=needs_person,
        text=(q.strip() or None) if q else None,
        before=before,
        limit=limit,
    )


@router.get(
    "/workspaces",
    response_model=WorkspaceList,
    responses=ERROR_RESPONSES,
    summary="The key's tenant's workspaces, newest first: status, version, age, budget, and who needs a person",
)
async def list_workspaces(
    who: CallerDep,
    svc: ServicesDep,
    status: Statuses = None,
    needs_person: NeedsPerson = False,
    q: Text = None,
    before: Before = None,
    limit: Limit = 50,
) -> JSONResponse:
    page = await anyio.to_thread.run_sync(listing, svc, who.tenant_id, status, needs_person, q, before, limit)
    return JSONResponse(page)
