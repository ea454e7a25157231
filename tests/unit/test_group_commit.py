"""Group commit: concurrent appends share batches, each caller gets its own row's answer, errors reach the
callers of the failed batch only, and a lone writer is written at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

import pytest

from caseboard.ledger.group_commit import GroupCommit, Meanwhile


class Store:
    """A flush that takes a while, so that callers queue up behind it, and refuses keys it has seen."""

    def __init__(self, delay_s: float = 0.002, fail_when: str | None = None) -> None:
        self.delay_s = delay_s
        self.fail_when = fail_when
        self.rows: dict[str, int] = {}
        self.batches: list[list[str]] = []
        self.events: list[str] = []

    def flush(self, rows: Sequence[str], meanwhile: Meanwhile | None = None) -> list[int | None]:
        self.events.append(f"sent {','.join(rows)}")
        if meanwhile is not None:
            meanwhile()
        time.sleep(self.delay_s)
        self.batches.append(list(rows))
        if self.fail_when in rows:
            raise ConnectionError("the database went away")
        answers: list[int | None] = []
        for row in rows:
            if row in self.rows:
                answers.append(None)
            else:
                self.rows[row] = len(self.rows) + 1
                answers.append(self.rows[row])
        return answers


def run_threads(group: GroupCommit[str], rows_per_thread: list[list[str]]) -> dict[str, object]:
    """Each thread appends its rows in order, starting together; the answer (or error) of every row."""
    answers: dict[str, object] = {}
    barrier = threading.Barrier(len(rows_per_thread))

    def write(rows: list[str]) -> None:
        barrier.wait()
        for row in rows:
            try:
                answers[row] = group.append(row)
            except ConnectionError as error:
                answers[row] = error

    threads = [threading.Thread(target=write, args=(rows,)) for rows in rows_per_thread]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not any(thread.is_alive() for thread in threads)
    return answers


def test_a_lone_writer_is_written_at_once_in_a_batch_of_its_own() -> None:
    store = Store(delay_s=0)
    group = GroupCommit(store.flush)
    assert [group.append("a"), group.append("b")] == [1, 2]
    assert store.batches == [["a"], ["b"]]


def test_concurrent_writers_share_batches_and_each_gets_its_own_rows_answer() -> None:
    store = Store()
    group = GroupCommit(store.flush)
    rows = [[f"w{w}-{n}" for n in range(20)] for w in range(8)]
    answers = run_threads(group, rows)
    assert answers == store.rows  # every row written once, and each caller got its own row's id
    assert sorted(answers) == sorted(row for per in rows for row in per)
    assert max(len(batch) for batch in store.batches) > 1
    assert len(store.batches) < 160
    assert (group.batches, group.rows) == (len(store.batches), 160)


def test_a_taken_key_is_answered_none_to_its_caller_only() -> None:
    store = Store()
    store.rows["taken"] = 1
    group = GroupCommit(store.flush)
    answers = run_threads(group, [["taken", f"own-{w}"] for w in range(4)])
    assert answers.pop("taken") is None
    assert sorted(answers.values()) == [2, 3, 4, 5]


def test_a_failed_batch_fails_its_callers_only_and_the_next_writers_proceed() -> None:
    store = Store(fail_when="poison")
    group = GroupCommit(store.flush)
    answers = run_threads(group, [["poison", "after-0"], *[[f"w{w}-{n}" for n in range(5)] for w in range(5)]])
    failed = {row for row, answer in answers.items() if isinstance(answer, ConnectionError)}
    poisoned = next(batch for batch in store.batches if "poison" in batch)
    assert failed == set(poisoned)
    assert all(answers[row] == store.rows[row] for row in answers if row not in failed)
    assert "after-0" in store.rows
    assert group.append("later") == store.rows["later"]


def test_batches_are_capped() -> None:
    store = Store(delay_s=0.01)
    group = GroupCommit(store.flush, max_batch=3)
    run_threads(group, [[f"w{w}"] for w in range(10)])
    assert max(len(batch) for batch in store.batches) == 3
    assert len(store.rows) == 10


def test_a_flush_that_answers_the_wrong_number_of_rows_fails_loudly() -> None:
    group: GroupCommit[str] = GroupCommit(lambda rows, meanwhile: [])
    with pytest.raises(RuntimeError, match="0 results for 1 rows"):
        group.append("a")


def test_a_writer_that_writes_its_batch_works_meanwhile_and_one_that_waits_does_not() -> None:
    """ADR 0180: ``meanwhile`` runs once the batch holding the caller's row is sent, before its answer; a caller
    whose row another writes gets no call (it folds after, as before)."""
    store = Store(delay_s=0.05)
    group = GroupCommit(store.flush)
    called: list[str] = []
    first = threading.Thread(target=group.append, args=("lead", lambda: called.append("lead")))
    first.start()
    while not store.events:
        time.sleep(0.001)
    second = threading.Thread(target=group.append, args=("queued", lambda: called.append("queued")))
    third = threading.Thread(target=group.append, args=("queued-too", lambda: called.append("queued-too")))
    second.start()
    time.sleep(0.01)
    third.start()
    for thread in (first, second, third):
        thread.join(timeout=10)
    assert store.batches == [["lead"], ["queued", "queued-too"]]
    assert called == ["lead", "queued"]  # the second batch's writer is "queued"; "queued-too" was written for it
    assert store.events == ["sent lead", "sent queued,queued-too"]
