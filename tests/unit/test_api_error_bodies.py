"""The bodies the API's error handler gives caseboard's own errors: a caller sees the id it named, never a key."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from caseboard.api.errors import on_caseboard_error
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
