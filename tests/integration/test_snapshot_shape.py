"""Snapshots carry the fingerprint of the state's shape, and one of another shape is ignored, never misread.

A reducer whose state gained a field (a fix of the reducer under the same name, or a plugin that took it)
could load an older snapshot without an error and read a default where the ledger says otherwise. The
snapshot's fingerprint says what it was dumped from: a state of another shape folds from the ledger.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from structlog.testing import capture_logs

from caseboard.coordinator import Coordinator
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from caseboard.projections.shape import shape_fingerprint
from caseboard.reducers import Reducer, WorkspaceState, get_reducer
from tests.integration.test_concurrency_postgres import observation, opening

REDUCER = get_reducer()
STATE = type(REDUCER.initial("ws-s"))


@dataclasses.dataclass(slots=True)
class Reshaped(STATE):  # type: ignore[misc, valid-type]
    """The current state with one more field: what a later fix of the same reducer might hold."""

    reviewed_by: dict[str, str] = dataclasses.field(default_factory=dict)


@pytest.fixture
def ledger(sqlite_url: str) -> Iterator[EventsourcingLedger]:
    opened = open_ledger(sqlite_url)
    yield opened
    opened.close()


def counting_loads(reducer: Reducer[WorkspaceState], **changes: Any) -> tuple[Reducer[WorkspaceState], list[int]]:
    loads: list[int] = []
    load = reducer.load

    def counted(data: dict[str, Any]) -> WorkspaceState:
        loads.append(1)
        return load(data)

    return dataclasses.replace(reducer, load=counted, **changes), loads


def written(ledger: EventsourcingLedger, commits: int) -> int:
    """A workspace of ``commits`` commits with a snapshot at its head; the snapshot's version."""
    coordinator = Coordinator(ledger, Workspaces(ledger, snapshot_min=2))
    assert coordinator.submit(opening("ws-s"))["ok"]
    for n in range(commits - 1):
        assert coordinator.submit(observation("ws-s", f"obs-{n}", "alice"))["ok"]
    snapshot = ledger.latest_snapshot("ws-s", REDUCER.name, 2**62)
    assert snapshot is not None
    assert snapshot.shape == shape_fingerprint(STATE)
    return snapshot.version


def test_a_snapshot_of_the_same_shape_is_loaded(ledger: EventsourcingLedger) -> None:
    version = written(ledger, 6)
    same, loads = counting_loads(REDUCER)
    with capture_logs() as logs:
        state = Workspaces(ledger, same).current("ws-s")
    assert loads == [1] and state.version == 6 >= version
    assert not [e for e in logs if e["event"] == "snapshot_rejected"]


def test_a_snapshot_of_another_shape_is_ignored_and_the_state_folded_from_the_ledger(
    ledger: EventsourcingLedger,
) -> None:
    version = written(ledger, 6)
    assert shape_fingerprint(Reshaped) != shape_fingerprint(STATE)
    reshaped, loads = counting_loads(REDUCER, initial=lambda workspace_id: Reshaped(workspace_id=workspace_id))
    with capture_logs() as logs:
        state = Workspaces(ledger, reshaped).current("ws-s")
    assert loads == []  # never read into the other shape
    assert isinstance(state, Reshaped) and state.version == 6
    rejected = [e for e in logs if e["event"] == "snapshot_rejected"]
    assert [(e["version"], "shape" in e["problem"]) for e in rejected] == [(version, True)]
    folded = REDUCER.fold(REDUCER.initial("ws-s"), ledger.iter_commits("ws-s"))
    assert REDUCER.render(state) == REDUCER.render(folded)


def test_a_snapshot_without_a_fingerprint_is_ignored(ledger: EventsourcingLedger) -> None:
    """One written before snapshots carried their shape: nothing says what it was dumped from."""
    coordinator = Coordinator(ledger)  # no snapshot of its own for a workspace this short
    assert coordinator.submit(opening("ws-s"))["ok"]
    assert coordinator.submit(observation("ws-s", "obs-1", "alice"))["ok"]
    head = ledger.read("ws-s")[-1]
    assert ledger.latest_snapshot("ws-s", REDUCER.name, 2**62) is None
    data = REDUCER.dump(coordinator.workspaces.current("ws-s"))
    ledger.save_snapshot("ws-s", REDUCER.name, head.version, data, head.hash)  # bound, but no shape
    later, loads = counting_loads(REDUCER)
    with capture_logs() as logs:
        state = Workspaces(ledger, later).current("ws-s")
    assert loads == [] and state.version == head.version
    assert [("shape None" in e["problem"]) for e in logs if e["event"] == "snapshot_rejected"] == [True]
