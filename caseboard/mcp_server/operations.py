"""What each tool does, through the HTTP API's own code: the same look-up of the caller's workspace
(``workspace_key``), the same
route functions, the same commit path. A tool is a thin adapter, so MCP and HTTP cannot disagree.

Each operation runs in a worker thread (the coordinator and the ledger are synchronous) and returns a JSON
body: an answer with ``"ok": true``, or the contract's refusal body with ``"ok": false``. Errors raised on the
way (``ApiError``, ``CaseboardError``) are turned into refusals by the caller
(``caseboard/mcp_server/server.py::answer``).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from caseboard.api import routes_read, routes_write
from caseboard.api.auth import Caller, workspace_key
from caseboard.api.errors import ApiError
from caseboard.api.models import ContributionRequest, OpenWorkspaceRequest
from caseboard.api.services import Services
from caseboard.domain import items as it
from caseboard.domain.errors import Reason
from caseboard.domain.items import Role
from caseboard.domain.principals import same_principal
from caseboard.keys.model import ApiKey
from caseboard.mcp_server import arguments as a
from caseboard.mcp_server.catalog import Catalog
from caseboard.mcp_server.refusals import refusal
from caseboard.replay.audit import ChainBroken, guard_for

CLAIMING_ROLES = (Role.SPECIALIST, Role.VERIFIER)
OPEN_STATUSES = ("awaiting_result", "claimed")


def body_of(response: Response) -> dict[str, Any]:
    """A route's JSON answer, with ``ok`` false when its status says it refused."""
    body: dict[str, Any] = json.loads(bytes(response.body))
    if response.status_code >= 400:
        return {"ok": False, **body}
    return body


def whoami(svc: Services, who: Caller, _: a.NoArguments) -> dict[str, Any]:
    return {"ok": True, **routes_read.whoami(who).model_dump(mode="json")}


def identity(key: ApiKey) -> dict[str, Any]:
    """``whoami`` for a key that holds several roles and names none: its principal, tenant and every role; it
    acts in none until ``X-Caseboard-Role`` names one."""
    roles = [role.value for role in key.roles]
    return {
        "ok": True,
        "key_id": key.key_id,
        "principal": key.principal,
        "role": None,
        "roles": roles,
        "tenant_id": key.tenant_id,
    }


def list_workspaces(svc: Services, who: Caller, args: a.ListWorkspaces, catalog: Catalog) -> dict[str, Any]:
    ids = catalog.of_tenant(who.tenant_id, after=args.after, limit=args.limit + 1)
    page, more = ids[: args.limit], len(ids) > args.limit
    listed = []
    for workspace_id in page:
        try:
            document = body_of(routes_read.projection(workspace_id, who, svc, None, None, "json", None))
        except ChainBroken as error:  # a head that does not match its hash (ADR 0050): listed as such
            listed.append(
                {"workspace_id": workspace_id, "status": error.to_body()["reason"], "workspace_version": None}
            )
            continue
        listed.append(
            {
                "workspace_id": workspace_id,
                "status": document["status"],
                "workspace_version": document["workspace_version"],
                "goal": document["goal"],
                "scope": document["scope"],
            }
        )
    answer: dict[str, Any] = {"ok": True, "tenant_id": who.tenant_id, "workspaces": listed}
    if more:
        answer["next_after"] = page[-1]
    return answer


def read_workspace(svc: Services, who: Caller, args: a.ReadWorkspace) -> dict[str, Any]:
    response = routes_read.projection(args.workspace_id, who, svc, args.version, args.reducer, "json", None)
    body = body_of(response)
    return body if body.get("ok") is False else {"ok": True, "projection": body}


def read_view(svc: Services, who: Caller, args: a.ReadView) -> dict[str, Any]:
    response = routes_read.view(args.workspace_id, who, svc, args.budget_chars, args.role, args.version, args.as_of)
    body = body_of(response)
    return body if body.get("ok") is False else {"ok": True, **body}


def read_timeline(svc: Services, who: Caller, args: a.WorkspaceArgument) -> dict[str, Any]:
    body = body_of(routes_read.timeline(args.workspace_id, who, svc, None))
    return body if body.get("ok") is False else {"ok": True, **body}


