"""Retention of the dispatch tables: what was processed long ago is forgotten, nothing unprocessed is."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from caseboard.dispatcher.store import Delivery, DispatchStore
from caseboard.ledger import open_ledger
from tests.conftest import caseboard

DAY = 86_400.0


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    url = str(request.getfixturevalue(f"{request.param}_url"))
    open_ledger(url).close()  # creates the schema the store lives in
    return url


@pytest.fixture
def store(url: str) -> Iterator[DispatchStore]:
    store = DispatchStore(url)
    yield store
    store.close()


def age(store: DispatchStore, notification_id: str, days: float) -> None:
    """Move a notification's delivery and processing ``days`` into the past."""
    then = time.time() - days * DAY
    with store._tx() as cur:
        cur.execute("UPDATE caseboard_deliveries SET sent_at = %s WHERE notification_id = %s", (then, notification_id))
        cur.execute(
            "UPDATE caseboard_processed SET processed_at = %s WHERE notification_id = %s AND processed_at IS NOT NULL",
            (then, notification_id),
        )


def test_prune_forgets_only_what_was_processed_before_the_window(store: DispatchStore) -> None:
    sent = [Delivery(f"n-{n}", "planner", "{}") for n in range(1, 5)]
    store.advance("dispatcher", (1, 4), sent)
    for nid in ("n-1", "n-2"):
        store.begin("planner", nid)
        assert store.finish("planner", nid)
    store.begin("planner", "n-3")  # begun, never finished: a crash mid-work
    for nid in ("n-1", "n-3", "n-4"):
        age(store, nid, days=10)

    assert store.prune(7 * DAY) == {"deliveries_pruned": 1, "processed_pruned": 1}

    assert store.status("dispatcher")["processed"] == 1  # n-2, processed within the window
    assert {d.notification_id for d in store.unprocessed(older_than_s=0)} == {"n-3", "n-4"}  # still re-driven
    assert store.begin("planner", "n-2").duplicate is True
    assert store.begin("planner", "n-1").duplicate is False  # forgotten: the documented cost of pruning
    assert store.prune(7 * DAY) == {"deliveries_pruned": 0, "processed_pruned": 0}


def test_outbox_prune_prints_what_it_pruned(url: str, store: DispatchStore) -> None:
    store.advance("dispatcher", (1, 1), [Delivery("n-1", "planner", "{}")])
    store.begin("planner", "n-1")
    store.finish("planner", "n-1")
    age(store, "n-1", days=3)
    done = caseboard("outbox", "prune", "--older-than-days", "2", url=url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"deliveries_pruned": 1, "processed_pruned": 1, "older_than_days": 2.0}
