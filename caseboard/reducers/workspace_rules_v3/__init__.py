"""Reducer ``workspace-rules-v3``: v1's semantics, with reviews decided on a version, incomplete checks,
unsupported answers and summaries that are not sources (docs/reducers.md). The current reducer.

Released: never edit this package's semantics once released. A change of semantics is a new version beside it.
"""

from caseboard.reducers.base import Reducer
from caseboard.reducers.materiality import gaps
from caseboard.reducers.workspace_rules_v3 import codec
from caseboard.reducers.workspace_rules_v3.evolve import NAME, apply_item, evolve, initial
from caseboard.reducers.workspace_rules_v3.render import closure, hypothesis_status, proposal_status, render
from caseboard.reducers.workspace_rules_v3.state import WorkspaceStateV3, slot

REDUCER: Reducer[WorkspaceStateV3] = Reducer(
    name=NAME,
    initial=initial,
    evolve=evolve,
    projection=render,
    dump=codec.dump,
    load=codec.load,
    apply_item=apply_item,
    proposal_status=proposal_status,
    hypothesis_status=hypothesis_status,
    review_gaps=lambda state, proposal, version: gaps(state, closure(state, proposal), version),
    rests_on=closure,
    idempotency_slot=slot,
    selected_now=lambda state: state.selected_now(),
)

__all__ = ["NAME", "REDUCER", "WorkspaceStateV3"]
