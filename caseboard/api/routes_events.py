"""A server-sent events stream of a workspace's commits, for subscribers.

The stream follows the ledger itself (the notification log is the outbox, DESIGN.md §2), through the
process's one follower of the workspace (``event_hub.py``: one read after each commit, whatever the number
of streams), and sends one ``commit`` event per commit, with the workspace version as the event id, so a
client that reconnects with ``Last-Event-ID`` resumes where it stopped and misses nothing: what lies
between its position and the follower's, the stream reads itself. The stream is bounded: it ends after
``timeout_s`` with an ``end`` event that names the position to resume from, and at once when the client
disconnects.

A stream lasts as long as its key does: every ``key_cache_s`` (the revocation delay of every other request)
the key is checked again in the key store (one question for all the streams of a key, ``KeyChecks``), and
a revoked key's stream ends with an ``end`` event whose reason is ``revoked``.
When the ledger cannot be read, or the key cannot be checked, the stream ends with reason ``unavailable``
(the client reconnects with ``Last-Event-ID``); so do the streams open when the server shuts down. A commit
that does not match its hash is never sent: the stream ends with reason ``tampered`` (ADR 0144).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from functools import partial
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse

from caseboard.api.auth import CallerDep, ServicesDep, workspace_key
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.event_hub import Event, end_event
from caseboard.api.openapi_doc import COMMIT_EVENTS
from caseboard.api.routes_write import WorkspaceId
from caseboard.api.services import Services
from caseboard.domain.errors import LedgerUnavailable
from caseboard.replay.audit import ChainBroken

router = APIRouter(tags=["subscribers"])
KEEPALIVE_S = 15.0


@router.get(
    "/workspaces/{workspace_id}/events",
    response_class=StreamingResponse,
    summary="Commits as server-sent events",
    responses={**COMMIT_EVENTS, **ERROR_RESPONSES},
)
async def events(
    workspace_id: WorkspaceId,
    request: Request,
    who: CallerDep,
    svc: ServicesDep,
    after: Annotated[int, Query(ge=0, le=2**62, description="send commits after this version")] = 0,
    timeout_s: Annotated[float, Query(gt=0, le=3600, description="end the stream after this many seconds")] = 300,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
) -> StreamingResponse:
    key = await anyio.to_thread.run_sync(workspace_key, svc, who, workspace_id)
    if last_event_id is not None and last_event_id.isdigit():
        after = max(after, int(last_event_id))
    token = request.headers.get("authorization", "").partition(" ")[2].strip()
    stream = _follow(request, svc, key, after, timeout_s, token)
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


def _key_active(svc: Services, token: str) -> bool:
    """Whether the stream's key is still active, asked of the store itself: a cached answer may be up to
    ``key_cache_s`` old, and the stream must end within that long of a revocation."""
    key = svc.keys.authenticate(token)
    if key is None:
        svc.key_cache.forget(token)
        return False
    svc.key_cache.put(token, key)
    return True


async def _follow(
    request: Request, svc: Services, workspace_id: str, after: int, timeout_s: float, token: str
) -> AsyncIterator[str]:
    position = after
    deadline = time.monotonic() + timeout_s
    quiet_since = time.monotonic()
    revocation_s = max(svc.key_cache.ttl_s, 0.05)
    recheck_s, fresh_s = 0.75 * revocation_s, 0.25 * revocation_s  # a revocation ends it within revocation_s
    checked = time.monotonic()
    yield "retry: 1000\n\n"
    try:
        async with svc.events.subscribe(workspace_id) as subscription:
            events: list[Event] = []
            while (now := time.monotonic()) < deadline:
                if not events and await request.is_disconnected():  # a send would fail on its own
                    return
                if now - checked >= recheck_s:
                    checked = now
                    if not await svc.events.keys.still_valid(token, partial(_key_active, svc), fresh_s):
                        yield end_event("revoked", position)
                        return
                wait_s = min(deadline, checked + recheck_s, quiet_since + KEEPALIVE_S) - now
                events = await subscription.after(position, max(0.0, wait_s))
                if events:
                    yield "".join(event.text for event in events)
                    position = events[-1].version
                    quiet_since = time.monotonic()
                elif time.monotonic() - quiet_since >= KEEPALIVE_S:
                    quiet_since = time.monotonic()
                    yield ": keep-alive\n\n"
    except LedgerUnavailable:
        yield end_event("unavailable", position)
        return
    except ChainBroken:
        yield end_event("tampered", position)
        return
    yield end_event("timeout", position)
