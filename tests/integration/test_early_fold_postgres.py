"""On PostgreSQL the coordinator folds a commit into its cache while the commit is on its way to the server.

A commit so folded that then loses its version to another process's writer must leave no trace in the
cache; after such a loss the workspace's commits are folded only once they have landed. A fold that fails
on the way leaves the commit committed and the cache dropped. Each writer below has its own ledger
(connection pool) and coordinator, as separate processes would.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from caseboard.coordinator import Coordinator
from caseboard.domain.commit import Commit
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from caseboard.reducers import get_reducer
from tests.integration.test_concurrency_postgres import fresh_fold, observation, open_workspace


@dataclasses.dataclass
class Writer:
    ledger: EventsourcingLedger
    coordinator: Coordinator
    early: list[bool] = dataclasses.field(default_factory=list)  # per append: was a fold handed along?

    def cache(self, workspace_id: str) -> dict[str, Any]:
        """The cached projection as it is, without catching up first."""
        workspaces = self.coordinator.workspaces
        with workspaces.lock(workspace_id):
            return workspaces.reducer.render(workspaces.current(workspace_id))


@pytest.fixture
def open_writer(postgres_url: str) -> Iterator[Callable[..., Writer]]:
    opened: list[Writer] = []

    def make(workspace_id: str, evolve_fails_on: str | None = None) -> Writer:
        ledger = open_ledger(postgres_url, pool_size=1)
        reducer = get_reducer()
        if evolve_fails_on is not None:
            reducer = dataclasses.replace(reducer, evolve=failing_on(evolve_fails_on, reducer.evolve))
        writer = Writer(ledger, Coordinator(ledger, Workspaces(ledger, reducer)))
        append = ledger.append

        def spy(commit: Commit, meanwhile: Callable[[], None] | None = None) -> None:
            writer.early.append(meanwhile is not None)
            append(commit, meanwhile)

        ledger.append = spy  # type: ignore[method-assign]
        writer.cache(workspace_id)  # load the cache now: the race is decided by the store
        opened.append(writer)
        return writer

    yield make
    for writer in opened:
        writer.ledger.close()


def failing_on(obs_id: str, evolve: Callable[[Any, Commit], Any]) -> Callable[[Any, Commit], Any]:
    def evolve_or_fail(state: Any, commit: Commit) -> Any:
        if any(getattr(item, "id", None) == obs_id for item in commit.items):
            raise RuntimeError(f"the reducer failed on {obs_id}")
        return evolve(state, commit)

    return evolve_or_fail


def test_a_commit_folded_on_its_way_that_loses_its_version_leaves_no_trace_in_the_cache(
    postgres_url: str, open_writer: Callable[..., Writer]
) -> None:
    open_workspace(postgres_url, "ws-early")
    a, b = open_writer("ws-early"), open_writer("ws-early")
    assert a.coordinator.submit(observation("ws-early", "obs-a", "specialist-a"))["workspace_version"] == 2
    # b still has version 1 cached: it decides version 2, folds obs-b into its cache on the way, and loses.
    assert b.coordinator.submit(observation("ws-early", "obs-b", "specialist-b"))["workspace_version"] == 3
    assert b.early == [True, False]  # the retry after the loss is folded once it has landed
    cached = b.cache("ws-early")
    assert cached == fresh_fold(postgres_url, "ws-early")
    assert {o["id"]: o["recorded_at_version"] for o in cached["observations"]} == {"obs-a": 2, "obs-b": 3}

    # The workspace is contended now: b's commits are folded after they land, a's still on the way.
    assert b.coordinator.submit(observation("ws-early", "obs-b2", "specialist-b"))["workspace_version"] == 4
    assert b.early[-1] is False
    a.coordinator.workspaces.catch_up("ws-early")
    assert a.coordinator.submit(observation("ws-early", "obs-a2", "specialist-a"))["workspace_version"] == 5
    assert a.early == [True, True]
    assert a.cache("ws-early") == fresh_fold(postgres_url, "ws-early")


def test_a_fold_that_fails_on_the_way_raises_after_the_commit_landed_and_drops_the_cache(
    postgres_url: str, open_writer: Callable[..., Writer]
) -> None:
    open_workspace(postgres_url, "ws-fold-fails")
    writer = open_writer("ws-fold-fails", evolve_fails_on="obs-boom")
    with pytest.raises(RuntimeError, match="the reducer failed on obs-boom"):
        writer.coordinator.submit(observation("ws-fold-fails", "obs-boom", "specialist-1"))
    assert writer.early == [True]
    assert writer.ledger.head("ws-fold-fails") == 2  # committed all the same: a fold never decides that
    assert "ws-fold-fails" not in writer.coordinator.workspaces._states  # dropped, not half folded
