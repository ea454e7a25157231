"""Writers racing on real PostgreSQL, each with its own ledger (its own connection pool) and coordinator.

Threads stand for separate API processes (nothing is shared but the database); the tests with "processes"
in their name use real OS processes started with "spawn". Every race is released by a barrier.
"""

from __future__ import annotations

import json
import multiprocessing
import threading
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.contribution import Contribution
from caseboard.domain.items import Observation
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.logs import configure_logging
from caseboard.projections import Workspaces
from caseboard.reducers import get_reducer
from tests.conftest import contribution, open_item

WRITERS = 8
TIMEOUT = 60.0
T = TypeVar("T")


def opening(workspace_id: str) -> Contribution:
    return parse_contribution(
        contribution(
            [open_item()],
            principal="oncall-operator",
            role="operator",
            workspace_id=workspace_id,
        )
    )


def observation(workspace_id: str, obs_id: str, principal: str, **envelope: Any) -> Contribution:
    return parse_contribution(
        contribution(
            [
                {
                    "type": "observation",
                    "id": obs_id,
                    "statement": f"{principal} saw {obs_id}",
                    "source": {"system": "auth-logs", "instance": principal},
                    "event_time": "2026-03-02T14:03:00Z",
                    "event_time_quality": "verified",
                }
            ],
            principal=principal,
            role="specialist",
            workspace_id=workspace_id,
            **envelope,
        )
    )


def obs_ids(principal: str, count: int) -> list[str]:
    return [f"obs-{principal}-{n:03d}" for n in range(count)]


@dataclass
class Writer:
    """One participant process: its own ledger (connection pool), cache and coordinator."""

    ledger: EventsourcingLedger
    coordinator: Coordinator

    @classmethod
    def open(cls, url: str, workspace_id: str | None = None, snapshot_min: int = 1000) -> Writer:
        ledger = open_ledger(url, pool_size=1)
        coordinator = Coordinator(ledger, Workspaces(ledger, snapshot_min=snapshot_min))
        if workspace_id is not None:  # load the cache now, so that the race is decided by the store
            with coordinator.workspaces.lock(workspace_id):
                coordinator.workspaces.current(workspace_id)
        return cls(ledger, coordinator)

    def cached_projection(self, workspace_id: str) -> dict[str, Any]:
        workspaces = self.coordinator.workspaces
        with workspaces.lock(workspace_id):
            workspaces.catch_up(workspace_id)
            return workspaces.reducer.render(workspaces.current(workspace_id))


@pytest.fixture
def writers() -> Iterator[list[Writer]]:
    opened: list[Writer] = []
    yield opened
    for writer in opened:
        writer.ledger.close()


def fresh_fold(url: str, workspace_id: str) -> dict[str, Any]:
    """The projection folded from version 1, without cache or snapshot; checked against a cold load."""
    ledger = open_ledger(url, pool_size=1)
    try:
        reducer = get_reducer()
        state = reducer.fold(reducer.initial(workspace_id), ledger.iter_commits(workspace_id))
        folded = reducer.render(state)
        assert Workspaces(ledger).show(workspace_id) == folded  # a cold load starts from the latest snapshot
        return folded
    finally:
        ledger.close()


def open_workspace(url: str, workspace_id: str) -> None:
    ledger = open_ledger(url, pool_size=1)
    try:
        assert Coordinator(ledger).submit(opening(workspace_id))["workspace_version"] == 1
    finally:
        ledger.close()


def in_threads(work: Callable[[int], T], count: int = WRITERS) -> list[T]:
    """Run work(0..count-1) in threads and return the results in order; a thread's exception is raised."""
    with ThreadPoolExecutor(count) as pool:
        futures = [pool.submit(work, index) for index in range(count)]
        return [future.result(timeout=TIMEOUT) for future in futures]


def assert_one_winner(outcomes: list[dict[str, Any]], version: int) -> None:
    accepted = [o for o in outcomes if o["ok"]]
    refused = [o for o in outcomes if not o["ok"]]
    assert len(accepted) == 1, outcomes
    assert accepted[0]["workspace_version"] == version
    assert len(refused) == len(outcomes) - 1
    assert {o["reason"] for o in refused} == {"version_conflict"}, refused
    assert {o["current_version"] for o in refused} == {version}
    assert all([c["workspace_version"] for c in o["since"]] == [version] for o in refused), refused


Outcomes = dict[str, list[dict[str, Any]]]


