"""From refusal tokens to HTTP status codes, and the one shape every error body has.

Every error is ``{"ok": false, "reason": <token>, "message": ..., "field": ...}``, the same body the command
line prints, with a status code chosen per token (docs/adr/0030-http-api.md):

    version_conflict, expected_version_ahead, fenced, lease_held,       409  the workspace moved or is held:
    duplicate_id, idempotency_mismatch, workspace_closed,                    re-read, wait or reopen
    limit_exceeded, workspace_exists
    forbidden                                                           403  the role may not do this
    invalid, unknown_reference                                          422  fix the body or query
    unknown_workspace                                                   404  also another tenant's workspace
    unauthenticated                                                     401  no key, or a revoked or wrong one
    unavailable                                                         503  the ledger cannot be reached
    not_found, method_not_allowed                                       404, 405  no such route, or method
    internal                                                            500  a bug (logged)

A body over the size limit is ``invalid`` with 413 (docs/adr/0045).
"""

from __future__ import annotations

import json
from typing import Any

import structlog
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from caseboard.api.models import Refusal as RefusalBody
from caseboard.coordinator.parse import refusal_from
from caseboard.domain.errors import (
    CaseboardError,
    LedgerUnavailable,
    Reason,
    Refusal,
    UnknownReducer,
    UnknownWorkspace,
    VersionOutOfRange,
)
from caseboard.domain.workspace_key import bare
from caseboard.replay.audit import ChainBroken

log = structlog.get_logger("caseboard.api")
RETRY_AFTER_S = "1"
"""``Retry-After`` of a 503 ``unavailable``: the server finds out within about a second that the database is
back (ADR 0040)."""

STATUS: dict[str, int] = {
    Reason.VERSION_CONFLICT: 409,
    Reason.EXPECTED_VERSION_AHEAD: 409,
    Reason.FENCED: 409,
    Reason.LEASE_HELD: 409,
    Reason.DUPLICATE_ID: 409,
    Reason.IDEMPOTENCY_MISMATCH: 409,
    Reason.WORKSPACE_CLOSED: 409,
    Reason.LIMIT_EXCEEDED: 409,
    Reason.WORKSPACE_EXISTS: 409,
    Reason.FORBIDDEN: 403,
    Reason.INVALID: 422,
    Reason.UNKNOWN_REFERENCE: 422,
    Reason.UNKNOWN_WORKSPACE: 404,
    Reason.UNAUTHENTICATED: 401,
    Reason.UNAVAILABLE: 503,
    Reason.NOT_FOUND: 404,
    Reason.METHOD_NOT_ALLOWED: 405,
    Reason.INTERNAL: 500,
}

ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"model": RefusalBody, "description": "no API key, or an unknown or revoked one (`unauthenticated`)"},
    403: {"model": RefusalBody, "description": "the key's role may not do this (`forbidden`)"},
    404: {"model": RefusalBody, "description": "no such workspace for this key's tenant (`unknown_workspace`)"},
    422: {
        "model": RefusalBody,
        "description": "the request does not fit the contract (`invalid`, `unknown_reference`)",
    },
    503: {"model": RefusalBody, "description": "the ledger cannot be reached (`unavailable`)"},
}
TOO_LARGE_RESPONSE: dict[int | str, dict[str, Any]] = {
    413: {"model": RefusalBody, "description": "the body is over the size limit (`invalid`, field `$`)"},
}
CONFLICT_RESPONSE: dict[int | str, dict[str, Any]] = {
    409: {
        "model": RefusalBody,
        "description": "the workspace moved, is held, closed or at a limit (see `reason`)",
    },
}


class ApiError(CaseboardError):
    """A refusal decided by the HTTP layer (authentication, role header, tenant), with its status code."""

    def __init__(
        self, reason: Reason | str, message: str, *, field: str | None = None, headers: dict[str, str] | None = None
    ):
        super().__init__(message)
        self.reason = Reason(reason)  # a token outside the one enum is a bug, caught where it is made
        self.body: dict[str, Any] = {"ok": False, "reason": self.reason.value, "message": message}
        if field is not None:
            self.body["field"] = field
        self.status = STATUS[self.reason]
        self.headers = headers


