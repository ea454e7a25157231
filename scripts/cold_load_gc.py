"""Cold loads of a 10,000-commit workspace, each with the garbage collections that ran inside it.

``make bench``'s ``cold_load_10000_commits_ms`` is the p99 of 30 loads, in practice the slowest. This runs the
same workspace (``benchmarks/scale.py::cold_load``: played on the in-memory ledger, bulk-appended to
PostgreSQL with its snapshots) and records, for each load, the collections ``gc.callbacks`` saw, so that a slow
load can be told apart from a collection inside it.

    .venv/bin/python scripts/cold_load_gc.py 'postgresql://postgres@127.0.0.1:5432/test?schema=cold_gc'
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.scale import bulk_append
from benchmarks.workload import accept, log_to_devnull, observation, open_workspace
from caseboard.coordinator import Coordinator
from caseboard.ledger import open_ledger
from caseboard.projections.workspaces import Workspaces

WORKSPACE = "ws-cold"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("database_url", help="a PostgreSQL URL whose schema is new (it is filled, not emptied)")
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=60)
    args = parser.parse_args()
    log_to_devnull()
    memory = open_ledger("memory://")
    coordinator = Coordinator(memory)
    accept(coordinator, open_workspace(WORKSPACE))
    for number in range(1, args.commits):
        accept(coordinator, observation(WORKSPACE, number))
    ledger = open_ledger(args.database_url)
    reducer = coordinator.workspaces.reducer.name
    bulk_append(ledger, iter([memory.read(WORKSPACE, after=0)]))
    ledger.snapshots.insert_events(list(memory.snapshots.select_events(f"{reducer}/{WORKSPACE}", gt=0, limit=10**6)))
    collections: list[tuple[int, float]] = []
    began: dict[int, float] = {}

    def timed(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            began[info["generation"]] = time.perf_counter()
        else:
            collections.append((info["generation"], time.perf_counter() - began[info["generation"]]))

    gc.callbacks.append(timed)
    print(f"{len(gc.get_objects())} objects tracked before the loads")
    loads = []
    for _ in range(args.loads):
        collections.clear()
        workspaces = Workspaces(ledger)
        started = time.perf_counter()
        workspaces.current(WORKSPACE)
        loads.append(((time.perf_counter() - started) * 1e3, list(collections)))
    ledger.close()
    loads.sort()
    for ms, seen in loads[-5:]:
        print(f"{ms:.1f} ms, collections (generation, ms): {[(g, round(s * 1e3, 1)) for g, s in seen]}")
    full = sum(1 for _, seen in loads for generation, _ in seen if generation == 2)
    print(f"median {loads[len(loads) // 2][0]:.1f} ms; {full} full collections in {len(loads)} loads")


if __name__ == "__main__":
    main()
