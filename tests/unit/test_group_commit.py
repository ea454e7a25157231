"""Group commit: concurrent appends share batches, each caller gets its own row's answer, errors reach the
callers of the failed batch only, and a lone writer is written at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

import pytest

from caseboard.ledger.group_commit import GroupCommit


class Store:
    """A flush that takes a while, so that callers queue up behind it, and refuses keys it has seen."""

    def __init__(self, delay_s: float = 0.002, fail_when: str | None = None) -> None:
        self.delay_s = delay_s
        self.fail_when = fail_when
        self.rows: dict[str, int] = {}
        self.batches: list[list[str]] = []
        self.events: list[str] = []

    def flush(self, rows: Sequence[str], meanwhile: Callable[[], None]) -> list[int | None]:
        self.events.append(f"sent {','.join(rows)}")
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
    group = GroupCommit(lambda rows, meanwhile: [])
    with pytest.raises(RuntimeError, match="0 results for 1 rows"):
        group.append("a")


def test_the_leaders_work_runs_once_its_row_is_sent_and_before_it_is_answered() -> None:
    store = Store()
    group = GroupCommit(store.flush)
    assert group.append("a", lambda: store.events.append("work a")) == 1
    assert store.events == ["sent a", "work a"]


def test_a_queued_callers_work_runs_before_it_waits_and_once_only() -> None:
    """Callers that queue behind a leader do their work while it writes, not after their own batch is
    sent; every caller's work runs exactly once, whoever writes its row."""
    store = Store(delay_s=0.05)
    group = GroupCommit(store.flush)
    answers: dict[str, int | None] = {}

    def write(row: str) -> None:
        answers[row] = group.append(row, lambda: store.events.append(f"work {row}"))

    leader = threading.Thread(target=write, args=("c",))
    leader.start()
    while "sent c" not in store.events:
        time.sleep(0.001)
    queued = [threading.Thread(target=write, args=(row,)) for row in ("d", "e")]
    for thread in queued:
        thread.start()
    for thread in [leader, *queued]:
        thread.join(timeout=30)
    assert answers["c"] == 1 and sorted([answers["d"], answers["e"]]) == [2, 3]  # type: ignore[type-var]
    assert store.batches[0] == ["c"] and sorted(store.batches[1]) == ["d", "e"]
    works = [event for event in store.events if event.startswith("work")]
    assert sorted(works) == ["work c", "work d", "work e"]  # once each
    second = store.events.index(f"sent {','.join(store.batches[1])}")
    assert store.events.index("work d") < second and store.events.index("work e") < second


def test_a_callers_failed_work_is_raised_to_it_alone_once_its_row_has_landed() -> None:
    store = Store()
    group = GroupCommit(store.flush)

    def broken() -> None:
        raise ValueError("the fold failed")

    with pytest.raises(ValueError, match="the fold failed"):
        group.append("a", broken)
    assert store.rows == {"a": 1}  # the row landed all the same
    assert group.append("b", lambda: None) == 2


def test_the_work_of_a_taken_row_is_not_raised_and_a_flush_that_skips_the_work_gets_it_run() -> None:
    store = Store()
    group = GroupCommit(store.flush)
    group.append("a")

    def broken() -> None:
        raise ValueError("never raised: the row did not land")

    assert group.append("a", broken) is None
    ran: list[str] = []
    lazy = GroupCommit(lambda rows, meanwhile: [7] * len(rows))  # a flush that never calls meanwhile
    assert lazy.append("x", lambda: ran.append("x")) == 7
    assert ran == ["x"]
