"""The evidence repository over HTTP: ``POST /artifacts`` (streamed), ``GET /artifacts``, ``/artifacts/{id}``,
``/artifacts/{id}/excerpt?lines=A-B|bytes=A-B`` (docs/adr/0080, docs/evidence.md).

Everything is scoped to the key's tenant: another tenant's artifact answers 404 exactly like a missing one.
Uploads come from specialists and operators. The body streams into the store, which refuses it with 413 as
soon as it crosses ``CASEBOARD_ARTIFACT_MAX_BYTES`` (or at once when Content-Length says so); a client that
goes away mid-upload leaves nothing stored.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Annotated, Any

import anyio
import anyio.from_thread
import structlog
from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from caseboard.api.auth import Caller, CallerDep, ServicesDep
from caseboard.api.errors import ERROR_RESPONSES
from caseboard.api.models import Refusal
from caseboard.domain.citations import Span
from caseboard.domain.errors import Reason
from caseboard.domain.items import Role
from caseboard.evidence import ArtifactAltered, ArtifactNotFound, ArtifactTooLarge, RangeOutside
from caseboard.evidence.intact import check_intact, intact_chunks
from caseboard.evidence.model import DEFAULT_MEDIA_TYPE, MEDIA_TYPE_MAX, SOURCE_SYSTEM_MAX
from caseboard.replay.audit import REASON as TAMPERED

router = APIRouter(tags=["artifacts"])
log = structlog.get_logger("caseboard.api")
UPLOADERS = frozenset({Role.SPECIALIST, Role.OPERATOR})


def refusal(status: int, reason: str, message: str, field: str) -> JSONResponse:
    return JSONResponse({"ok": False, "reason": reason, "message": message, "field": field}, status_code=status)


def not_found(error: ArtifactNotFound) -> JSONResponse:
    return refusal(404, "not_found", str(error), "artifact_id")


def altered(error: ArtifactAltered) -> JSONResponse:
    """Bytes changed in the store since they were stored: 409 ``tampered``, as a read of an altered commit."""
    log.warning("artifact_altered", artifact_id=error.artifact_id)
    return refusal(409, TAMPERED, str(error), "artifact_id")


def too_large(limit: int) -> JSONResponse:
    return refusal(413, Reason.INVALID.value, str(ArtifactTooLarge(limit)), "$")


@router.post(
    "/artifacts",
    status_code=201,
    responses={
        **ERROR_RESPONSES,
        200: {"description": "these bytes were stored already in this tenant: that artifact"},
        201: {"description": "stored: the artifact's id (`sha256:<hex>`) and metadata"},
        413: {"model": Refusal, "description": "over CASEBOARD_ARTIFACT_MAX_BYTES (`invalid`, field `$`)"},
    },
    summary="Store an artifact (the body's bytes; Content-Type is its media type)",
    max_body_size=sys.maxsize,  # the store's own limit applies, while streaming
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary", "minLength": 1}}},
        }
    },
)
async def put_artifact(
    request: Request,
    svc: ServicesDep,
    who: CallerDep,
    source_system: Annotated[str | None, Query(max_length=SOURCE_SYSTEM_MAX)] = None,
) -> Response:
    if who.role not in UPLOADERS:
        return refusal(
            403, Reason.FORBIDDEN.value, f"a {who.role.value} may not store artifacts (specialist, operator)", "role"
        )
    store = svc.app.artifacts
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > store.max_bytes:
        return too_large(store.max_bytes)
    media_type = (request.headers.get("content-type") or DEFAULT_MEDIA_TYPE)[:MEDIA_TYPE_MAX]
    stream = request.stream().__aiter__()

    async def next_chunk() -> bytes | None:
        try:
            return await stream.__anext__()
        except StopAsyncIteration:
            return None

    first = b""
    while not first and (chunk := await next_chunk()) is not None:
        first = chunk
    if not first:  # the request body is required (its schema says so): nothing is stored
        return refusal(422, Reason.INVALID.value, "the body is empty: an artifact holds at least one byte", "$")

    def chunks() -> Iterator[bytes]:
        yield first
        while (chunk := anyio.from_thread.run(next_chunk)) is not None:
            yield chunk

    def put() -> Any:
        return store.put(
            who.tenant_id, chunks(), stored_by=who.key.principal, media_type=media_type, source_system=source_system
        )

    try:
        stored = await anyio.to_thread.run_sync(put)
    except ArtifactTooLarge as error:
        return too_large(error.limit)
    return JSONResponse({**stored.meta.public(), "created": stored.created}, status_code=201 if stored.created else 200)


@router.get("/artifacts", responses=ERROR_RESPONSES, summary="The tenant's artifacts (removed ones as tombstones)")
def list_artifacts(svc: ServicesDep, who: CallerDep) -> JSONResponse:
    return JSONResponse({"artifacts": [meta.public() for meta in svc.app.artifacts.list(who.tenant_id)]})


@router.get(
    "/artifacts/{artifact_id}",
    responses={**ERROR_RESPONSES, 200: {"content": {"*/*": {}}, "description": "the bytes, as their media type"}},
    summary="An artifact's bytes, streamed",
)
def get_artifact(artifact_id: str, svc: ServicesDep, who: CallerDep) -> Response:
    store = svc.app.artifacts
    try:
        meta = store.meta(who.tenant_id, artifact_id)
        check_intact(store, who.tenant_id, artifact_id)  # docs/adr/0142
        chunks = intact_chunks(store, who.tenant_id, artifact_id)
    except ArtifactNotFound as error:
        return not_found(error)
    except ArtifactAltered as error:
        return altered(error)
    headers = {"Content-Length": str(meta.size), "X-Caseboard-Artifact": meta.artifact_id}
    return StreamingResponse(chunks, media_type=meta.media_type, headers=headers)


@router.get(
    "/artifacts/{artifact_id}/excerpt",
    responses={**ERROR_RESPONSES, 200: {"content": {"*/*": {}}, "description": "the range, as its media type"}},
    summary="Lines A-B (from 1) or bytes A-B (from 0) of an artifact, both ends included",
)
def get_excerpt(
    artifact_id: str,
    svc: ServicesDep,
    who: CallerDep,
    lines: Annotated[str | None, Query(description="A-B, from 1")] = None,
    bytes: Annotated[str | None, Query(description="A-B, from 0")] = None,
) -> Response:
    return _excerpt(svc.app.artifacts, who, artifact_id, lines, bytes)


def _excerpt(store: Any, who: Caller, artifact_id: str, lines: str | None, byte_range: str | None) -> Response:
    if (lines is None) == (byte_range is None):
        return refusal(422, Reason.INVALID.value, "name one range: ?lines=A-B or ?bytes=A-B", "lines")
    try:
        span = Span.parse("lines", lines) if lines is not None else Span.parse("bytes", byte_range or "")
    except ValueError as error:
        return refusal(422, Reason.INVALID.value, str(error), "lines" if lines is not None else "bytes")
    try:
        meta = store.meta(who.tenant_id, artifact_id)
        check_intact(store, who.tenant_id, artifact_id)  # the whole artifact: no digest of a part is stored
        body = b"".join(store.excerpt(who.tenant_id, artifact_id, span))
    except ArtifactNotFound as error:
        return not_found(error)
    except ArtifactAltered as error:
        return altered(error)
    except RangeOutside as error:
        return refusal(422, Reason.INVALID.value, str(error), span.unit)
    return Response(
        body, media_type=meta.media_type, headers={"X-Caseboard-Excerpt-Span": f"{span.unit}={span.text()}"}
    )