def assert_all_landed(url: str, workspace_id: str, outcomes: Outcomes, count: int) -> None:
    total = WRITERS * count
    versions = [o["workspace_version"] for per_writer in outcomes.values() for o in per_writer]
    assert all(o["ok"] for per_writer in outcomes.values() for o in per_writer)
    assert sorted(versions) == list(range(2, total + 2))
    for per_writer in outcomes.values():  # each writer's own commits land in the order it submitted them
        own = [o["workspace_version"] for o in per_writer]
        assert own == sorted(own)
    ledger = open_ledger(url, pool_size=1)
    try:
        assert ledger.head(workspace_id) == total + 1
        commits = ledger.read(workspace_id)
    finally:
        ledger.close()
    assert [c.version for c in commits] == list(range(1, total + 2))
    recorded = [item.id for c in commits for item in c.items if isinstance(item, Observation)]
    expected = sorted(i for principal in outcomes for i in obs_ids(principal, count))
    assert sorted(recorded) == expected
    projection = fresh_fold(url, workspace_id)
    assert projection["workspace_version"] == total + 1
    assert {o["id"] for o in projection["observations"]} == set(expected)


# --- threads: separate pools in one process ---------------------------------------------------------------


def test_eight_writers_with_the_same_expected_version_give_one_commit_and_seven_conflicts(
    postgres_url: str, writers: list[Writer]
) -> None:
    open_workspace(postgres_url, "ws-cas")
    writers.extend(Writer.open(postgres_url, "ws-cas") for _ in range(WRITERS))
    barrier = threading.Barrier(WRITERS)

    def race(index: int) -> dict[str, Any]:
        attempt = observation("ws-cas", f"obs-{index}", f"specialist-{index}", expected_version=1)
        barrier.wait(timeout=TIMEOUT)
        return writers[index].coordinator.submit(attempt)

    assert_one_winner(in_threads(race), 2)
    assert writers[0].ledger.head("ws-cas") == 2
    assert all(w.cached_projection("ws-cas") == fresh_fold(postgres_url, "ws-cas") for w in writers)


@pytest.mark.parametrize("snapshot_min", [1000, 7], ids=["rare-snapshots", "frequent-snapshots"])
def test_eight_unconditional_writers_of_fifty_contributions_all_land_with_contiguous_versions(
    postgres_url: str, writers: list[Writer], snapshot_min: int
) -> None:
    count = 50
    open_workspace(postgres_url, "ws-busy")
    writers.extend(Writer.open(postgres_url, "ws-busy", snapshot_min) for _ in range(WRITERS))
    barrier = threading.Barrier(WRITERS)

    def write(index: int) -> list[dict[str, Any]]:
        principal = f"specialist-{index}"
        batch = [observation("ws-busy", obs_id, principal) for obs_id in obs_ids(principal, count)]
        barrier.wait(timeout=TIMEOUT)
        return [writers[index].coordinator.submit(one) for one in batch]

    outcomes = {f"specialist-{index}": per_writer for index, per_writer in enumerate(in_threads(write))}
    assert_all_landed(postgres_url, "ws-busy", outcomes, count)
    fresh = fresh_fold(postgres_url, "ws-busy")
    for writer in writers:
        assert writer.cached_projection("ws-busy") == fresh


def test_eight_writers_retrying_one_idempotency_key_get_one_commit_and_the_same_outcome(
    postgres_url: str, writers: list[Writer]
) -> None:
    open_workspace(postgres_url, "ws-retry")
    writers.extend(Writer.open(postgres_url, "ws-retry") for _ in range(WRITERS))
    barrier = threading.Barrier(WRITERS)

    def retry(index: int) -> dict[str, Any]:
        same = observation("ws-retry", "obs-once", "specialist-1", idempotency_key="specialist-1/obs-once")
        barrier.wait(timeout=TIMEOUT)
        return writers[index].coordinator.submit(same)

    outcomes = in_threads(retry)
    assert all(o["ok"] and o["workspace_version"] == 2 for o in outcomes), outcomes
    assert sum(1 for o in outcomes if not o.get("idempotent_replay")) == 1
    assert len({json.dumps(o["items"], sort_keys=True) for o in outcomes}) == 1
    assert writers[0].ledger.head("ws-retry") == 2


