"""``/ui/``: the operator's console and the auditor's page (``caseboard report``'s), for a key's tenant, read-only.

``/ui/`` lists the tenant's investigations (``routes_console.listing``, live through ``/ui/api/workspaces/events``);
``/ui/workspaces/{id}`` is the auditor's page with a version slider and what the console adds (work in flight,
incomplete checks, health; reloaded on each commit while it shows the head); ``.../judgments`` every model call
with its exact prompt and reply checked against the artifact store; ``.../diff`` what ``caseboard diff`` says.
Nothing here changes anything: every route is a GET but signing in and out (docs/console.md, ADR 0151).

A browser cannot send a bearer header when it follows a link, so the key may also come from a cookie:
``POST /ui/login`` (a form with the token) checks the key and sets ``caseboard_key`` (HttpOnly,
SameSite=Strict, path ``/ui``); ``/ui/logout`` clears it. ``Authorization: Bearer`` works as everywhere else.
Only the workspaces of the key's tenant are shown; another tenant's answers the same 404 as a missing one
(``workspace_key``). Each page is one replay of the stored chain (``caseboard.report``), checked as ``verify``
checks it: a broken chain is shown up to the version before the first bad one, and says so at the top.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from functools import partial
from html import escape
from typing import Annotated, Any
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Cookie, Form, Header, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from fastapi.security.utils import get_authorization_scheme_param

from caseboard.api.auth import Caller, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES, ApiError
from caseboard.api.event_hub import end_event
from caseboard.api.openapi_doc import COMMIT_EVENTS, LIST_EVENTS
from caseboard.api.routes_console import FRESH_S, Before, Limit, NeedsPerson, Statuses, Text, WorkspaceList, listing
from caseboard.api.routes_events import KEEPALIVE_S, _follow, _key_active
from caseboard.api.routes_write import WorkspaceId
from caseboard.api.services import Services
from caseboard.domain import items as it
from caseboard.domain.errors import LedgerUnavailable
from caseboard.keys import ApiKey
from caseboard.projections.health import ledger_health
from caseboard.replay.history import VersionNotRecorded, check_versions, diff, history, told
from caseboard.report import model, page
from caseboard.report.attached import Holder, exchange
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
<meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,">
<style>body{{font:14px system-ui,sans-serif;margin:3em 1em}}input{{width:32em;max-width:90%}}</style></head><body>
<h1>caseboard console</h1><p>{message}</p>
<form method="post" action="/ui/login"><label>API key
<input type="password" name="token" autocomplete="off" required maxlength="512"></label>
<button type="submit">Sign in</button></form></body></html>"""

STATUSES = tuple(status.value for status in it.Status)
"""The statuses the list's filter offers: every workspace status."""
LIVE_POLL_S = 0.25
"""How often a list stream asks the directory for new commits (one read of the log for all streams: ``FRESH_S``)."""
LIST_STREAM_S = 300.0


def _key(svc: Services, token: str) -> ApiKey | None:
    key = svc.key_cache.get(token)
    if key is None:
        key = svc.keys.authenticate(token)
        if key is not None:
            svc.key_cache.put(token, key)
    return key


def _token(request: Request, cookie: str | None) -> str:
    scheme, token = get_authorization_scheme_param(request.headers.get("Authorization"))
    if scheme.lower() != "bearer" or not token:
        token = cookie or ""
    return token


async def _caller(request: Request, svc: Services, cookie: str | None) -> Caller | None:
    """The caller of a page: a bearer header, else the cookie; None when neither names a live key."""
    token = _token(request, cookie)
    if not token:
        return None
    key = await anyio.to_thread.run_sync(_key, svc, token)
    if key is None:
        return None
    return Caller(key, key.roles[0])  # reading asks only for the tenant, in whichever role


async def _reader(request: Request, svc: Services, cookie: str | None) -> Caller:
    """The caller of a page or of its data, or the contract's 401."""
    who = await _caller(request, svc, cookie)
    if who is None:
        raise ApiError(
            "unauthenticated",
            "an API key is required: Authorization: Bearer <token>, or sign in at /ui/",
            headers={"WWW-Authenticate": "Bearer"},
        )
    return who


