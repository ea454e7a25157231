"""Writing: open a workspace, submit a contribution. The author is always the caller's key."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import JSONResponse

from caseboard.api.auth import Caller, CallerDep, ServicesDep, workspace_key
from caseboard.api.errors import CONFLICT_RESPONSE, ERROR_RESPONSES, TOO_LARGE_RESPONSE, ApiError, refusal_response
from caseboard.api.models import Accepted, ContributionRequest, OpenWorkspaceRequest
from caseboard.api.services import Services
from caseboard.domain import items as it
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Reason
from caseboard.domain.outcome import Outcome, Refused
from caseboard.domain.workspace_key import scoped

WORKSPACE_ID = it.WORKSPACE_ID_PATTERN
WorkspaceId = Annotated[str, Path(pattern=WORKSPACE_ID, description="the workspace id, e.g. incident-042")]

router = APIRouter(tags=["contributions"])
WRITE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"model": Accepted, "description": "an idempotent retry: the original outcome, nothing appended"},
    **ERROR_RESPONSES,
    **CONFLICT_RESPONSE,
    **TOO_LARGE_RESPONSE,
}


@router.post(
    "/workspaces",
    status_code=201,
    response_model=Accepted,
    responses=WRITE_RESPONSES,
    summary="Open a workspace (an operator's open item; version 1)",
)
def open_workspace(body: OpenWorkspaceRequest, who: CallerDep, svc: ServicesDep) -> JSONResponse:
    if body.scope.tenant_id not in (None, who.tenant_id):
        raise ApiError(
            Reason.FORBIDDEN,
            f"scope.tenant_id must be this key's tenant ({who.tenant_id!r}): the "
            "tenant is set by credentials, not by a body",
            field="scope.tenant_id",
        )
    scope = it.Scope(tenant_id=who.tenant_id, environment=body.scope.environment, service=body.scope.service)
    item = it.Open(
        type="open",
        scope=scope,
        goal=body.goal,
        runtime_limits=body.runtime_limits,
        execution_mode=body.execution_mode,
    )
    contribution = Contribution(
        workspace_id=body.workspace_id,
        author=who.author,
        idempotency_key=body.idempotency_key,
        at=body.at,
        items=(item,),
    )
    return _commit(svc, who, contribution, scoped(who.tenant_id, body.workspace_id))  # its tenant's own id


@router.post(
    "/workspaces/{workspace_id}/contributions",
    status_code=201,
    response_model=Accepted,
    responses=WRITE_RESPONSES,
    summary="Submit a contribution (one or more items, committed atomically)",
)
def submit(workspace_id: WorkspaceId, body: ContributionRequest, who: CallerDep, svc: ServicesDep) -> JSONResponse:
    return submit_contribution(svc, who, workspace_id, body)


def submit_contribution(svc: Services, who: Caller, workspace_id: str, body: ContributionRequest) -> JSONResponse:
    """The submit route's work, shared with its fast path (``caseboard/api/fast_path.py``). An ``ApiError``
    is raised before anything is committed."""
    key = workspace_key(svc, who, workspace_id)
    return _commit(svc, who, contribution_of(who, workspace_id, body), key)


def contribution_of(who: Caller, workspace_id: str, body: ContributionRequest) -> Contribution:
    """The contribution a request makes, once the workspace is known to be visible: ``ApiError`` when the
    body names another workspace or tenant."""
    if body.workspace_id is not None and body.workspace_id != workspace_id:
        raise ApiError(
            Reason.INVALID,
            f"workspace_id: the body names {body.workspace_id!r} but the path names {workspace_id!r}",
            field="workspace_id",
        )
    for index, item in enumerate(body.items):
        if isinstance(item, it.Constraints) and item.scope is not None and item.scope.tenant_id != who.tenant_id:
            raise ApiError(
                Reason.FORBIDDEN,
                f"items[{index}].scope.tenant_id: a workspace stays in its tenant ({who.tenant_id!r})",
                field=f"items[{index}].scope.tenant_id",
            )
    return Contribution(
        workspace_id=workspace_id,
        author=who.author,
        expected_version=body.expected_version,
        idempotency_key=body.idempotency_key,
        at=body.at,
        items=tuple(body.items),
    )


def _commit(svc: Services, who: Caller, contribution: Contribution, key: str) -> JSONResponse:
    """``key``: the workspace's key (``workspace_key``; an opening's is ``<tenant>/<id>``, docs/adr/0130)."""
    coordinator = svc.app.coordinator(trust_timestamps=svc.trust_timestamps)
    return respond(svc, who, coordinator.submit(contribution, key))


def respond(svc: Services, who: Caller, outcome: Outcome) -> JSONResponse:
    """The answer to a submission: 201 (200 for an idempotent replay) or the refusal's status."""
    if isinstance(outcome, Refused):
        return refusal_response(answer_of(svc, who, outcome))
    return JSONResponse(answer_of(svc, who, outcome), status_code=200 if outcome.idempotent_replay else 201)


def answer_of(svc: Services, who: Caller, outcome: Outcome) -> dict[str, Any]:
    """The body of a submission's answer, counted in the metrics: the outcome, and an acceptance's author. The
    submit route and the MCP tool ``submit`` answer with it."""
    body = outcome.as_json()
    svc.metrics.outcome(body)
    if not isinstance(outcome, Refused):
        body["author"] = who.author.model_dump(mode="json")
    return body


async def commit_on_loop(svc: Services, who: Caller, workspace_id: str, request: ContributionRequest) -> Outcome | None:
    """The commit on the loop's own thread (ADR 0035), when the ledger can (PostgreSQL) and the workspace is
    cached and visible to the caller; None hands it to a thread, which runs ``submit_contribution`` from the
    start (nothing was committed). The submit route's fast path and the MCP tool ``submit`` take it."""
    coordinator = svc.app.coordinator(trust_timestamps=svc.trust_timestamps)
    if not coordinator.submits_on_loop:
        return None
    key = svc.app.workspaces.cached_key(who.tenant_id, workspace_id)
    if key is None:
        return None  # the route's ``workspace_key`` answers, from the ledger if need be
    return await coordinator.submit_on_loop(contribution_of(who, workspace_id, request), key)
