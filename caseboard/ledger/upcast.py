"""Upcasters: pure functions from an older stored shape to the current one. A stored record is never
rewritten in place; it is read through these."""

from __future__ import annotations

from typing import Any


def upcast_commit(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version", 1)
    if version == 1:
        return data
    raise ValueError(f"commit schema_version {version!r} is newer than this caseboard understands")