def _console(who: Caller, page_name: str, workspace_id: str | None = None) -> dict[str, Any]:
    """What every console page's navigation shows."""
    return {
        "page": page_name,
        "principal": who.key.principal,
        "tenant": who.tenant_id,
        "workspace_id": workspace_id,
        "base": None if workspace_id is None else f"/ui/workspaces/{quote(workspace_id, safe='')}",
    }


def _html(content: str, status: int = 200) -> HTMLResponse:
    """A page, with its policy also as headers: a header is read before the page is, and only a header can
    forbid framing (a page framed by another site could be clicked through unseen); nothing is sniffed, and no
    address of a workspace leaves in a Referer."""
    headers = {
        "Content-Security-Policy": f"{page.content_security_policy()}; frame-ancestors 'none'",
        "X-Frame-Options": "DENY",
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
    }
    return HTMLResponse(content, status_code=status, headers=headers)


def _login(message: str, status: int = 401) -> HTMLResponse:
    return _html(LOGIN.format(message=escape(message)), status)


@router.get(
    "/", response_class=HTMLResponse, responses=HTML_401, summary="Sign in, or the key's tenant's investigations"
)
async def index(
    request: Request,
    svc: ServicesDep,
    status: Statuses = None,
    needs_person: NeedsPerson = False,
    q: Text = None,
    limit: Limit = 50,
    key: KeyCookie = None,
) -> Response:
    who = await _caller(request, svc, key)
    if who is None:
        return _login("Sign in with an API key (caseboard keys create).", 200 if key is None else 401)
    first = await anyio.to_thread.run_sync(listing, svc, who.tenant_id, status, needs_person, q, None, limit)
    query = {"q": q, "status": status[0] if status else None, "needs_person": needs_person}
    data = {"page": first, "events": "/ui/api/workspaces/events", "api": "/ui/api/workspaces"}
    html = page.render_console("list", _console(who, "list"), data, statuses=STATUSES, query=query)
    return _html(html)


@router.post(
    "/login",
    response_class=HTMLResponse,
    responses={**SEE_OTHER, **HTML_401, 422: JSON_ERRORS[422]},
    summary="Check an API key and keep it in a cookie",
)
async def login(svc: ServicesDep, token: Annotated[str, Form(min_length=1, max_length=512)]) -> Response:
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
    who = await _reader(request, svc, key)
    ledger_key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)
    chosen = svc.app.workspaces.chosen(reducer)
    url = f"/ui/workspaces/{quote(workspace_id, safe='')}"

    def build() -> str:
        try:
            report = model.build_from(ledger_record(svc.app.ledger, ledger_key), chosen, version)
        except VersionNotRecorded as error:  # past the head: 422 naming the field, as every read (ADR 0030)
            raise ApiError("invalid", str(error).replace("--at-version", "version"), field="version") from None
        console = {
            **_console(who, "workspace", workspace_id),
            **_in_flight(report.projection, ledger_health(svc.app.ledger, ledger_key, report.version)),
            "judgments_url": f"{url}/judgments",
            "live": {
                "events": f"{url}/events",
                "head": report.recorded,
                "at_head": version is None and report.intact,
            },
        }
        return page.render(report, live={"url": url}, console=console)

    return _html(await anyio.to_thread.run_sync(build))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _in_flight(projection: dict[str, Any], health: dict[str, Any]) -> dict[str, Any]:
    """Work in flight (awaiting a result or claimed: holder, lease, ages as of the version's commit time), the
    other checks not completed (incomplete or failed, with why) with the coverage they do not state, and the health
    figures. Together they are the checks a handoff lists as incomplete (``handoff/document.py``'s ``SETTLED``),
    so the page a handoff links to shows each of them."""
    ages = {r["request_id"]: r for r in health["outstanding_work"]["requests"]}
    listed = {w["request_id"]: w for w in projection.get("incomplete_work", [])}  # the reducer's own, where it has it
    in_flight = []
    incomplete = []
    for work in projection["work"]:
        if work["status"] == "completed":  # the only settled status, as for a handoff (the layers keep api from it)
            continue
        if work["status"] in ("awaiting_result", "claimed"):
            age = ages.get(work["request_id"], {})
            in_flight.append(
                {
                    **work,
                    "state": "lease_lapsed" if work.get("lease_lapsed") else work["status"],
                    "age": _age(age.get("age_s")),
                    "claimed_for": _age(age["claimed_for_s"]) if age.get("claimed_for_s") is not None else None,
                }
            )
            continue
        work = {**work, **listed.get(work["request_id"], {})}
        coverage = work.get("coverage") or {}
        missing = list(work.get("missing") or [])
        if not missing:
            missing = [
                what
                for what, absent in (
                    ("a time range", not coverage.get("time_range")),
                    ("targets", not coverage.get("targets")),
                    ("filters", not coverage.get("filters")),
                    ("completion", coverage.get("completed") is not True),
                )
                if absent
            ]
        incomplete.append({**work, "coverage": coverage, "missing": missing})
    return {"in_flight": in_flight, "incomplete": incomplete, "health": health}


