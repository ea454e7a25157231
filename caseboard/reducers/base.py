"""What every reducer version offers: a pure fold of commits into a state, and everything the other layers may
ask of it. Nothing outside ``caseboard/reducers/`` reaches into a reducer package: the coordinator, routing
and the model view call these (docs/architecture.md)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from caseboard.domain.commit import Commit, Decision
from caseboard.domain.items import Item

S = TypeVar("S")
R = TypeVar("R")


@dataclass(frozen=True)
class Reducer(Generic[S]):
    """A released reducer: ``evolve`` takes ownership of the state it is given (fork it to keep it).

    - ``apply_item(state, commit, item, decision)`` folds one item, for the coordinator's draft of a
      contribution whose later items refer to earlier ones;
    - ``proposal_status(state, proposal, as_of)`` and ``hypothesis_status(state, hypothesis)`` are the
      statuses the projection shows, for a proposal or hypothesis record of the state;
    - ``review_gaps(state, proposal, version)`` lists the versions after ``version`` that committed a
      material change touching what the proposal rests on: what a review made against ``version`` did not see;
    - ``rests_on(state, proposal)`` lists the references a proposal rests on, as this reducer judges it: an
      observation among them that has expired makes the proposal require revalidation (freshness at use);
    - ``idempotency_slot(principal, key)`` is where the state keeps a principal's idempotency key;
    - ``selected_now(state)`` lists what is selected now, in no particular order, at a cost that follows the
      size of the selection rather than the history of the workspace.
    """

    name: str
    initial: Callable[[str], S]
    evolve: Callable[[S, Commit], S]
    render: Callable[[S], dict[str, Any]]
    dump: Callable[[S], dict[str, Any]]
    load: Callable[[dict[str, Any]], S]
    apply_item: Callable[[S, Commit, Item, Decision], None]
    proposal_status: Callable[[S, Any, datetime | None], str]
    hypothesis_status: Callable[[S, Any], str]
    review_gaps: Callable[[S, Any, int], list[int]]
    rests_on: Callable[[S, Any], list[str]]
    idempotency_slot: Callable[[str, str], str]
    selected_now: Callable[[S], list[str]]

    def fold(self, state: S, commits: Iterable[Commit]) -> S:
        for commit in commits:
            state = self.evolve(state, commit)
        return state


def shared_key(principal: str, key: str) -> str:
    """Reducers up to workspace-rules-v2 keep one idempotency key per workspace, whoever used it."""
    return key
