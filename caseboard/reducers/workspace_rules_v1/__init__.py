"""Reducer ``workspace-rules-v1``: the minimum semantics of DESIGN.md §4.

Released: never edit this package. A change of semantics is a new reducer version beside it.
"""

from caseboard.reducers.base import Reducer
from caseboard.reducers.workspace_rules_v1 import codec
from caseboard.reducers.workspace_rules_v1.evolve import NAME, apply_item, evolve, initial
from caseboard.reducers.workspace_rules_v1.render import render
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState

REDUCER: Reducer[WorkspaceState] = Reducer(
    name=NAME,
    initial=initial,
    evolve=evolve,
    render=lambda state: render(state, NAME),
    dump=codec.dump,
    load=codec.load,
)

__all__ = ["NAME", "REDUCER", "WorkspaceState", "apply_item", "evolve", "initial", "render"]
