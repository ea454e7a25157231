"""Versioned reducers, side by side. A released version is never edited; new semantics get a new name."""

from __future__ import annotations

from caseboard.domain.errors import UnknownReducer
from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1 import REDUCER as V1
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState
from caseboard.reducers.workspace_rules_v2 import REDUCER as V2

REDUCERS: dict[str, Reducer[WorkspaceState]] = {V1.name: V1, V2.name: V2}
CURRENT = V1.name


def get_reducer(name: str | None = None) -> Reducer[WorkspaceState]:
    try:
        return REDUCERS[name or CURRENT]
    except KeyError:
        raise UnknownReducer(str(name), sorted(REDUCERS)) from None


__all__ = ["CURRENT", "REDUCERS", "Reducer", "get_reducer"]
