"""Reducer ``workspace-rules-v1``: the minimum semantics of DESIGN.md §4.

Released: never edit this package's semantics. A change of semantics is a new reducer version beside it;
this module only wires the released functions into the ``Reducer`` interface.
"""

from caseboard.reducers.base import Reducer, shared_key
from caseboard.reducers.materiality import gaps
from caseboard.reducers.workspace_rules_v1 import codec
from caseboard.reducers.workspace_rules_v1.evolve import NAME, apply_item, evolve, initial
from caseboard.reducers.workspace_rules_v1.render import dependency_closure, hypothesis_status, proposal_status, render
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState

REDUCER: Reducer[WorkspaceState] = Reducer(
    name=NAME,
    initial=initial,
    evolve=evolve,
    projection=render,
    dump=codec.dump,
    load=codec.load,
    apply_item=apply_item,
    proposal_status=proposal_status,
    hypothesis_status=lambda state, hyp: hypothesis_status(hyp),
    review_gaps=lambda state, proposal, version: gaps(state, dependency_closure(state, proposal), version),
    rests_on=dependency_closure,
    idempotency_slot=shared_key,
    selected_now=lambda state: state.selected_ids(),
)

__all__ = ["NAME", "REDUCER", "WorkspaceState", "apply_item", "evolve", "initial", "render"]
