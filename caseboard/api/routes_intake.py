"""Alert intake: ``POST /intake/alertmanager`` (Alertmanager's webhook, version 4) and ``POST /intake/generic``
(caseboard's shape for any other alerting system), for keys with the role ``intake`` (docs/pilot.md).

One workspace per alert group: the first notification opens it; each alert notice becomes an observation
citing its line of the stored notification; a re-send adds only what is new. Everything that can be refused is
decided before anything is stored (``intake/translate.py``), so a bad notification leaves nothing behind.
"""

from __future__ import annotations

from typing import Any

import structlog
from fastapi import APIRouter
from fastapi.responses import JSONResponse

from caseboard.api.auth import LOCK_WAIT_S, Caller, CallerDep, ServicesDep
from caseboard.api.errors import ERROR_RESPONSES, TOO_LARGE_RESPONSE, ApiError, refusal_response
from caseboard.api.services import Services
from caseboard.domain.contribution import Contribution
from caseboard.domain.errors import Reason, Refusal
from caseboard.domain.items import Role
from caseboard.domain.outcome import Refused
from caseboard.domain.workspace_key import scoped
from caseboard.intake import translate
from caseboard.intake.alerts import AlertGroup, AlertmanagerPayload, GenericPayload

log = structlog.get_logger("caseboard.intake")
router = APIRouter(tags=["intake"])
ATTEMPTS = 3
"""A notification racing another of the same group re-reads what is recorded this many times at most."""
INTAKE_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "nothing new: every alert notice of this notification was recorded before"},
    201: {"description": "recorded: the workspace, whether this notification opened it, the observations added"},
    **ERROR_RESPONSES,
    **TOO_LARGE_RESPONSE,
}


@router.post(
    "/intake/alertmanager",
    status_code=201,
    responses=INTAKE_RESPONSES,
    summary="Record an Alertmanager notification (webhook version 4) in its alert group's workspace",
)
def alertmanager(body: AlertmanagerPayload, who: CallerDep, svc: ServicesDep) -> JSONResponse:
    return take(svc, who, AlertGroup.of_alertmanager(body), "alerts")


@router.post(
    "/intake/generic",
    status_code=201,
    responses=INTAKE_RESPONSES,
    summary="Record a group of alerts from any alerting system (docs/pilot.md) in its workspace",
)
def generic(body: GenericPayload, who: CallerDep, svc: ServicesDep) -> JSONResponse:
    return take(svc, who, AlertGroup.of_generic(body), "alerts")


def take(svc: Services, who: Caller, group: AlertGroup, where: str) -> JSONResponse:
    if who.role is not Role.INTAKE:
        raise ApiError(Reason.FORBIDDEN, f"a {who.role.value} key may not send alerts: use a key with the role intake")
    config = svc.app.settings.tenants.of(who.tenant_id)
    workspace_id = translate.workspace_id(group)
    try:
        translate.check_tenant(group, who.tenant_id, config, where)
        opening = translate.opening(group, who.tenant_id, config, "commonLabels")
    except Refusal as refusal:
        return refusal_response(refusal.outcome().as_json())
    stored = translate.record(group)
    artifact = svc.app.artifacts.put(
        who.tenant_id,
        [stored],
        stored_by=who.key.principal,
        media_type="application/x-ndjson",
        source_system=group.source,
    )
    coordinator = svc.app.coordinator(trust_timestamps=False)
    opened = False
    key = svc.app.workspaces.resolve(who.tenant_id, workspace_id, LOCK_WAIT_S)
    if key is None:
        key = scoped(who.tenant_id, workspace_id)
        outcome = coordinator.submit(Contribution(workspace_id=workspace_id, author=who.author, items=(opening,)), key)
        if isinstance(outcome, Refused) and outcome.reason is not Reason.WORKSPACE_EXISTS:
            return refusal_response(outcome.as_json())
        opened = not isinstance(outcome, Refused)
    for _ in range(ATTEMPTS):
        state, seen = svc.app.workspaces.head_state(key, lambda state: frozenset(state.observations))
        items = translate.observations(group, stored, artifact.meta.artifact_id, config, seen)
        if not items:
            return _answer(200, workspace_id, opened, 0, state.version, artifact.meta.artifact_id)
        contribution = Contribution(workspace_id=workspace_id, author=who.author, items=tuple(items))
        outcome = coordinator.submit(contribution, key)
        if not isinstance(outcome, Refused):
            log.info("alerts_recorded", workspace_id=workspace_id, observations=len(items), opened=opened)
            return _answer(201, workspace_id, opened, len(items), outcome.workspace_version, artifact.meta.artifact_id)
        if outcome.reason not in (Reason.DUPLICATE_ID, Reason.VERSION_CONFLICT):
            return refusal_response(outcome.as_json())
    raise ApiError(Reason.UNAVAILABLE, "other notifications of this alert group kept landing first: send it again")


def _answer(status: int, workspace_id: str, opened: bool, recorded: int, version: int, artifact: str) -> JSONResponse:
    body = {
        "ok": True,
        "workspace_id": workspace_id,
        "opened": opened,
        "observations_recorded": recorded,
        "workspace_version": version,
        "notification_artifact": artifact,
    }
    return JSONResponse(body, status_code=status)
