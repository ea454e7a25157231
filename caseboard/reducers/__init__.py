"""Versioned reducers, side by side. A released version is never edited; new semantics get a new name.

``get_reducer(name)`` is the one door: every other layer reaches a reducer through the ``Reducer`` interface
it returns, so switching the current reducer is the one line ``CURRENT = ...`` below.
"""

from __future__ import annotations

from typing import cast

from caseboard.domain.errors import UnknownReducer
from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1 import REDUCER as V1
from caseboard.reducers.workspace_rules_v1.state import (
    HypothesisRec,
    ObservationRec,
    ProposalRec,
    QuestionRec,
    WorkRec,
    WorkspaceState,
)
from caseboard.reducers.workspace_rules_v2 import REDUCER as V2
from caseboard.reducers.workspace_rules_v3 import REDUCER as V3
from caseboard.reducers.workspace_rules_v3.render import coverage, finding, sources

REDUCERS: dict[str, Reducer[WorkspaceState]] = {
    V1.name: V1,
    V2.name: V2,
    V3.name: cast(Reducer[WorkspaceState], V3),  # its state extends v1's
}
CURRENT = V3.name


def get_reducer(name: str | None = None) -> Reducer[WorkspaceState]:
    try:
        return REDUCERS[name or CURRENT]
    except KeyError:
        raise UnknownReducer(str(name), sorted(REDUCERS)) from None


__all__ = [
    "CURRENT",
    "REDUCERS",
    "HypothesisRec",
    "ObservationRec",
    "ProposalRec",
    "QuestionRec",
    "Reducer",
    "WorkRec",
    "WorkspaceState",
    "coverage",
    "finding",
    "get_reducer",
    "sources",
]
