"""Versioned reducers, side by side. A released version is never edited; new semantics get a new name.

``get_reducer(name)`` is the one door: every other layer reaches a reducer through the ``Reducer`` interface
it returns, so switching the current reducer is the one line ``CURRENT = ...`` below. Reducers are
registered by name in the entry-point group ``caseboard.reducers`` (``registry.py``): caseboard's released
ones, and any other distribution's (docs/reducers.md). A reducer's state is a ``WorkspaceState`` (v1's, or a
subclass of it, as v3's is): the coordinator's rules, routing and the model view read its records.
"""

from __future__ import annotations

from caseboard.reducers.base import Reducer
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
CURRENT = "workspace-rules-v3"
"""The reducer the coordinator decides with and ``show`` renders by default (ADR 0038)."""


def get_reducer(name: str | None = None) -> Reducer[WorkspaceState]:
    """The registered reducer ``name`` (``CURRENT`` by default), or ``UnknownReducer`` naming the known ones."""
    reducer: Reducer[WorkspaceState] = REDUCERS.get_reducer(name or CURRENT)
    return reducer


__all__ = [
    "CURRENT",
    "GROUP",
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
]
