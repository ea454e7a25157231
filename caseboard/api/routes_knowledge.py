"""``GET /knowledge``: the key's tenant's knowledge entries, labelled as prior findings from other incidents
(docs/knowledge.md).

The entries of ``caseboard knowledge search --format json``: current ones for ``service`` (and ``q``, words the
statement holds), retired and expired ones too with ``include_retired=true``, each with its provenance. Only
the key's tenant's entries are ever read; the store is first brought up to the ledger.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import JSONResponse

from caseboard.api.auth import CallerDep, ServicesDep
from caseboard.api.errors import ERROR_RESPONSES

router = APIRouter(tags=["reading"])

LABEL = "prior findings from other incidents: not evidence for any current incident"
KNOWLEDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["tenant_id", "label", "entries"],
    "additionalProperties": False,
    "properties": {
        "tenant_id": {"type": "string"},
        "label": {"type": "string"},
        "entries": {"type": "array", "items": {"type": "object"}},
    },
}


@router.get(
    "/knowledge",
    summary="The key's tenant's knowledge entries for a service: prior findings of other incidents, with provenance",
    responses={
        200: {
            "content": {"application/json": {"schema": KNOWLEDGE_SCHEMA}},
            "description": "the entries, oldest first; each says it is a prior finding and not evidence for the "
            "current incident, with its workspace, version, verification and evidence",
        },
        **ERROR_RESPONSES,
    },
)
def knowledge(
    who: CallerDep,
    svc: ServicesDep,
    service: Annotated[str, Query(min_length=1, max_length=128, description="the service, e.g. payments-api")],
    q: Annotated[str | None, Query(max_length=256, description="words the statement holds (any case)")] = None,
    include_retired: Annotated[bool, Query(description="retired and expired entries too")] = False,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
) -> JSONResponse:
    return JSONResponse(search(svc.app, who.tenant_id, service, q, include_retired, limit))


def search(app: Any, tenant_id: str, service: str, q: str | None, include_retired: bool, limit: int) -> dict[str, Any]:
    """The document ``GET /knowledge`` answers (the MCP tool ``search_knowledge`` answers the same)."""
    now = datetime.now(UTC)
    found = app.knowledge().store.search(
        tenant_id, service=service, text=q, include_retired=include_retired, as_of=now, limit=limit
    )
    return {"tenant_id": tenant_id, "label": LABEL, "entries": [entry.document(now) for entry in found]}


def search_tool(svc: Any, who: Any, args: Any) -> dict[str, Any]:
    """The MCP tool ``search_knowledge``: ``GET /knowledge``'s document, as an outcome."""
    return {"ok": True, **search(svc.app, who.tenant_id, args.service, args.q, args.include_retired, args.limit)}
