"""The write routes' bodies checked before anything parses them, and the submit route's common case answered
without FastAPI's request machinery (ADRs 0034, 0045).

Every ``POST /workspaces`` and ``POST /workspaces/{id}/contributions`` with a JSON body meets ``_write``
first, on both paths: a body over the size limit is refused from its ``Content-Length`` (or as soon as a
chunked one crosses it) with 413, and the body is parsed once by ``caseboard.coordinator.parse.parse_json``
(a cheap bound on its number of values, then strict JSON validation in one pass); a body that is not valid
is refused with 422 ``invalid`` there. No body costs the event loop more than a few milliseconds of CPU, and
none reaches FastAPI's own parser unless it is valid.

Submitting contributions is what the API does most. Through FastAPI, each submission crosses about a dozen
ASGI layers, route matching and dependency solving before the route runs: about two thirds of the server's
CPU per request. ``CaseboardAPI`` takes the common case (a key already in the cache, a visible workspace)
straight to the route's own code: ``authorize`` and ``submit_contribution``, run on the loop (ADR 0035) or
in a thread pool of its own.

Everything else is handed on, with the body replayed, to the FastAPI route, which answers it exactly as the
OpenAPI document says: no key or an uncached one, a role the key does not hold, a workspace that is not
visible, a body that names another workspace or tenant. Nothing is committed before a request is handed on,
so nothing is committed twice.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import parse_qsl

from fastapi import FastAPI
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from caseboard.api.auth import ROLE_HEADER, authorize
from caseboard.api.errors import (
    INTERNAL_ERROR,
    ApiError,
    on_caseboard_error,
    on_http_error,
    on_internal_error,
    refusal_response,
    too_large,
)
from caseboard.api.models import ContributionRequest, OpenWorkspaceRequest
from caseboard.api.openapi_doc import complete
from caseboard.api.routes_write import WORKSPACE_ID, commit_on_loop, respond, submit_contribution
from caseboard.api.services import Services
from caseboard.coordinator.parse import MAX_BODY_BYTES, parse_json
from caseboard.domain.errors import CaseboardError, Reason, Refusal
from caseboard.domain.text import QUERY, RAW, control_in
from caseboard.reducers import REDUCERS

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

SUBMIT_PATH = re.compile(r"/workspaces/([^/]+)/contributions")
SUBMIT_ROUTE = "/workspaces/{workspace_id}/contributions"
OPEN_PATH = "/workspaces"
INTAKE_PATHS = ("/intake/",)
WORKSPACE = re.compile(WORKSPACE_ID)
ROLE = ROLE_HEADER.lower().encode()


class CaseboardAPI(FastAPI):
    """FastAPI, with the bodies of the write routes checked first and the common case of the submit route
    answered directly (module docstring). Its body limit is FastAPI's own ``max_body_size``."""

    fast_submit = True
    """False hands every valid submission to the FastAPI route (tests compare the two)."""
    first: dict[str, Callable[[Scope, Receive, Send], Awaitable[None]]]
    """Path -> the ASGI application that answers its requests before FastAPI's middleware and router: ``/mcp``
    (``caseboard.mcp_server.http``), which authenticates, times and counts each request itself."""
    submit_threads = 32
    _executor: ThreadPoolExecutor | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first = {}
        self.add_exception_handler(StarletteHTTPException, on_http_error)  # 404, 405, 413: the contract's shape
        self.add_exception_handler(Exception, on_internal_error)  # a bug: 500, in the same shape

    def openapi(self) -> dict[str, Any]:
        """FastAPI's document, completed once by ``openapi_doc.complete`` (docs/adr/0173)."""
        if self.openapi_schema is None:
            self.openapi_schema = complete(super().openapi(), REDUCERS)
        return self.openapi_schema

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and (refused := _control_characters(scope)) is not None:
            await refused(scope, receive, send)
            return
        if scope["type"] == "http" and (first := self.first.get(scope["path"])) is not None:
            await first(scope, receive, send)
            return
        if scope["type"] == "http" and scope["method"] == "POST":
            match = SUBMIT_PATH.fullmatch(scope["path"])
            if match is not None or scope["path"] == OPEN_PATH:
                handed_on = await self._write(None if match is None else match[1], scope, receive, send)
                if handed_on is None:
                    return
                receive = handed_on
            elif scope["path"].startswith(INTAKE_PATHS):
                handed_on = await self._bounded(scope, receive, send)
                if handed_on is None:
                    return
                receive = handed_on
        await super().__call__(scope, receive, send)

    async def _bounded(self, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """A body of the intake routes over the size limit answered with 413 in the contract's shape (as a write
        route's), before the route reads it; None when answered, else the ``receive`` to hand it on with."""
        started = time.perf_counter()
        limit = self.max_body_size if self.max_body_size is not None else MAX_BODY_BYTES
        length = _first_headers(scope).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._answer(too_large(int(length), limit), scope, receive, send, scope["path"], started)
            return None
        body, complete = await _read_body(receive, limit)
        if not complete and len(body) > limit:
            await self._answer(too_large(None, limit), scope, receive, send, scope["path"], started)
            return None
        return _replaying(body, receive, more_body=not complete)

    async def _write(self, workspace_id: str | None, scope: Scope, receive: Receive, send: Send) -> Receive | None:
        """The body of a write route checked before anything parses it in full (ADR 0045): over the size limit
        (413), or not valid by ``parse_json`` (422), it is answered here; a valid submission may then take the
        fast path. Returns None when answered, else the ``receive`` to hand the request on with."""
        started = time.perf_counter()
        route = OPEN_PATH if workspace_id is None else SUBMIT_ROUTE
        headers = _first_headers(scope)
        limit = self.max_body_size if self.max_body_size is not None else MAX_BODY_BYTES
        length = headers.get(b"content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            await self._answer(too_large(int(length), limit), scope, receive, send, route, started)
            return None
        if not read_as_json(headers.get(b"content-type", b"")):
            return receive  # not read as JSON by the route either: it refuses the body, naming its type
        body, complete = await _read_body(receive, limit)
        if not complete:
            if len(body) <= limit:  # the client went away: nothing to answer
                return _replaying(body, receive, more_body=True)
            await self._answer(too_large(None, limit), scope, receive, send, route, started)
            return None
        try:
            if workspace_id is None:
                parse_json(OpenWorkspaceRequest, body)
                return _replaying(body, receive)
            request = parse_json(ContributionRequest, body)
        except Refusal as refusal:
            await self._answer(refusal_response(refusal.outcome().as_json()), scope, receive, send, route, started)
            return None
        if self.fast_submit and await self._submit(workspace_id, request, headers, scope, receive, send, started):
            return None
        return _replaying(body, receive)

    async def _answer(
        self, response: Response, scope: Scope, receive: Receive, send: Send, route: str, started: float
    ) -> None:
        await response(scope, receive, send)
        svc: Services = self.state.services
        svc.metrics.outcome(json.loads(bytes(response.body)))  # a refusal of the submission, counted once
        svc.metrics.request("POST", route, response.status_code, time.perf_counter() - started)

    async def _submit(
        self,
        workspace_id: str,
        request: ContributionRequest,
        headers: dict[bytes, bytes],
        scope: Scope,
        receive: Receive,
        send: Send,
        started: float,
    ) -> bool:
        """Answer a valid submission on the fast path and return True, or return False to hand it on."""
        svc: Services = self.state.services
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() != "bearer" or not token or not WORKSPACE.fullmatch(workspace_id):
            return False
        key = svc.key_cache.get(token)
        if key is None:
            return False
        role = headers.get(ROLE)
        try:
            who = authorize(key, None if role is None else role.decode("latin-1"))
        except ApiError:
            return False
        on_loop = False
        try:
            outcome = await commit_on_loop(svc, who, workspace_id, request)  # ADR 0035; None: not on the loop
            on_loop = outcome is not None
            if outcome is not None:
                response = respond(svc, who, outcome)
            else:
                response = await asyncio.get_running_loop().run_in_executor(
                    self._submitters(), submit_contribution, svc, who, workspace_id, request
                )
        except ApiError:  # raised before anything was committed: the route answers it
            return False
        except CaseboardError as error:
            response = await on_caseboard_error(Request(scope), error)
            svc.metrics.outcome(json.loads(bytes(response.body)))  # a refusal of the submission, counted once
        except Exception:  # answered and raised on, as Starlette's error middleware does (uvicorn logs it)
            svc.metrics.request("POST", SUBMIT_ROUTE, 500, time.perf_counter() - started, fast=True)
            await INTERNAL_ERROR(scope, receive, send)
            raise
        await response(scope, receive, send)
        seconds = time.perf_counter() - started
        svc.metrics.request("POST", SUBMIT_ROUTE, response.status_code, seconds, fast=True, on_loop=on_loop)
        return True

    def _submitters(self) -> ThreadPoolExecutor:
        """The threads that run submissions: a plain executor hop costs half of anyio's (28 against 57 us
        of CPU, measured on uvloop). Commits wait on the database there, sharing group commits."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.submit_threads, thread_name_prefix="caseboard-submit")
        return self._executor

    def close_submitters(self) -> None:
        """Wait for the submissions in progress, then stop the submit threads: at server shutdown."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


def _control_characters(scope: Scope) -> Response | None:
    """The ``invalid`` answer to a query string or header holding NUL or another refused control character
    (``caseboard/domain/text.py``, docs/adr/0140), naming the parameter or header; None for any other request.
    One regular expression over the query string and one over the headers' values."""
    query: bytes = scope.get("query_string", b"")
    headers = scope["headers"]
    if QUERY.search(query) is None and RAW.search(b"".join(value for _, value in headers)) is None:
        return None
    field, where = "$", "the request"
    for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if control_in(name) or control_in(value):
            field, where = name if not control_in(name) else "$", "query parameter"
            break
    else:
        for name, value in headers:
            if RAW.search(value) is not None:
                field, where = name.decode("latin-1"), "header"
                break
    body = {
        "ok": False,
        "reason": Reason.INVALID.value,
        "message": f"{field}: a {where} holds a control character caseboard does not take (NUL, U+0001-U+001F "
        "but tab and line ends)",
        "field": field,
    }
    return JSONResponse(body, status_code=422)


def read_as_json(content_type: bytes) -> bool:
    """Whether the route reads a body sent under ``content_type`` as JSON, by FastAPI's rule (its strict
    content type): ``application/json`` or ``application/*+json``, parameters aside; no type is not."""
    kind, _, subtype = content_type.split(b";")[0].strip().lower().partition(b"/")
    return kind == b"application" and b"/" not in subtype and (subtype == b"json" or subtype.endswith(b"+json"))


def _first_headers(scope: Scope) -> dict[bytes, bytes]:
    """Header names (lower case, as ASGI gives them) to their first value, as Starlette reads them."""
    headers: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        headers.setdefault(name, value)
    return headers


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, bool]:
    """The body, and whether it is complete (False once it exceeds ``limit`` or the client went away)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), False
        if not message.get("more_body", False):
            return b"".join(chunks), True


def _replaying(body: bytes, receive: Receive, *, more_body: bool = False) -> Receive:
    """A ``receive`` that gives ``body`` first, then whatever the client sends next."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": more_body}

    return replay
