"""Dispatch: commit-to-worker latency with LISTEN/NOTIFY, and notifications/s against bare dramatiq.

- ``commit_to_worker_p50_ms`` / ``_p99_ms``: commits paced at 50/s on PostgreSQL; the clock starts when
  ``Coordinator.submit`` is called (so it includes the commit itself) and stops when the worker's actor
  starts on the commit's history notification. The dispatcher waits on LISTEN, with its fallback poll.
- ``dispatch_vs_raw_dramatiq``: notifications per second from the outbox to a no-op actor (read, route,
  send, store the position and deliveries), over a bare loop that sends no-op messages to the same kind of
  worker and processes them, in the same run, on the same Redis. Both use one worker with 2 threads and a
  prefetch of 100 and the same idle poll ceiling (``WORKER_TIMEOUT_MS``).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import dramatiq
import redis

from benchmarks.context import BenchContext, median
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.dispatcher.broker import BrokerConfig, declare_consumer, make_broker, message_from
from caseboard.dispatcher.follower import DispatchConfig
from caseboard.dispatcher.store import DispatchStore
from caseboard.logs import configure_logging
from caseboard.settings import Settings
from caseboard.workers.live import PREFETCH, WORKER_TIMEOUT_MS, build_dispatcher, waiter

QUEUES = ("caseboard.history", "caseboard.snapshot", "caseboard.planner", "caseboard.reporter")


class Counter:
    def __init__(self) -> None:
        self.count = 0
        self.arrivals: dict[int, float] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> None:
        now = time.perf_counter()
        with self.lock:
            self.count += 1
            if body.get("kind") == "commit":
                self.arrivals.setdefault(int(body["workspace_version"]), now)

    def wait_for(self, expected: Callable[[], int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while self.count < expected():
            if time.monotonic() > deadline:
                raise RuntimeError(f"only {self.count} of {expected()} messages processed in {timeout}s")
            time.sleep(0.002)


def _worker(broker: dramatiq.Broker, handle: Callable[[dict[str, Any]], None]) -> dramatiq.Worker:
    for queue in QUEUES:
        declare_consumer(broker, queue, handle)
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=WORKER_TIMEOUT_MS)
    worker.queue_prefetch = PREFETCH
    worker.start()
    return worker


def _broker(ctx: BenchContext) -> tuple[dramatiq.Broker, Callable[[], None]]:
    namespace = f"bench-{uuid.uuid4().hex[:10]}"
    broker = make_broker(BrokerConfig(url=ctx.redis_url, namespace=namespace))

    def cleanup() -> None:
        broker.close()
        client = redis.Redis.from_url(ctx.redis_url)
        keys = list(client.scan_iter(match=f"{namespace}*"))
        if keys:
            client.delete(*keys)
        client.close()

    return broker, cleanup


def _contribution(
    workspace: str, items: list[dict[str, Any]], principal: str = "op", role: str = "operator"
) -> Any:
    return parse_contribution(
        json.dumps(
            {"workspace_id": workspace, "author": {"principal": principal, "role": role}, "items": items}
        )
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


def latency(ctx: BenchContext, commits: int) -> tuple[float, float]:
    with ctx.fresh_schema() as url:
        app = build_app(Settings(database_url=url, redis_url=ctx.redis_url))
        store = DispatchStore(url)
        broker, cleanup = _broker(ctx)
        counter = Counter()
        worker = _worker(broker, counter)
        stop = threading.Event()
        wait, close = waiter(app, stop)
        dispatcher = build_dispatcher(app, store, broker, DispatchConfig(poll_s=0.5))
        follower = threading.Thread(target=dispatcher.run, args=(stop, wait), daemon=True)
        follower.start()
        try:
            coordinator = app.coordinator()
            started: dict[int, float] = {}
            started[1] = time.perf_counter()
            coordinator.submit(_contribution("bench-latency", [OPEN]))
            tick = time.perf_counter()
            for n in range(2, commits + 1):
                tick += 1 / 50
                time.sleep(max(0.0, tick - time.perf_counter()))
                started[n] = time.perf_counter()
                outcome = coordinator.submit(
                    _contribution(
                        "bench-latency",
                        [{"type": "question", "id": f"q-{n}", "text": "what changed?"}],
                        "planner-1",
                        "planner",
                    )
                )
                assert outcome["ok"], outcome
            counter.wait_for(lambda: commits, timeout=30)
        finally:
            stop.set()
            follower.join(timeout=5)
            close()
            worker.stop()
            cleanup()
            store.close()
            app.close()
    gaps = sorted((counter.arrivals[v] - started[v]) * 1000 for v in started if v in counter.arrivals)
    p50 = statistics.median(gaps)
    p99 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))]
    return p50, p99


def raw_rate(ctx: BenchContext, messages: int) -> float:
    broker, cleanup = _broker(ctx)
    counter = Counter()
    worker = _worker(broker, counter)
    body = json.dumps({"kind": "noop", "workspace_version": 0})
    try:
        for queue in QUEUES:
            broker.declare_queue(queue)
        start = time.perf_counter()
        for _ in range(messages):
            broker.enqueue(message_from("caseboard.history", body))
        counter.wait_for(lambda: messages, timeout=120)
        return messages / (time.perf_counter() - start)
    finally:
        worker.stop()
        cleanup()


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
        broker, cleanup = _broker(ctx)
        counter = Counter()
        worker = _worker(broker, counter)
        dispatcher = build_dispatcher(app, store, broker, DispatchConfig(batch=500))
        try:
            start = time.perf_counter()
            while dispatcher.pass_once():
                pass
            delivered = int(store.status("dispatcher")["delivered"])
            counter.wait_for(lambda: delivered, timeout=120)
            return delivered / (time.perf_counter() - start), delivered
        finally:
            worker.stop()
            cleanup()
            store.close()
            app.close()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json")
    commits = 100 if ctx.quick else 2000
    p50s, p99s, ratios = [], [], []
    for _ in range(ctx.rounds):
        p50, p99 = latency(ctx, 50 if ctx.quick else 500)
        dispatched, delivered = dispatch_rate(ctx, commits)
        raw = raw_rate(ctx, delivered)
        print(
            f"commit-to-worker p50 {p50:.1f} ms, p99 {p99:.1f} ms at 50 commits/s; "
            f"dispatch {dispatched:.0f}/s vs raw dramatiq {raw:.0f}/s ({delivered} notifications)",
            flush=True,
        )
        p50s.append(p50)
        p99s.append(p99)
        ratios.append(dispatched / raw)
    return {
        "commit_to_worker_p50_ms": median(p50s),
        "commit_to_worker_p99_ms": median(p99s),
        "dispatch_vs_raw_dramatiq": median(ratios),
    }
