"""The bodies the API's error handler gives caseboard's own errors: a caller sees the id it named, never a key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import Request

from caseboard.api.errors import on_caseboard_error, on_http_error
from caseboard.domain.errors import UnknownWorkspace, VersionOutOfRange


def answer(error: Exception) -> tuple[int, dict[str, Any]]:
    response = asyncio.run(on_caseboard_error(None, error))  # type: ignore[arg-type]  # the request is not read
    return response.status_code, json.loads(bytes(response.body))


def test_a_version_out_of_range_names_the_workspace_by_its_id_and_the_versions_there_are() -> None:
    status, body = answer(VersionOutOfRange("tenant-a/ws-1", 9, 4))
    assert status == 422
    assert body == {
        "ok": False,
        "reason": "invalid",
        "message": "workspace 'ws-1' has versions 1..4; version 9 does not exist",
        "field": "version",
    }


def test_an_unknown_workspace_is_named_by_its_id() -> None:
    status, body = answer(UnknownWorkspace("tenant-a/ws-1"))
    assert status == 404
    assert body["reason"] == "unknown_workspace" and "tenant-a" not in json.dumps(body)
    assert "'ws-1'" in body["message"]


def test_a_method_a_route_does_not_take_names_the_methods_it_does_take() -> None:
    """Starlette names them in an ``Allow`` header (capitalized): the message lists them, whatever the case."""
    request = Request({"type": "http", "method": "PUT", "path": "/workspaces", "headers": [], "query_string": b""})
    for name in ("Allow", "allow"):
        refused = StarletteHTTPException(405, headers={name: "GET, POST"})
        response = asyncio.run(on_http_error(request, refused))
        assert response.status_code == 405
        assert json.loads(bytes(response.body))["message"] == "PUT /workspaces: allowed methods: GET, POST"
