"""Several writers at once, each a separate OS process ("spawn") with its own ledger and coordinator.

Every round has two phases released by a barrier: raw INSERTs, then commits through the coordinator, each
writer on its own workspace. A phase's rate is all its commits over the time from the first writer's start
to the last writer's end.

Writers open their ledger one at a time: opening runs eventsourcing's ``CREATE OR REPLACE FUNCTION``, which
fails with "tuple concurrently updated" when two processes run it at the same moment.
"""

from __future__ import annotations

import multiprocessing
import queue
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
    raw: float
    commit: float


def writer_process(
    index: int, postgres_url: str, ledger_url: str, payload: bytes, per_writer: int, rounds: int,
    opening: Any, barrier: Any, results: Any,
) -> None:  # fmt: skip
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
    index: int, coordinator: Coordinator, raw: RawWriter, per_writer: int, rounds: int,
    barrier: Any, results: Any,
) -> None:  # fmt: skip
    for number in range(rounds):
        workspace_id = f"ws-writer{index}-round{number}"
        accept(coordinator, open_workspace(workspace_id))
        contributions = observations(workspace_id, 1, per_writer)
        barrier.wait()
        started = clock()
        raw.insert(f"raw-writer{index}-round{number}", per_writer)
        results.put(Phase("raw", number, started, clock(), per_writer))
        barrier.wait()
        started = clock()
        submit_all(coordinator, contributions)
        results.put(Phase("commit", number, started, clock(), per_writer))


def run_writers(
    postgres_url: str, ledger_url: str, payload: bytes, *, writers: int, per_writer: int, rounds: int
) -> list[RoundRates]:
    """Total commits/s of ``writers`` processes, raw and through the coordinator, per round."""
    context = multiprocessing.get_context("spawn")
    opening, barrier, results = context.Lock(), context.Barrier(writers, timeout=TIMEOUT_S), context.Queue()
    processes = [
        context.Process(
            target=writer_process,
            args=(index, postgres_url, ledger_url, payload, per_writer, rounds, opening, barrier, results),
            name=f"bench-writer-{index}",
        )
        for index in range(writers)
    ]
    for process in processes:
        process.start()
    phases: dict[tuple[str, int], list[Phase]] = defaultdict(list)
    deadline = clock() + TIMEOUT_S
    try:
        received = 0
        while received < 2 * writers * rounds:
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
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.terminate()
                process.join()
    return [RoundRates(_rate(phases[("raw", n)]), _rate(phases[("commit", n)])) for n in range(rounds)]


def _rate(phases: list[Phase]) -> float:
    return sum(p.count for p in phases) / (max(p.ended for p in phases) - min(p.started for p in phases))