@router.get(
    "/workspaces/{workspace_id}/judgments",
    response_class=HTMLResponse,
    responses=JSON_ERRORS,
    summary="Every model call of a workspace: its exact prompt and reply, checked against the recorded SHA-256",
)
async def judgments_page(
    request: Request, workspace_id: WorkspaceId, svc: ServicesDep, key: KeyCookie = None
) -> Response:
    who = await _reader(request, svc, key)
    ledger_key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)

    def build() -> str:
        record = ledger_record(svc.app.ledger, ledger_key)
        calls = []
        tenant = None
        for commit in record.commits:
            if commit.version == 1 and commit.items and isinstance(commit.items[0], it.Open):
                tenant = commit.items[0].scope.tenant_id
            done = [
                {"item": told(item), "decision": decision}
                for item, decision in zip(commit.items, commit.decisions, strict=True)
                if not isinstance(item, it.Judgment)
            ]
            for item in commit.items:
                if isinstance(item, it.Judgment):
                    author = commit.author.principal
                    calls.append(_call(svc, tenant or who.tenant_id, commit.version, author, item, done))
        context = {"chain": model.chain_summary(record.chain), "calls": calls}
        return page.render_console("judgments", _console(who, "judgments", workspace_id), None, **context)

    return _html(await anyio.to_thread.run_sync(build))


def _call(
    svc: Services, tenant: str, version: int, principal: str, item: it.Judgment, done: list[dict[str, Any]]
) -> dict[str, Any]:
    output = item.output
    shown = exchange(item, Holder(svc.app.artifacts), tenant)
    prompt, reply = shown["prompt"], shown["reply"]
    if prompt["text"] is not None:
        prompt["messages"] = _messages(prompt["text"])
    usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
    return {
        "version": version,
        "principal": principal,
        "invocation_id": item.invocation_id,
        "component": item.component,
        "model": item.model,
        "shown": item.input_workspace_version,
        "revisions": dict(item.evidence_revisions),
        "usage": usage,
        "latency_ms": output.get("latency_ms"),
        "attempts": output.get("attempts"),
        "refusal": output.get("refusal"),
        "prompt": prompt,
        "reply": reply,
        "done": [] if output.get("refusal") else done,
    }


def _messages(text: str) -> list[dict[str, str]] | None:
    """The messages of a prompt (``participant.canonical``), shown one by one; None when it is not such a list."""
    try:
        found = json.loads(text)
    except ValueError:
        return None
    if isinstance(found, list) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in found
    ):
        return found
    return None


@router.get(
    "/workspaces/{workspace_id}/diff",
    response_class=HTMLResponse,
    responses=JSON_ERRORS,
    summary="What changed between two versions, and why each status changed (caseboard diff)",
)
async def diff_page(
    request: Request,
    workspace_id: WorkspaceId,
    svc: ServicesDep,
    start: Annotated[int | None, Query(alias="from", ge=1, description="the earlier version")] = None,
    end: Annotated[int | None, Query(alias="to", ge=1, description="the later version (default: the head)")] = None,
    key: KeyCookie = None,
) -> Response:
    who = await _reader(request, svc, key)
    ledger_key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)
    reducer = svc.app.workspaces.reducer

    def build() -> str:
        record = ledger_record(svc.app.ledger, ledger_key)
        recorded = record.chain.commits if record.chain.problem is None else record.chain.problem.version - 1
        to = recorded if end is None else end
        first = max(1, to - 1) if start is None else start
        if first > to:
            raise ApiError("invalid", f"from {first} is after to {to}: give the earlier version first", field="from")
        walked = history(record.commits, reducer, upto=to, keep={first, to}, source=f"ledger {workspace_id}")
        try:
            check_versions(walked.head, to=to, from_=first)  # ``to`` first: ``from`` defaults to ``to`` - 1
        except VersionNotRecorded as error:
            raise ApiError("invalid", str(error).replace("--", ""), field="to") from None
        result = diff(walked.steps, walked.facets_at, first, to)
        context = {"d": result, "recorded": recorded, "chain": model.chain_summary(record.chain)}
        return page.render_console("diff", _console(who, "diff", workspace_id), None, **context)

    return _html(await anyio.to_thread.run_sync(build))


