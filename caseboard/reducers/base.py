"""What every reducer version offers: a pure fold of commits into a state, and the projection it shows."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from caseboard.domain.commit import Commit

S = TypeVar("S")


@dataclass(frozen=True)
class Reducer(Generic[S]):
    """A released reducer: ``evolve`` takes ownership of the state it is given (fork it to keep it)."""

    name: str
    initial: Callable[[str], S]
    evolve: Callable[[S, Commit], S]
    render: Callable[[S], dict[str, Any]]
    dump: Callable[[S], dict[str, Any]]
    load: Callable[[dict[str, Any]], S]

    def fold(self, state: S, commits: Iterable[Commit]) -> S:
        for commit in commits:
            state = self.evolve(state, commit)
        return state
