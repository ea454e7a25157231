"""Upcasters: pure functions from an older stored shape to the current one. A stored record is never
rewritten in place; it is read through these (docs/adr/0022-commit-schema-versions.md).

Commit schema versions:

- 0, the shape before the hash chain: ``workspace`` (not ``workspace_id``), ``recorded_at`` (not ``at``),
  and each item carrying the coordinator's decision inline under ``decision`` (no ``decisions`` list); no
  ``previous_hash`` or ``hash``. Upcast: rename the two fields, move each item's ``decision`` out into
  ``decisions`` (in item order, ``{}`` where absent). The result has no hash: such a record replays, and
  ``verify`` reports it as unsealed.
- 1, the shape with the hash chain, read as it is stored: its workspace is in the legacy namespace, under
  its bare id (no ``tenant_id``). It is not rewritten to 2: its bytes, and so its hash, stay those stored.
- 2, the current shape (``caseboard.domain.commit.Commit``): 1 with ``tenant_id`` after ``workspace_id``, so
  that the workspace's identity, (tenant, id), is sealed in every commit (docs/adr/0130).
"""

from __future__ import annotations

from typing import Any

CURRENT = 2


def upcast_commit(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("schema_version", CURRENT)
    if version == CURRENT or version == 1:
        return data
    if version == 0:
        return _from_0(data)
    raise ValueError(f"commit schema_version {version!r} is not one this caseboard understands (0, 1 or {CURRENT})")


def _from_0(data: dict[str, Any]) -> dict[str, Any]:
    renamed = {"workspace": "workspace_id", "recorded_at": "at"}
    out: dict[str, Any] = {renamed.get(key, key): value for key, value in data.items() if key != "items"}
    items = [{k: v for k, v in item.items() if k != "decision"} for item in data.get("items", [])]
    out["items"] = items
    out["decisions"] = [dict(item.get("decision") or {}) for item in data.get("items", [])]
    out["schema_version"] = 1
    return out