def refusal_response(outcome: dict[str, Any], headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(outcome, status_code=STATUS.get(outcome["reason"], 422), headers=headers)


def unknown_workspace(workspace_id: str) -> ApiError:
    """The one answer for a workspace that does not exist and for one of another tenant."""
    return ApiError(Reason.UNKNOWN_WORKSPACE, str(UnknownWorkspace(workspace_id)), field="workspace_id")


def too_large(length: int | None, limit: int) -> JSONResponse:
    """The answer to a body over ``limit`` bytes (``length`` when the client announced it)."""
    size = "more than" if length is None else f"{length} bytes,"
    body = {
        "ok": False,
        "reason": Reason.INVALID.value,
        "message": f"the body is {size} over the limit of {limit} bytes: large material lives behind evidence_ref",
        "field": "$",
    }
    return JSONResponse(body, status_code=413)


async def on_http_error(request: Request, error: Exception) -> JSONResponse:
    """Starlette's own errors (no such route, a method the route does not take, a body over the limit, a body
    it could not read) in the one error shape."""
    assert isinstance(error, StarletteHTTPException)
    where = f"{request.method} {request.url.path}"
    headers = dict(error.headers) if error.headers else None
    if error.status_code == 404:
        body = {
            "ok": False,
            "reason": Reason.NOT_FOUND.value,
            "message": f"no route for {where}: the routes are at /docs",
        }
    elif error.status_code == 405:
        allowed = allowed_methods(request) or next(
            (value for name, value in (headers or {}).items() if name.lower() == "allow"), ""
        )
        headers = {name: value for name, value in (headers or {}).items() if name.lower() != "allow"}
        headers["Allow"] = allowed
        body = {
            "ok": False,
            "reason": Reason.METHOD_NOT_ALLOWED.value,
            "message": f"{where}: allowed methods: {allowed}",
        }
    elif error.status_code == 413:
        body = {"ok": False, "reason": Reason.INVALID.value, "message": f"{where}: {error.detail}", "field": "$"}
    elif error.status_code < 500:
        body = {"ok": False, "reason": Reason.INVALID.value, "message": f"{where}: {error.detail}", "field": "$"}
        return JSONResponse(body, status_code=422, headers=headers)
    else:
        body = {"ok": False, "reason": Reason.UNAVAILABLE.value, "message": f"{where}: {error.detail}"}
    return JSONResponse(body, status_code=error.status_code, headers=headers)


METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> str:
    """Every method the request's path is served with, for a 405's ``Allow``: Starlette names only those of the
    first route whose path matched, and a path may have several (``GET`` and ``POST /workspaces``). Each
    method is asked of the application's routes (``matches``), as the router would. A request answered before
    the router (``/mcp``, ``mcp_server/http.py``) has no application in its scope: its refusal names its own."""
    routes = getattr(request.scope.get("app"), "routes", ())
    served = [
        method
        for method in METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]
    return ", ".join(served)


INTERNAL_ERROR = JSONResponse(
    {
        "ok": False,
        "reason": Reason.INTERNAL.value,
        "message": "an internal error; it is logged (retry later, or report it)",
    },
    status_code=500,
)
"""A bug's answer: nothing about it leaves the server but this (the log has the traceback)."""


async def on_internal_error(request: Request, error: Exception) -> JSONResponse:
    return INTERNAL_ERROR


SUBMISSION_ROUTES = frozenset({"/workspaces", "/workspaces/{workspace_id}/contributions"})
"""The routes whose refusals ``caseboard_refusals_total`` counts: a contribution's (an opening's included)."""


def counted(request: Request, response: JSONResponse) -> JSONResponse:
    """``response``, a refusal of a submission counted once by its reason where it is answered (the
    coordinator's own refusals are counted by ``routes_write.answer_of``, the fast path's by itself)."""
    scope = getattr(request, "scope", None) or {}  # a handler may be called without a request (in-process)
    route = getattr(scope.get("route"), "path", None)
    if scope.get("method") != "POST" or route not in SUBMISSION_ROUTES:  # the fast path counts its own
        return response
    services = getattr(getattr(scope.get("app"), "state", None), "services", None)
    if services is not None:
        services.metrics.outcome(json.loads(bytes(response.body)))
    return response


async def on_api_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiError)
    return counted(request, JSONResponse(error.body, status_code=error.status, headers=error.headers))