@router.get(
    "/workspaces/{workspace_id}/events",
    response_class=StreamingResponse,
    responses={**COMMIT_EVENTS, **JSON_ERRORS},
    summary="The workspace's commits as server-sent events, for its page (GET /workspaces/{id}/events, by cookie)",
)
async def workspace_events(
    request: Request,
    workspace_id: WorkspaceId,
    svc: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    key: KeyCookie = None,
) -> StreamingResponse:
    who = await _reader(request, svc, key)
    ledger_key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)
    if last_event_id is not None and last_event_id.isdigit():
        after = max(after, int(last_event_id))
    stream = _follow(request, svc, ledger_key, after, 300.0, _token(request, key))
    return StreamingResponse(stream, media_type="text/event-stream", headers=NO_CACHE)


NO_CACHE = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


@router.get(
    "/api/workspaces",
    response_model=WorkspaceList,
    responses=JSON_ERRORS,
    summary="GET /workspaces for the console's page, by cookie",
)
async def list_for_page(
    request: Request,
    svc: ServicesDep,
    status: Statuses = None,
    needs_person: NeedsPerson = False,
    q: Text = None,
    before: Before = None,
    limit: Limit = 50,
    key: KeyCookie = None,
) -> JSONResponse:
    who = await _reader(request, svc, key)
    found = await anyio.to_thread.run_sync(listing, svc, who.tenant_id, status, needs_person, q, before, limit)
    return JSONResponse(found)


@router.get(
    "/api/workspaces/events",
    response_class=StreamingResponse,
    responses={**LIST_EVENTS, **JSON_ERRORS},
    summary="The console's list as server-sent events: a `list` event (the page, as GET /workspaces) at once and "
    "whenever a workspace of the tenant moves",
)
async def list_events(
    request: Request,
    svc: ServicesDep,
    status: Statuses = None,
    needs_person: NeedsPerson = False,
    q: Text = None,
    before: Before = None,
    limit: Limit = 50,
    key: KeyCookie = None,
) -> StreamingResponse:
    who = await _reader(request, svc, key)
    query = partial(listing, svc, who.tenant_id, status, needs_person, q, before, limit)
    return StreamingResponse(
        _list_stream(request, svc, who.tenant_id, query, _token(request, key)),
        media_type="text/event-stream",
        headers=NO_CACHE,
    )


async def _list_stream(request: Request, svc: Services, tenant_id: str, query: Any, token: str) -> AsyncIterator[str]:
    """The page at once, then again each time the directory sees a commit of the tenant (asked every
    ``LIVE_POLL_S``); ends after ``LIST_STREAM_S`` (the browser reconnects), when the key is revoked, or when
    the ledger cannot be read."""
    deadline = time.monotonic() + LIST_STREAM_S
    revocation_s = max(svc.key_cache.ttl_s, 0.05)
    checked = quiet = time.monotonic()
    sent: int | None = None
    yield "retry: 1000\n\n"
    try:
        while time.monotonic() < deadline:
            if await request.is_disconnected():
                return
            if time.monotonic() - checked >= 0.75 * revocation_s:
                checked = time.monotonic()
                if not await svc.events.keys.still_valid(token, partial(_key_active, svc), 0.25 * revocation_s):
                    yield end_event("revoked", 0)
                    return
            await anyio.to_thread.run_sync(svc.directory.refresh, FRESH_S)
            moved = svc.directory.moved(tenant_id)
            if moved != sent:
                sent = moved
                quiet = time.monotonic()
                found = await anyio.to_thread.run_sync(query)
                yield f"event: list\ndata: {json.dumps(found, separators=(',', ':'))}\n\n"
            elif time.monotonic() - quiet >= KEEPALIVE_S:
                quiet = time.monotonic()
                yield ": keep-alive\n\n"
            await anyio.sleep(LIVE_POLL_S)
    except LedgerUnavailable:
        yield end_event("unavailable", 0)
        return
    yield end_event("timeout", 0)
