"""Several writers at once, each a separate OS process ("spawn") with its own ledger and coordinator.

Every round has three phases, separated by a barrier: one raw writer alone (the baseline, in the parent
process), then every writer inserting raw rows, then every writer committing through its coordinator, each
on its own workspace. A phase's rate is all its commits over the time from the first writer's start to the
last writer's end.

Writers open their ledger one at a time: opening runs eventsourcing's ``CREATE OR REPLACE FUNCTION``, which
fails with "tuple concurrently updated" when two processes run it at the same moment.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from benchmarks.workload import (
    RawWriter,
    accept,
    clock,
    log_to_devnull,
    observations,
    open_workspace,
    raw_writer,
    schema_of,
    submit_all,
)
from caseboard.coordinator import Coordinator
from caseboard.ledger import open_ledger

TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Phase:
    kind: str  # "raw" or "commit"
    round: int
    started: float
    ended: float
    count: int


@dataclass(frozen=True)
class Failed:
    writer: int
    error: str


@dataclass(frozen=True)
class RoundRates:
    alone: float  # one raw writer (this process), just before the others start
    raw: float
    commit: float


def writer_process(
    index: int,
    postgres_url: str,
    ledger_url: str,
    payload: bytes,
    per_writer: int,
    rounds: int,
    opening: Any,
    barrier: Any,
    results: Any,
) -> None:
    log_to_devnull()
    try:
        with opening:
            ledger = open_ledger(ledger_url, pool_size=1)
        try:
            with raw_writer(postgres_url, schema_of(ledger_url), payload) as raw:
                _write(index, Coordinator(ledger), raw, per_writer, rounds, barrier, results)
        finally:
            ledger.close()
    except BaseException as error:
        barrier.abort()
        results.put(Failed(index, f"{type(error).__name__}: {error}"))
        raise


def _write(
    index: int,
    coordinator: Coordinator,
    raw: RawWriter,
    per_writer: int,
    rounds: int,
    barrier: Any,
    results: Any,
) -> None:
    workspaces = [f"ws-writer{index}-round{number}" for number in range(rounds)]
    for workspace_id in workspaces:
        accept(coordinator, open_workspace(workspace_id))
    contributions = [observations(workspace_id, 1, per_writer) for workspace_id in workspaces]
    barrier.wait()  # ready
    for number in range(rounds):
        barrier.wait()
        started = clock()
        raw.insert(f"raw-writer{index}-round{number}", per_writer)
        results.put(Phase("raw", number, started, clock(), per_writer))
        barrier.wait()
        started = clock()
        submit_all(coordinator, contributions[number])
        results.put(Phase("commit", number, started, clock(), per_writer))
        barrier.wait()


def run_writers(ledger_url: str, alone: RawWriter, *, writers: int, per_writer: int, rounds: int) -> list[RoundRates]:
    """Per round: one raw writer alone (here, while the others wait), then ``writers`` processes inserting
    raw rows, then the same processes committing through their coordinators."""
    context = multiprocessing.get_context("spawn")
    opening, results = context.Lock(), context.Queue()
    barrier = context.Barrier(writers + 1, timeout=TIMEOUT_S)
    common = (alone.postgres_url, ledger_url, alone.payload, per_writer, rounds, opening, barrier, results)
    processes = [
        context.Process(target=writer_process, args=(index, *common), name=f"bench-writer-{index}")
        for index in range(writers)
    ]
    for process in processes:
        process.start()
    alone_rates: list[float] = []
    try:
        barrier.wait()  # every writer has opened its workspaces and parsed its contributions
        for number in range(rounds):
            started = clock()
            alone.insert(f"raw-alone-round{number}", writers * per_writer)
            alone_rates.append(writers * per_writer / (clock() - started))
            barrier.wait()  # raw rows
            barrier.wait()  # commits
            barrier.wait()  # round over
        phases = _collect(results, processes, 2 * writers * rounds)
    except threading.BrokenBarrierError:
        _collect(results, processes, 1)  # raises with the failed writer's error
        raise
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
    return [
        RoundRates(rate, _rate(phases[("raw", n)]), _rate(phases[("commit", n)])) for n, rate in enumerate(alone_rates)
    ]


def _collect(results: Any, processes: list[Any], count: int) -> dict[tuple[str, int], list[Phase]]:
    phases: dict[tuple[str, int], list[Phase]] = defaultdict(list)
    deadline = clock() + TIMEOUT_S
    received = 0
    while received < count:
        try:
            message = results.get(timeout=1.0)
        except queue.Empty:
            crashed = [p.name for p in processes if p.exitcode not in (None, 0)]
            if crashed or clock() > deadline:
                raise RuntimeError(f"the writers did not finish (crashed: {crashed or 'none'})") from None
            continue
        if isinstance(message, Failed):
            raise RuntimeError(f"writer {message.writer} failed: {message.error}")
        phases[(message.kind, message.round)].append(message)
        received += 1
    return phases


def _rate(phases: list[Phase]) -> float:
    return sum(p.count for p in phases) / (max(p.ended for p in phases) - min(p.started for p in phases))
