"""The ``/events`` streams' hub over an in-memory ledger (``api/event_hub.py``): a stream that falls behind
holds no more than ``QUEUE`` commits and reads what it dropped from the ledger itself, the follower and its
thread end with the last stream, and shutting the hub down ends the streams still open."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from caseboard.api import event_hub
from caseboard.api.event_hub import EventHub
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import LedgerUnavailable
from caseboard.ledger import open_ledger
from tests.conftest import contribution, open_item
from tests.http_server import observation


def opened() -> tuple[Coordinator, EventHub]:
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    assert coordinator.submit(parse_contribution(contribution([open_item()], "op", "operator")))["ok"]
    return coordinator, EventHub(ledger, None, poll_interval_s=0.01)


def observe(coordinator: Coordinator, n: int) -> None:
    line = contribution([observation(f"o-{n}")], "log-specialist", "specialist")
    outcome = coordinator.submit(parse_contribution(line))
    assert outcome["ok"], json.dumps(outcome, default=str)


def test_a_stream_that_falls_behind_holds_at_most_the_queue_and_reads_what_it_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(event_hub, "QUEUE", 3)
    coordinator, hub = opened()

    async def run() -> tuple[list[int], int, int]:
        async with hub.subscribe("ws-1") as subscription:
            for n in range(2, 12):
                observe(coordinator, n)
                await anyio.sleep(0.005)  # the follower reads as they land: batches of one or two
            deadline = time.monotonic() + 10
            while subscription.follower.handed != 11:
                assert time.monotonic() < deadline, "the follower did not read the commits"
                await anyio.sleep(0.01)
            held, catch_up_reads = len(subscription.pending), hub.catch_up_reads
            got: list[int] = []
            position = 1
            while position < 11:
                events = await subscription.after(position, 5.0)
                assert events, f"nothing after {position}"
                got.extend(event.version for event in events)
                position = events[-1].version
            return got, held, hub.catch_up_reads - catch_up_reads

    got, held, catch_up_reads = anyio.run(run)
    assert got == list(range(2, 12))
    assert held <= 3
    assert catch_up_reads >= 1  # what was dropped came from the ledger
    assert hub.followed == 0
    deadline = time.monotonic() + 5
    while hub.running:
        assert time.monotonic() < deadline, "the hub's thread outlived its last follower"
        time.sleep(0.01)
    hub.close()


def test_closing_the_hub_ends_the_streams_still_open_and_refuses_new_ones() -> None:
    _, hub = opened()

    async def run() -> None:
        async with hub.subscribe("ws-1") as subscription:
            assert [e.version for e in await subscription.after(0, 1.0)] == [1]
            hub.close()
            with pytest.raises(LedgerUnavailable, match="shutting down"):
                await subscription.after(1, 5.0)
        with pytest.raises(LedgerUnavailable, match="shutting down"):
            async with hub.subscribe("ws-1"):
                pass

    anyio.run(run)
    assert not hub.running and hub.followed == 0
