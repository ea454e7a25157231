"""What a tenant's sources can check, in words a planner is shown: each request kind, the sources serving it
and their operations. Read from the trusted configuration (``CASEBOARD_SOURCES``), never from a workspace."""

from __future__ import annotations

from functools import cache

from caseboard.sources.config import load_sources
from caseboard.sources.registry import SOURCES


@cache
def checks_by_tenant(path: str) -> dict[str, str]:
    """Tenant -> ``kind (source: operations); ...`` for every source the file gives it."""
    out: dict[str, str] = {}
    for tenant, sources in load_sources(path).tenants.items():
        by_kind: dict[str, list[str]] = {}
        for name, config in sorted(sources.sources.items()):
            source = SOURCES.build(name, config)
            try:
                for kind in source.kinds:
                    by_kind.setdefault(kind, []).append(f"{name}: {', '.join(source.operations)}")
            finally:
                source.close()
        out[tenant] = "; ".join(f"{kind} ({' | '.join(served)})" for kind, served in sorted(by_kind.items()))
    return out
