"""Dispatch: commit-to-worker latency with LISTEN/NOTIFY, and notifications/s against bare dramatiq.

- ``commit_to_worker_p50_ms`` / ``_p99_ms``: commits paced at 50/s on PostgreSQL; the clock starts when
  ``Coordinator.submit`` is called (so it includes the commit itself) and stops when the worker's actor
  starts on the commit's history notification. The dispatcher waits on LISTEN, with its fallback poll.
  Beside it, for context, the two parts of that path: ``commit_to_worker_commit_p99_ms`` (the commit itself,
  until ``submit`` returns: its WAL flush waits on the disk) and ``landed_to_worker_p99_ms`` (from the return
  to the worker: NOTIFY, the outbox read, the send, the worker's poll of Redis).
- ``dispatch_vs_raw_dramatiq``: notifications per second from the outbox to a no-op actor (read, route,
  send, store the position and deliveries), over a bare loop that sends no-op messages to the same kind of
  worker and processes them, in the same run, on the same Redis. Both use one worker process
  (``benchmarks.noop_worker``: 2 threads, prefetch 100, the same idle poll ceiling) beside the sender, as
  in production; its actors count in Redis, so both sides pay the same per-message bookkeeping.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import redis

from benchmarks.context import BenchContext, median, p99_of
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.broker import BrokerConfig, make_broker, message_from
from caseboard.dispatcher.follower import DispatchConfig
from caseboard.dispatcher.store import DispatchStore
from caseboard.logs import configure_logging
from caseboard.settings import Settings
from caseboard.workers.live import build_dispatcher, waiter


class NoopWorker:
    """The worker side, in its own process as in production: ``benchmarks.noop_worker``."""

    def __init__(self, ctx: BenchContext) -> None:
        self.namespace = f"bench-{uuid.uuid4().hex[:10]}"
        self.redis_url = ctx.redis_url
        self.client = redis.Redis.from_url(ctx.redis_url)
        root = Path(__file__).resolve().parent.parent
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.noop_worker", ctx.redis_url, self.namespace],
            cwd=root,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != b"ready":
            raise RuntimeError("the benchmark worker did not start")
        self.broker = make_broker(BrokerConfig(url=ctx.redis_url, namespace=self.namespace))

    def processed(self) -> int:
        return int(self.client.get(f"{self.namespace}:bench:processed") or 0)

    def arrivals(self) -> dict[int, float]:
        raw = self.client.hgetall(f"{self.namespace}:bench:arrivals")
        return {int(k): float(v) for k, v in raw.items()}

    def wait_for(self, expected: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.processed() < expected:
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.processed()} of {expected} messages processed in {timeout}s")
            time.sleep(0.005)

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=20)
        self.broker.close()
        keys = list(self.client.scan_iter(match=f"{self.namespace}*"))
        if keys:
            self.client.delete(*keys)
        self.client.close()


def _contribution(workspace: str, items: list[dict[str, Any]], principal: str = "op", role: str = "operator") -> Any:
    return parse_contribution(
        json.dumps({"workspace_id": workspace, "author": {"principal": principal, "role": role}, "items": items})
    )


OPEN = {
    "type": "open",
    "scope": {"tenant_id": "t", "environment": "bench", "service": "s"},
    "goal": "bench",
    "execution_mode": "read_only",
    "runtime_limits": {
        "max_selected_items": 10**6,
        "max_investigation_cycles": 10,
        "max_open_questions": 10**6,
        "max_proposals": 10,
        "max_pending_work": 10,
    },
}


def latency(ctx: BenchContext, commits: int) -> dict[str, float]:
    with ctx.fresh_schema() as url:
        app = build_app(Settings(database_url=url, redis_url=ctx.redis_url))
        store = DispatchStore(url)
        worker = NoopWorker(ctx)
        stop = threading.Event()
        wait, close = waiter(app, stop)
        dispatcher = build_dispatcher(app, store, worker.broker, DispatchConfig(poll_s=0.5))
        follower = threading.Thread(target=dispatcher.run, args=(stop, wait), daemon=True)
        follower.start()
        try:
            coordinator = app.coordinator()
            started: dict[int, float] = {1: time.time()}
            coordinator.submit(_contribution("bench-latency", [OPEN]))
            landed: dict[int, float] = {1: time.time()}
            tick = time.perf_counter()
            for n in range(2, commits + 1):
                tick += 1 / 50
                time.sleep(max(0.0, tick - time.perf_counter()))
                started[n] = time.time()
                item = {"type": "question", "id": f"q-{n}", "text": "what changed?"}
                outcome = coordinator.submit(_contribution("bench-latency", [item], "planner-1", "planner"))
                landed[n] = time.time()
                assert outcome["ok"], outcome
            deadline = time.monotonic() + 30
            while len(arrivals := worker.arrivals()) < commits and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            stop.set()
            follower.join(timeout=5)
            close()
            worker.close()
            store.close()
            app.close()

    def to_worker_ms(since: dict[int, float]) -> list[float]:
        return [(arrivals[v] - since[v]) * 1000 for v in since if v in arrivals]

    return {
        "p50": statistics.median(to_worker_ms(started)),
        "p99": p99_of(to_worker_ms(started)),
        "commit_p99": p99_of([(landed[v] - started[v]) * 1000 for v in landed]),
        "landed_p99": p99_of(to_worker_ms(landed)),
    }


def raw_rate(ctx: BenchContext, messages: int) -> float:
    worker = NoopWorker(ctx)
    body = json.dumps({"kind": "noop", "workspace_version": 0})
    try:
        worker.broker.declare_queue("caseboard.history")
        start = time.perf_counter()
        for _ in range(messages):
            worker.broker.enqueue(message_from("caseboard.history", body))
        worker.wait_for(messages, timeout=120)
        return messages / (time.perf_counter() - start)
    finally:
        worker.close()


def dispatch_rate(ctx: BenchContext, commits: int, workspaces: int = 20) -> tuple[float, int]:
    with ctx.fresh_schema() as url:
        app = build_app(Settings(database_url=url, redis_url=ctx.redis_url))
        coordinator = app.coordinator()
        for w in range(workspaces):
            coordinator.submit(_contribution(f"bench-{w}", [OPEN]))
        for n in range(commits - workspaces):
            coordinator.submit(
                _contribution(
                    f"bench-{n % workspaces}",
                    [{"type": "question", "id": f"q-{n}", "text": "what changed?"}],
                    "planner-1",
                    "planner",
                )
            )
        store = DispatchStore(url)
        worker = NoopWorker(ctx)
        dispatcher = build_dispatcher(app, store, worker.broker, DispatchConfig(batch=500))
        try:
            start = time.perf_counter()
            while dispatcher.pass_once():
                pass
            delivered = int(store.status("dispatcher")["delivered"])
            worker.wait_for(delivered, timeout=120)
            return delivered / (time.perf_counter() - start), delivered
        finally:
            worker.close()
            store.close()
            app.close()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json", cache=True)  # the section has a process of its own
    commits = 100 if ctx.quick else 2000
    p50s, p99s, commit_p99s, landed_p99s, ratios = [], [], [], [], []
    for _ in range(ctx.rounds):
        figures = latency(ctx, 50 if ctx.quick else 500)
        p50, p99 = figures["p50"], figures["p99"]
        dispatched, delivered = dispatch_rate(ctx, commits)
        raw = raw_rate(ctx, delivered)
        print(
            f"commit-to-worker p50 {p50:.1f} ms, p99 {p99:.1f} ms at 50 commits/s "
            f"(the commit's own p99 {figures['commit_p99']:.1f} ms, landed-to-worker p99 "
            f"{figures['landed_p99']:.1f} ms); "
            f"dispatch {dispatched:.0f}/s vs raw dramatiq {raw:.0f}/s ({delivered} notifications)",
            flush=True,
        )
        p50s.append(p50)
        p99s.append(p99)
        commit_p99s.append(figures["commit_p99"])
        landed_p99s.append(figures["landed_p99"])
        ratios.append(dispatched / raw)
    return {
        "commit_to_worker_p50_ms": median(p50s),
        "commit_to_worker_p99_ms": median(p99s),
        "commit_to_worker_commit_p99_ms": median(commit_p99s),
        "landed_to_worker_p99_ms": median(landed_p99s),
        "dispatch_vs_raw_dramatiq": median(ratios),
    }
