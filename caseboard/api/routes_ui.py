"""``/ui/``: the auditor's page (``caseboard report``'s) served live for a key's tenant, with a version slider.

A browser cannot send a bearer header when it follows a link, so the key may also come from a cookie:
``POST /ui/login`` (a form with the token) checks the key and sets ``caseboard_key`` (HttpOnly,
SameSite=Strict, path ``/ui``); ``/ui/logout`` clears it. ``Authorization: Bearer`` works as everywhere else.
Only the workspaces of the key's tenant are shown; another tenant's answers the same 404 as a missing one
(``workspace_key``). Each page is one replay of the stored chain (``caseboard.report``), checked as ``verify``
checks it: a broken chain is shown up to the version before the first bad one, and says so at the top.
"""

from __future__ import annotations

from html import escape
from typing import Annotated, Any
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Cookie, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security.utils import get_authorization_scheme_param

from caseboard.api.auth import Caller, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES, ApiError
from caseboard.api.routes_write import WorkspaceId
from caseboard.api.services import Services
from caseboard.keys import ApiKey
from caseboard.reducers import get_reducer
from caseboard.report import model, page
from caseboard.report.source import ledger_record

router = APIRouter(prefix="/ui", tags=["auditor pages"])
COOKIE = "caseboard_key"
KeyCookie = Annotated[str | None, Cookie(alias=COOKIE, include_in_schema=False)]
HTML_401: dict[int | str, dict[str, Any]] = {
    401: {"description": "the sign-in form again: the key is unknown or revoked", "content": {"text/html": {}}}
}
SEE_OTHER: dict[int | str, dict[str, Any]] = {303: {"description": "on to /ui/"}}
REFUSAL = {"application/json": {"schema": {"$ref": "#/components/schemas/Refusal"}}}
JSON_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"description": answer["description"], "content": REFUSAL} for code, answer in ERROR_RESPONSES.items()
}
"""The API's refusals, declared as JSON (a page route's own answers are HTML)."""

LOGIN = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>caseboard: sign in</title>
<style>body{{font:14px system-ui,sans-serif;margin:3em}}input{{width:32em}}</style></head><body>
<h1>caseboard auditor pages</h1><p>{message}</p>
<form method="post" action="/ui/login"><label>API key <input type="password" name="token" autocomplete="off">
</label> <button type="submit">Sign in</button></form></body></html>"""

INDEX = """<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>caseboard: workspaces</title>
<style>body{{font:14px system-ui,sans-serif;margin:3em}}</style></head><body>
<h1>caseboard auditor pages</h1><p>Signed in as {principal} (tenant {tenant}). <a href="/ui/logout">Sign out</a></p>
<form method="get" action="/ui/open"><label>Workspace <input name="workspace" required></label>
<button type="submit">Show</button></form></body></html>"""


def _key(svc: Services, token: str) -> ApiKey | None:
    key = svc.key_cache.get(token)
    if key is None:
        key = svc.keys.authenticate(token)
        if key is not None:
            svc.key_cache.put(token, key)
    return key


async def _caller(request: Request, svc: Services, cookie: str | None) -> Caller | None:
    """The caller of a page: a bearer header, else the cookie; None when neither names a live key."""
    scheme, token = get_authorization_scheme_param(request.headers.get("Authorization"))
    if scheme.lower() != "bearer" or not token:
        token = cookie or ""
    if not token:
        return None
    key = await anyio.to_thread.run_sync(_key, svc, token)
    if key is None:
        return None
    return Caller(key, key.roles[0])  # reading asks only for the tenant, in whichever role


def _login(message: str, status: int = 401) -> HTMLResponse:
    return HTMLResponse(LOGIN.format(message=escape(message)), status_code=status)


@router.get(
    "/", response_class=HTMLResponse, responses=HTML_401, summary="Sign in, or pick a workspace of the key's tenant"
)
async def index(request: Request, svc: ServicesDep, key: KeyCookie = None) -> Response:
    who = await _caller(request, svc, key)
    if who is None:
        return _login("Sign in with an API key (caseboard keys create).", 200 if key is None else 401)
    return HTMLResponse(INDEX.format(principal=escape(who.key.principal), tenant=escape(who.tenant_id)))


@router.post(
    "/login",
    response_class=HTMLResponse,
    responses={**SEE_OTHER, **HTML_401, 422: JSON_ERRORS[422]},
    summary="Check an API key and keep it in a cookie",
)
async def login(svc: ServicesDep, token: Annotated[str, Form(max_length=512)]) -> Response:
    key = await anyio.to_thread.run_sync(_key, svc, token)
    if key is None:
        return _login("That API key is unknown or revoked.")
    response = RedirectResponse("/ui/", status_code=303)
    response.set_cookie(COOKIE, token, httponly=True, samesite="strict", path="/ui")
    return response


@router.get("/logout", response_class=RedirectResponse, status_code=303, summary="Forget the key's cookie")
async def logout() -> Response:
    response = RedirectResponse("/ui/", status_code=303)
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("/open", include_in_schema=False)
async def open_workspace(workspace: Annotated[str, Query(max_length=128)]) -> Response:
    return RedirectResponse(f"/ui/workspaces/{quote(workspace, safe='')}", status_code=303)


@router.get(
    "/workspaces/{workspace_id}",
    response_class=HTMLResponse,
    responses=JSON_ERRORS,
    summary="The auditor's page of a workspace at any version (a slider moves between versions)",
)
async def workspace_page(
    request: Request,
    workspace_id: WorkspaceId,
    svc: ServicesDep,
    version: Annotated[int | None, Query(ge=1, description="the version shown (default: the last)")] = None,
    reducer: Annotated[str | None, Query(max_length=64, description="a reducer version")] = None,
    key: KeyCookie = None,
) -> Response:
    who = await _caller(request, svc, key)
    if who is None:
        raise ApiError(
            "unauthenticated",
            "an API key is required: Authorization: Bearer <token>, or sign in at /ui/",
            headers={"WWW-Authenticate": "Bearer"},
        )
    ledger_key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)
    chosen = get_reducer(reducer)

    def build() -> str:
        report = model.build_from(ledger_record(svc.app.ledger, ledger_key), chosen, version)
        return page.render(report, live={"url": f"/ui/workspaces/{quote(workspace_id, safe='')}"})

    return HTMLResponse(await anyio.to_thread.run_sync(build))
