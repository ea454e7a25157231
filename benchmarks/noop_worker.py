"""A dramatiq worker process with no-op actors, for the dispatch benchmark: it counts what it processed in
Redis and, for history notices, records when each workspace version arrived (wall clock).

    python -m benchmarks.noop_worker REDIS_URL NAMESPACE
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from typing import Any

import dramatiq
import redis

from caseboard.dispatcher.broker import BrokerConfig, declare_consumer, make_broker
from caseboard.workers.live import PREFETCH, WORKER_TIMEOUT_MS

QUEUES = ("caseboard.history", "caseboard.snapshot", "caseboard.planner", "caseboard.reporter")


def main(redis_url: str, namespace: str) -> int:
    broker = make_broker(BrokerConfig(url=redis_url, namespace=namespace))
    client = redis.Redis.from_url(redis_url)
    counter, arrivals = f"{namespace}:bench:processed", f"{namespace}:bench:arrivals"

    def handle(body: dict[str, Any]) -> None:
        now = time.time()
        pipe = client.pipeline(transaction=False)
        pipe.incr(counter)
        if body.get("kind") == "commit":
            pipe.hsetnx(arrivals, str(body["workspace_version"]), repr(now))
        pipe.execute()

    for queue in QUEUES:
        declare_consumer(broker, queue, handle)
    worker = dramatiq.Worker(broker, worker_threads=2, worker_timeout=WORKER_TIMEOUT_MS)
    worker.queue_prefetch = PREFETCH
    worker.start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("ready", flush=True)
    stop.wait()
    worker.stop()
    broker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
