"""Reducer ``workspace-rules-v2``: v1's state and records, with narrower material changes (docs/reducers.md).

Differences from ``workspace-rules-v1`` (everything else is v1's, imported, never copied or edited):

1. A challenge resting only on an observation whose ``event_time_quality`` is ``unverified`` still shows
   (the hypothesis is ``challenged``, the evidence stays listed and selected), but it is not by itself a
   material change: proposals that depend on the hypothesis are not flagged for revalidation.
2. Freshness follows a proposal's actual dependency path: an expired observation flags a proposal only
   when the proposal depends on it directly or through a hypothesis it *supports*. Expired evidence that
   challenges the hypothesis does not make the plan built on that hypothesis stale.
3. A ``constraints`` item that changes only runtime limits is bookkeeping of the budget, not a material
   change; a changed goal or scope still flags every proposal.

Released: never edit this package once released. A change of semantics is a new reducer version beside it.
"""

from caseboard.reducers.base import Reducer, shared_key
from caseboard.reducers.materiality import gaps
from caseboard.reducers.workspace_rules_v1 import codec
from caseboard.reducers.workspace_rules_v1.evolve import initial
from caseboard.reducers.workspace_rules_v1.render import hypothesis_status
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState
from caseboard.reducers.workspace_rules_v2.evolve import NAME, _apply_item, evolve
from caseboard.reducers.workspace_rules_v2.render import dependency_path, proposal_status, render

REDUCER: Reducer[WorkspaceState] = Reducer(
    name=NAME,
    initial=initial,
    evolve=evolve,
    projection=render,
    dump=codec.dump,
    load=codec.load,
    apply_item=_apply_item,
    proposal_status=proposal_status,
    hypothesis_status=lambda state, hyp: hypothesis_status(hyp),
    review_gaps=lambda state, proposal, version: gaps(state, proposal.depends_on, version),
    rests_on=dependency_path,
    idempotency_slot=shared_key,
    selected_now=lambda state: state.selected_ids(),
)

__all__ = ["NAME", "REDUCER", "evolve", "render"]
