"""Attempts to deliver one handoff, recorded side by side by two workers, are numbered one after the other and
none is lost (real PostgreSQL connections released together by a barrier)."""

from __future__ import annotations

import threading

import pytest

from caseboard.dispatcher.store import DispatchStore
from caseboard.ledger import open_ledger

pytestmark = pytest.mark.postgres


def test_attempts_recorded_side_by_side_keep_every_one_with_its_own_number(postgres_url: str) -> None:
    open_ledger(postgres_url).close()  # the schema
    stores = [DispatchStore(postgres_url) for _ in range(2)]
    barrier = threading.Barrier(2)
    numbers: list[list[int]] = [[], []]
    errors: list[BaseException] = []

    def record(index: int) -> None:
        try:
            for round_ in range(20):
                barrier.wait(timeout=10)
                outcome = "failed" if round_ % 2 else "delivered"
                numbers[index].append(
                    stores[index].handoff_attempted("k@5/handoff", "k", "http://hook", outcome, f"w{index}")
                )
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=record, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        assert sorted(numbers[0] + numbers[1]) == list(range(1, 41))
        attempts = stores[0].handoff_attempts("k")
        assert sorted(a["attempt"] for a in attempts) == list(range(1, 41))
        assert [a["detail"] for a in attempts].count("w0") == 20
    finally:
        for store in stores:
            store.close()