def test_writers_on_eight_workspaces_at_once_each_get_contiguous_versions(
    postgres_url: str, writers: list[Writer]
) -> None:
    count = 50
    writers.extend(Writer.open(postgres_url) for _ in range(WRITERS))
    barrier = threading.Barrier(WRITERS)

    def write(index: int) -> list[int]:
        workspace_id, principal = f"ws-{index}", f"specialist-{index}"
        batch = [opening(workspace_id)]
        batch += [observation(workspace_id, i, principal) for i in obs_ids(principal, count)]
        barrier.wait(timeout=TIMEOUT)
        outcomes = [writers[index].coordinator.submit(one) for one in batch]
        assert all(o["ok"] for o in outcomes), [o for o in outcomes if not o["ok"]]
        return [o["workspace_version"] for o in outcomes]

    assert in_threads(write) == [list(range(1, count + 2))] * WRITERS
    for index, writer in enumerate(writers):
        assert [c.version for c in writer.ledger.read(f"ws-{index}")] == list(range(1, count + 2))
        assert writer.cached_projection(f"ws-{index}") == fresh_fold(postgres_url, f"ws-{index}")


# --- real OS processes ----------------------------------------------------------------------------------


def process_writer(
    url: str,
    workspace_id: str,
    principal: str,
    count: int,
    expected_version: int | None,
    barrier: Any,
    results: Any,
) -> None:
    """A writer process: its own ledger; the barrier releases the writes, then marks that all are done."""
    try:
        configure_logging("warning")
        writer = Writer.open(url, workspace_id)
        try:
            batch = [
                observation(workspace_id, obs_id, principal, expected_version=expected_version)
                for obs_id in obs_ids(principal, count)
            ]
            barrier.wait(timeout=TIMEOUT)
            outcomes = [writer.coordinator.submit(one) for one in batch]
            barrier.wait(timeout=TIMEOUT)  # every process has finished writing
            results.put((principal, outcomes, writer.cached_projection(workspace_id)))
        finally:
            writer.ledger.close()
    except BaseException:
        barrier.abort()
        results.put((principal, None, traceback.format_exc()))
        raise


def in_processes(url: str, workspace_id: str, count: int, expected_version: int | None) -> list[Any]:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    processes = [
        ctx.Process(
            target=process_writer,
            args=(url, workspace_id, f"specialist-{index}", count, expected_version, barrier, results),
        )
        for index in range(WRITERS)
    ]
    for process in processes:
        process.start()
    try:
        reports = [results.get(timeout=TIMEOUT) for _ in processes]
        for process in processes:
            process.join(timeout=TIMEOUT)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
                process.join()
    failures = [report[2] for report in reports if report[1] is None]
    assert failures == []
    assert [process.exitcode for process in processes] == [0] * WRITERS
    return sorted(reports)


def test_eight_processes_with_the_same_expected_version_give_one_commit_and_seven_conflicts(
    postgres_url: str,
) -> None:
    open_workspace(postgres_url, "ws-cas")
    reports = in_processes(postgres_url, "ws-cas", 1, expected_version=1)
    assert_one_winner([outcomes[0] for _, outcomes, _ in reports], 2)
    fresh = fresh_fold(postgres_url, "ws-cas")
    assert fresh["workspace_version"] == 2
    assert all(cached == fresh for _, _, cached in reports)


def test_eight_unconditional_writer_processes_all_land_with_contiguous_versions(postgres_url: str) -> None:
    count = 25
    open_workspace(postgres_url, "ws-busy")
    reports = in_processes(postgres_url, "ws-busy", count, expected_version=None)
    assert_all_landed(postgres_url, "ws-busy", {who: outcomes for who, outcomes, _ in reports}, count)
    fresh = fresh_fold(postgres_url, "ws-busy")
    assert all(cached == fresh for _, _, cached in reports)


def process_opener(url: str, barrier: Any, results: Any) -> None:
    try:
        barrier.wait(timeout=TIMEOUT)
        open_ledger(url, pool_size=1).close()
        results.put("opened")
    except BaseException:
        results.put(traceback.format_exc())
        raise


def test_eight_processes_opening_a_fresh_schema_at_once_all_succeed(postgres_url: str) -> None:
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(WRITERS), ctx.Queue()
    processes = [ctx.Process(target=process_opener, args=(postgres_url, barrier, results)) for _ in range(WRITERS)]
    for process in processes:
        process.start()
    try:
        reports = [results.get(timeout=TIMEOUT) for _ in processes]
    finally:
        for process in processes:
            process.join(timeout=TIMEOUT)
            if process.is_alive():
                process.kill()
                process.join()
    assert reports == ["opened"] * WRITERS
