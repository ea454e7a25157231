"""Versioned reducers, side by side. A released version is never edited; new semantics get a new name.

``get_reducer(name)`` is the one door: every other layer reaches a reducer through the ``Reducer`` interface
it returns. The current reducer is a setting, ``CASEBOARD_REDUCER`` (``Settings.reducer``, checked against the
registry at start); the composition root hands it to the coordinator, routing, the model view and every
read, and ``CURRENT`` below is only its default. Reducers are
registered by name in the entry-point group ``caseboard.reducers`` (``registry.py``): caseboard's released
ones, and any other distribution's (docs/reducers.md). A reducer's state is a ``WorkspaceState`` (v1's, or a
subclass of it, as v3's is): the coordinator's rules, routing and the model view read its records.
"""

from __future__ import annotations

from caseboard.reducers.base import LOAD_ERRORS, Reducer
from caseboard.reducers.registry import GROUP, RELEASED, Registry
from caseboard.reducers.workspace_rules_v1.state import (
    HypothesisRec,
    ObservationRec,
    ProposalRec,
    QuestionRec,
    WorkRec,
    WorkspaceState,
)
from caseboard.reducers.workspace_rules_v3.render import coverage, finding, sources

REDUCERS = Registry()
"""Every registered reducer by name (a read-only mapping; a reducer is imported when first asked for)."""
CURRENT = "workspace-rules-v4"
"""The default of ``CASEBOARD_REDUCER`` (``Settings.reducer``): the reducer a deployment decides with and shows
when it names none, and the one a part built without settings uses (the unit tests' boards; ADR 0170)."""


def tenant_of(state: WorkspaceState) -> str | None:
    """The tenant a workspace belongs to: the ``tenant_id`` of the scope its ``open`` item recorded, None before
    it is opened. Not reducer semantics, and so not a released reducer's: it is read here, from the open item's
    scope that every reducer's state keeps, the same under every reducer (the coordinator refuses a
    ``constraints`` item that would move a workspace to another tenant). The HTTP visibility check and the fast
    path read it through ``Workspaces.tenant_of`` / ``cached_tenant``."""
    if not state.opened:
        return None
    tenant = state.scope.get("tenant_id")
    return None if tenant is None else str(tenant)


def get_reducer(name: str | None = None) -> Reducer[WorkspaceState]:
    """The registered reducer ``name`` (``CURRENT`` by default), or ``UnknownReducer`` naming the known ones."""
    reducer: Reducer[WorkspaceState] = REDUCERS.get_reducer(name or CURRENT)
    return reducer


__all__ = [
    "CURRENT",
    "GROUP",
    "LOAD_ERRORS",
    "REDUCERS",
    "RELEASED",
    "HypothesisRec",
    "ObservationRec",
    "ProposalRec",
    "QuestionRec",
    "Reducer",
    "Registry",
    "WorkRec",
    "WorkspaceState",
    "coverage",
    "finding",
    "get_reducer",
    "sources",
    "tenant_of",
]
