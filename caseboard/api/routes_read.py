"""Reading: the projection (JSON or YAML), the ledger, the timeline and the model-facing view.

Every route first asks ``workspace_key`` for the caller's workspace of that id (docs/adr/0130):
 a workspace of another tenant answers exactly as a missing one.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import yaml
from fastapi import APIRouter, Header, Query
from fastapi.responses import JSONResponse, Response

from caseboard.api.auth import CallerDep, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES, ApiError
from caseboard.api.models import LedgerPage, Projection, Refusal, Timeline, Whoami
from caseboard.api.routes_write import WorkspaceId
from caseboard.api.services import Services
from caseboard.domain.errors import Reason
from caseboard.domain.items import Role
from caseboard.evidence.cited import excerpts_for
from caseboard.projections.freshness import STALE_NOW_HEADER, stale_now_header
from caseboard.projections.model_view import MIN_BUDGET, ModelView, build_view
from caseboard.projections.timeline import timeline as timeline_entries
from caseboard.reducers import tenant_of
from caseboard.replay.audit import guard_for

router = APIRouter(tags=["reading"])
YAML_TYPES = ("application/yaml", "application/x-yaml", "text/yaml")
Version = Annotated[
    int | None, Query(ge=1, description="a past version (default: the head); one past the head is 422 `invalid`")
]


def _show(svc: Services, workspace_id: str, version: int | None, reducer: str | None) -> dict[str, Any]:
    """The head from the cached state (caught up first); other versions or reducers folded from the ledger.
    Either is read through the chain's guard: a commit that does not match its hash is never served (ADRs
    0050, 0144)."""
    workspaces = svc.app.workspaces
    guard = guard_for(svc.app.ledger)
    if version is None and reducer in (None, workspaces.reducer.name):
        return guard.head(workspaces, workspace_id, workspaces.reducer.render)
    chosen = workspaces.chosen(reducer)
    return chosen.render(guard.state(workspaces, workspace_id, version, chosen.name))


@router.get("/whoami", response_model=Whoami, responses=ERROR_RESPONSES, summary="The key's principal, role, tenant")
def whoami(who: CallerDep) -> Whoami:
    return Whoami(
        key_id=who.key.key_id,
        principal=who.key.principal,
        role=who.role,
        roles=list(who.key.roles),
        tenant_id=who.tenant_id,
    )


@router.get(
    "/workspaces/{workspace_id}",
    response_model=Projection,
    summary="The projection, at the head or any version",
    responses={
        200: {
            "content": {"application/yaml": {"schema": {"$ref": "#/components/schemas/Projection"}}},
            "description": "the projection (JSON, or YAML by Accept or ?format=yaml)",
        },
        409: {"model": Refusal, "description": "a commit under it does not match its hash (`tampered`, ADR 0050)"},
        **ERROR_RESPONSES,
    },
)
def projection(
    workspace_id: WorkspaceId,
    who: CallerDep,
    svc: ServicesDep,
    version: Version = None,
    reducer: Annotated[
        str | None, Query(max_length=64, description="a reducer version, e.g. workspace-rules-v1")
    ] = None,
    format: Annotated[Literal["json", "yaml"] | None, Query(description="overrides the Accept header")] = None,
    accept: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Response:
    key = workspace_key(svc, who, workspace_id)
    document = _show(svc, key, version, reducer)
    wants_yaml = format == "yaml" or (format is None and any(t in (accept or "") for t in YAML_TYPES))
    stale_now = stale_now_header(document, datetime.now(UTC))  # evidence expired since (ADR 0060)
    headers = {STALE_NOW_HEADER: stale_now} if stale_now else None
    if wants_yaml:
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)
        return Response(text, media_type="application/yaml", headers=headers)
    return JSONResponse(document, headers=headers)


@router.get(
    "/workspaces/{workspace_id}/ledger",
    response_model=LedgerPage,
    responses=ERROR_RESPONSES,
    summary="The ledger's commits after a version, oldest first",
)
def ledger(
    workspace_id: WorkspaceId,
    who: CallerDep,
    svc: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62, description="only commits after this version")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    commits = guard_for(svc.app.ledger).commits(key, after=after, upto=after + limit)
    head = svc.app.ledger.head(key)
    records = []
    for commit in commits:
        record = commit.model_dump(mode="json", exclude_none=True)
        record["workspace_version"] = record.pop("version")
        records.append(record)
    last = commits[-1].version if commits else after
    page: dict[str, Any] = {"workspace_id": workspace_id, "after": after, "head": head, "commits": records}
    if last < head:
        page["next_after"] = last
    return JSONResponse(page)


@router.get(
    "/workspaces/{workspace_id}/timeline",
    response_model=Timeline,
    responses=ERROR_RESPONSES,
    summary="Observations in source event-time order, with their ingestion times",
)
def timeline(workspace_id: WorkspaceId, who: CallerDep, svc: ServicesDep, version: Version = None) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    document = _show(svc, key, version, None)
    entries = timeline_entries(document)
    return JSONResponse(
        {"workspace_id": workspace_id, "workspace_version": document["workspace_version"], "entries": entries}
    )


@router.get(
    "/workspaces/{workspace_id}/view",
    response_model=ModelView,
    responses=ERROR_RESPONSES,
    summary="The bounded, quoted view a participant's model is given",
)
def view(
    workspace_id: WorkspaceId,
    who: CallerDep,
    svc: ServicesDep,
    budget_chars: Annotated[int, Query(ge=MIN_BUDGET, le=1_000_000, description="the most characters of text")],
    role: Annotated[Role | None, Query(description="whose view (default: the role the key acts in)")] = None,
    version: Version = None,
    as_of: Annotated[
        datetime | None, Query(description="the time of use freshness is judged at, ISO 8601 (default: now)")
    ] = None,
    prior_findings: Annotated[
        bool,
        Query(
            description="add the tenant's knowledge entries for the workspace's service, in a section of their "
            "own that says they are prior findings of other incidents, not evidence for this one (docs/knowledge.md)"
        ),
    ] = False,
) -> JSONResponse:
    key = workspace_key(svc, who, workspace_id)
    reader = role or who.role
    if reader not in who.key.roles and Role.OPERATOR not in who.key.roles:
        raise ApiError(
            Reason.FORBIDDEN,
            f"this key may read the view of {', '.join(who.key.roles)}, not of {reader.value!r}",
            field="role",
        )
    workspaces = svc.app.workspaces
    guard = guard_for(svc.app.ledger)
    state = workspaces.state_at(key, version)
    commits = guard.commits(key, upto=state.version)  # every row under the view, checked (ADR 0144)
    when = datetime.now(UTC) if as_of is None else as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)
    excerpts = excerpts_for(lambda: svc.app.artifacts, tenant_of(state), commits)  # docs/adr/0081
    found = None
    if prior_findings:
        service = state.scope.get("service")
        entries = svc.app.knowledge().store.search(who.tenant_id, service=service, as_of=when) if service else []
        found = [entry.document(when) for entry in entries]
    built = build_view(
        state,
        commits,
        reader,
        budget_chars,
        workspaces.reducer.name,
        as_of=when,
        excerpts=excerpts,
        prior_findings=found,
    )
    return JSONResponse(built.model_dump(mode="json"))
