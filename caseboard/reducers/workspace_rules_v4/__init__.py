"""Reducer ``workspace-rules-v4``: v3's semantics, with the rules of evidence (docs/rules-of-evidence.md,
docs/reducers.md). The current reducer.

Released: never edit this package's semantics once released. A change of semantics is a new version beside it.
"""

from caseboard.reducers.base import Reducer
from caseboard.reducers.materiality import gaps
from caseboard.reducers.workspace_rules_v3.render import closure, proposal_status
from caseboard.reducers.workspace_rules_v4 import codec
from caseboard.reducers.workspace_rules_v4.evolve import NAME, apply_item, evolve, initial
from caseboard.reducers.workspace_rules_v4.late import bearings
from caseboard.reducers.workspace_rules_v4.render import hypothesis_status, render
from caseboard.reducers.workspace_rules_v4.state import WorkspaceStateV4, slot

REDUCER: Reducer[WorkspaceStateV4] = Reducer(
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
    late_bearings=bearings,
    folds_held=True,
)

__all__ = ["NAME", "REDUCER", "WorkspaceStateV4"]
