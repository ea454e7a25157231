"""A commit folded while its INSERT is in flight (ADR 0180), on real PostgreSQL: a chain recheck meanwhile asks
only for what the ledger holds, the cached state equals one folded afresh, and a commit that does not land (its
version taken by another process's writer) leaves no trace in the cached state."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caseboard.coordinator import Coordinator
from caseboard.ledger import open_ledger
from caseboard.ledger.base import EventsourcingLedger
from caseboard.projections import workspaces as workspaces_module
from caseboard.projections.workspaces import Ahead
from tests.integration.test_concurrency_postgres import observation, opening


@pytest.fixture
def ledgers(postgres_url: str) -> Iterator[tuple[EventsourcingLedger, EventsourcingLedger, EventsourcingLedger]]:
    """Two writers' ledgers (each its own pool: two processes in effect) and an onlooker's."""
    opened = [open_ledger(postgres_url) for _ in range(3)]
    yield opened[0], opened[1], opened[2]
    for ledger in opened:
        ledger.close()


def spy_on_folds(monkeypatch: pytest.MonkeyPatch, onlooker: EventsourcingLedger) -> list[dict[str, Any]]:
    """Each fold ahead: whether it folded, the ledger's head as another connection sees it meanwhile, and the
    heads a chain recheck would verify meanwhile."""
    seen: list[dict[str, Any]] = []
    original = Ahead.__call__

    def watched(self: Ahead) -> None:
        original(self)
        key = self.commit.key
        seen.append(
            {
                "version": self.commit.version,
                "folded": self.folded,
                "head_meanwhile": onlooker.head(key),
                "rechecked_head": dict(self.workspaces.cached_heads()).get(key),
            }
        )

    monkeypatch.setattr(workspaces_module.Ahead, "__call__", watched)
    return seen


def test_a_commit_is_folded_while_in_flight_and_a_recheck_meanwhile_asks_only_for_what_landed(
    ledgers: tuple[EventsourcingLedger, EventsourcingLedger, EventsourcingLedger], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, _, onlooker = ledgers
    coordinator = Coordinator(ledger)
    coordinator.submit(opening("ws-ahead"))
    seen = spy_on_folds(monkeypatch, onlooker)
    for n in range(1, 4):
        coordinator.submit(observation("ws-ahead", f"obs-{n}", "log-specialist"))
    key = coordinator.key_of(observation("ws-ahead", "obs-x", "log-specialist"))
    assert [(s["version"], s["folded"]) for s in seen] == [(2, True), (3, True), (4, True)]
    for step in seen:  # a recheck meanwhile asks for the version before, which the ledger surely holds
        assert step["rechecked_head"] == step["version"] - 1
        assert step["head_meanwhile"] >= step["rechecked_head"]
    assert coordinator.workspaces.cached_heads() == [(key, 4)]
    cached = coordinator.workspaces.reducer.render(coordinator.workspaces.current(key))
    assert cached == coordinator.workspaces.show(key)  # the same as a state folded afresh from the ledger


def test_a_commit_that_loses_its_version_after_its_fold_leaves_nothing_in_the_cached_state(
    ledgers: tuple[EventsourcingLedger, EventsourcingLedger, EventsourcingLedger], monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, other, onlooker = ledgers
    mine, theirs = Coordinator(ledger), Coordinator(other)
    mine.submit(opening("ws-race"))
    mine.submit(observation("ws-race", "obs-mine-1", "log-specialist"))
    theirs.submit(observation("ws-race", "obs-theirs", "metrics-specialist"))  # takes version 3 unseen by mine
    seen = spy_on_folds(monkeypatch, onlooker)
    outcome = mine.submit(observation("ws-race", "obs-mine-2", "log-specialist"))
    assert outcome.workspace_version == 4
    # the first try was decided on version 2 and folded as version 3 while in flight, then lost that version;
    # the second, just after a lost race, was folded after landing (``uncontended``)
    assert [(s["version"], s["folded"]) for s in seen] == [(3, True)]
    key = mine.key_of(observation("ws-race", "obs-x", "log-specialist"))
    fresh = mine.workspaces.show(key)
    assert mine.workspaces.reducer.render(mine.workspaces.current(key)) == fresh
    assert {o["id"] for o in fresh["observations"]} == {"obs-mine-1", "obs-theirs", "obs-mine-2"}
    assert [c.author.principal for c in ledger.read(key)][2:] == ["metrics-specialist", "log-specialist"]