def changes_since(svc: Services, who: Caller, args: a.ChangesSince) -> dict[str, Any]:
    key = workspace_key(svc, who, args.workspace_id)
    head = svc.app.ledger.head(key)
    if args.after > head:
        return refusal(
            Reason.INVALID,
            f"after: the workspace is at version {head}; there is nothing after version {args.after}",
            field="after",
            current_version=head,
        )
    commits = guard_for(svc.app.ledger).commits(key, after=args.after, upto=args.after + args.limit)
    last = commits[-1].version if commits else args.after
    answer: dict[str, Any] = {
        "ok": True,
        "workspace_id": args.workspace_id,
        "after": args.after,
        "current_version": head,
        "changes": [commit.summary() for commit in commits],
    }
    if last < head:
        answer["next_after"] = last
    return answer


def list_work(svc: Services, who: Caller, args: a.ListWork) -> dict[str, Any]:
    """The work requests still open (awaiting a result, or claimed), each with what the caller may do."""
    body = body_of(routes_read.projection(args.workspace_id, who, svc, None, None, "json", None))
    if body.get("ok") is False:
        return body
    claims = who.role in CLAIMING_ROLES
    work = []
    for request in body.get("work", []):
        if request["status"] not in OPEN_STATUSES:
            continue
        yours = same_principal(request.get("holder"), who.key.principal)
        free = request["status"] == "awaiting_result" or bool(request.get("lease_lapsed"))
        work.append({**request, "held_by_you": yours, "claimable": claims and free and not yours})
    return {
        "ok": True,
        "workspace_id": args.workspace_id,
        "workspace_version": body["workspace_version"],
        "role": who.role.value,
        "work": work,
    }


def _request_of(args: a.Submit) -> ContributionRequest:
    return ContributionRequest.model_construct(
        workspace_id=None,
        author=None,
        expected_version=args.expected_version,
        idempotency_key=args.idempotency_key,
        at=args.at,
        items=list(args.items),
    )


async def submit_on_loop(svc: Services, who: Caller, args: a.Submit) -> dict[str, Any] | None:
    """The submit route's fast path (ADR 0035: the commit on the event loop, for a cached workspace visible
    to the caller), taken exactly as the HTTP fast path takes it; None when it does not apply, and then
    ``submit`` runs in a thread, from the start (nothing was committed)."""
    if isinstance(args.items[0], it.Open):
        return None
    outcome = await routes_write.commit_on_loop(svc, who, args.workspace_id, _request_of(args))
    return None if outcome is None else routes_write.answer_of(svc, who, outcome)


def _counted(svc: Services, body: dict[str, Any]) -> dict[str, Any]:
    """A refusal of ``submit`` made here, counted once in ``caseboard_refusals_total``."""
    svc.metrics.outcome(body)
    return body


def submit(svc: Services, who: Caller, args: a.Submit) -> dict[str, Any]:
    """One contribution, authored by the key: an ``open`` item takes the HTTP API's open route (the tenant
    must be the key's), anything else its submit route (the workspace must be visible)."""
    first = args.items[0]
    if isinstance(first, it.Open):
        if len(args.items) > 1:
            return _counted(svc, refusal(Reason.INVALID, "items: an 'open' item is submitted alone", field="items[1]"))
        if args.expected_version is not None:
            message = "expected_version: an 'open' item has no version to expect"
            return _counted(svc, refusal(Reason.INVALID, message, field="expected_version"))
        request = OpenWorkspaceRequest(
            workspace_id=args.workspace_id,
            scope=first.scope.model_dump(),
            goal=first.goal,
            runtime_limits=first.runtime_limits,
            execution_mode=first.execution_mode,
            idempotency_key=args.idempotency_key,
            at=args.at,
        )
        try:
            return body_of(routes_write.open_workspace(request, who, svc))
        except ApiError as error:
            if error.body.get("field") == "scope.tenant_id":
                error.body["field"] = "items[0].scope.tenant_id"
            raise
    return body_of(routes_write.submit_contribution(svc, who, args.workspace_id, _request_of(args)))
