"""A workspace's identity is (tenant, id): the key that names it in the ledger, the cache and the dispatcher.

A workspace opened under commit schema 2 is stored under the key ``<tenant_id>/<workspace_id>``; one opened
before (schema 0 or 1, the legacy namespace) keeps its bare id as its key. A workspace id cannot contain
``/`` (``WORKSPACE_ID_PATTERN``), so the last ``/`` of a key separates the two and no scoped key is ever a
legacy one. Everything a caller sees names the bare id; the key stays inside caseboard (docs/adr/0130).
"""

from __future__ import annotations


def scoped(tenant_id: str, workspace_id: str) -> str:
    """The key of the workspace ``workspace_id`` of ``tenant_id``."""
    return f"{tenant_id}/{workspace_id}"


def split(key: str) -> tuple[str | None, str]:
    """(tenant, id) of a key: the tenant None for a legacy key, which is the bare id."""
    tenant, _, workspace_id = key.rpartition("/")
    return (tenant or None, workspace_id)


def bare(key: str) -> str:
    """The workspace id a key names, as callers see it."""
    return key.rpartition("/")[2]


def tenant_part(key: str) -> str | None:
    """The tenant a scoped key names; None for a legacy key."""
    return key.rpartition("/")[0] or None