async def on_validation_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, RequestValidationError)
    found = error.errors()
    if isinstance(error.body, bytes) and any(tuple(problem.get("loc", ())) == ("body",) for problem in found):
        # FastAPI hands a body on as bytes exactly when it did not read it as JSON: its content type is neither
        # application/json nor application/*+json, none included (FastAPI's strict_content_type)
        headers = getattr(request, "headers", None)  # a handler may be called without a request (in-process)
        return counted(request, not_json(headers.get("content-type") if headers is not None else None))
    transport = ("body", "query", "path", "header", "cookie")
    problems = [
        {**problem, "loc": tuple(problem.get("loc", ()))[1:]}
        if tuple(problem.get("loc", ()))[:1] and problem["loc"][0] in transport
        else problem
        for problem in found
    ] or [{"loc": ("body",), "msg": "invalid request", "type": "invalid"}]
    return counted(request, JSONResponse(refusal_from(problems).outcome().as_json(), status_code=422))


def not_json(content_type: str | None) -> JSONResponse:
    """The 422 ``invalid`` refusal, at ``$``, of a body that was not read as JSON because of the type it was sent
    under (``curl -d`` sends a form's), naming that type and the header to send: said so, not what its bytes
    are not."""
    content_type = (content_type or "").strip()
    sent_as = f"as {content_type[:100]!r}" if content_type else "with no Content-Type"
    message = f"the body was sent {sent_as}, which is not read as JSON: send it with Content-Type: application/json"
    problems = [{"loc": (), "msg": message, "type": "content_type"}]
    return JSONResponse(refusal_from(problems).outcome().as_json(), status_code=422)


DATABASE_UNAVAILABLE = "the database cannot be reached right now; retry shortly"


def unavailable_message(error: LedgerUnavailable) -> str:
    """What a client is told of an unavailable store: caseboard's own words, or, when a database error is
    under it (its text may name hosts, roles or statements), a fixed sentence, the error being logged (ADR
    0145)."""
    cause: BaseException | None = error.__cause__ or error.__context__
    while cause is not None:
        if not isinstance(cause, CaseboardError):
            log.warning("store_unavailable", error=" ".join(str(error).split())[:500])
            return DATABASE_UNAVAILABLE
        cause = cause.__cause__ or cause.__context__
    return str(error)


async def on_caseboard_error(request: Request, error: Exception) -> JSONResponse:
    return counted(request, _caseboard_error(error))


def _caseboard_error(error: Exception) -> JSONResponse:
    if isinstance(error, Refusal):
        return refusal_response(error.outcome().as_json())
    if isinstance(error, ChainBroken):  # a commit under what a read would serve does not match its hash (ADR 0144)
        return JSONResponse(error.to_body(), status_code=409)
    if isinstance(error, UnknownWorkspace):  # a caller sees the id it named, never the key (docs/adr/0130)
        return JSONResponse(unknown_workspace(bare(error.workspace_id)).body, status_code=404)
    if isinstance(error, VersionOutOfRange):
        named = VersionOutOfRange(bare(error.workspace_id), error.asked, error.head)
        body = {"ok": False, "reason": Reason.INVALID.value, "message": str(named), "field": "version"}
        return JSONResponse(body, status_code=422)
    if isinstance(error, UnknownReducer):
        body = {"ok": False, "reason": Reason.INVALID.value, "message": str(error), "field": "reducer"}
        return JSONResponse(body, status_code=422)
    if isinstance(error, LedgerUnavailable):
        body = {"ok": False, "reason": Reason.UNAVAILABLE.value, "message": unavailable_message(error)}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_S})
    assert isinstance(error, CaseboardError)
    return JSONResponse({"ok": False, "reason": Reason.INVALID.value, "message": str(error)}, status_code=422)
