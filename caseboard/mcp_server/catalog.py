"""Which workspaces exist, and in which tenant: learnt from the ledger's notification log (the outbox).

The ledger answers per workspace; nothing in it lists workspaces. The catalog follows the outbox (in an order
no later commit can jump behind, ``caseboard/dispatcher/outbox.py``) from where it stopped, and remembers the
tenant of every commit that opened a workspace (version 1: its ``open`` item's scope; a workspace never moves
to another tenant, ADR 0031). The first listing in a process reads the whole log once; later ones read only
what was committed since.
"""

from __future__ import annotations

import bisect
import threading

from caseboard.dispatcher.outbox import START, Outbox, Position
from caseboard.domain import items as it

BATCH = 1000


class Catalog:
    def __init__(self, outbox: Outbox) -> None:
        self.outbox = outbox
        self.position: Position = START
        self.tenants: dict[str, list[str]] = {}
        """Each tenant's workspace ids, sorted: the ids its callers name (docs/adr/0130)."""
        self.keys: dict[tuple[str, str], str] = {}
        """The key (``caseboard.domain.workspace_key``) of each (tenant, workspace id), in the order they opened."""
        self._lock = threading.Lock()

    def refresh(self) -> None:
        with self._lock:
            while True:
                entries = self.outbox.read(self.position, BATCH)
                for entry in entries:
                    commit = entry.commit
                    opened = commit.items[0] if commit.version == 1 and commit.items else None
                    if isinstance(opened, it.Open):
                        bisect.insort(self.tenants.setdefault(opened.scope.tenant_id, []), commit.workspace_id)
                        self.keys[(opened.scope.tenant_id, commit.workspace_id)] = commit.key
                    self.position = entry.position
                if len(entries) < BATCH:
                    return

    def keys_of(self, tenant_id: str) -> list[str]:
        """The keys of the tenant's workspaces as last refreshed, in id order (the health folds' names)."""
        return [self.keys[(tenant_id, workspace_id)] for workspace_id in self.tenants.get(tenant_id, [])]

    def of_tenant(self, tenant_id: str, *, after: str | None, limit: int) -> list[str]:
        """At most ``limit`` workspace ids of the tenant, in id order, after ``after``."""
        self.refresh()
        ids = self.tenants.get(tenant_id, [])
        start = 0 if after is None else bisect.bisect_right(ids, after)
        return ids[start : start + limit]
