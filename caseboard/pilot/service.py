"""The quickstart's demo service (``python -m caseboard.pilot.service``): payments-api, three instances.

It exposes Prometheus metrics with ``prometheus_client`` and serves two TLS endpoints with different chains:
``payments-api-1`` presents the old chain, ``payments-api-3`` the new one (made with ``cryptography``).

    auth_failures_total{service,instance}  payments-api-2 fails from the start, about once a second;
                                           payments-api-3 fails only after the certificate change, 4 a second
    certificate_changes_total{...}         payments-api-3's certificate changed once, when ``--change-file``
                                           appears

So the obvious suspect, the certificate change, comes after the first failures. It prints one JSON line with
its endpoints once everything listens, and runs until it is stopped.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from contextlib import ExitStack
from pathlib import Path

from prometheus_client import CollectorRegistry, Counter, start_http_server

from caseboard.pilot.servers import make_chain, tls_server

SERVICE = "payments-api"
FAILING_BEFORE = "payments-api-2"
CHANGED = "payments-api-3"
UNCHANGED = "payments-api-1"


def serve(metrics_port: int, tls_ports: tuple[int, int], change_file: Path, stop: threading.Event) -> None:
    registry = CollectorRegistry()
    labels = ["service", "instance"]
    failures = Counter("auth_failures", "authentication failures", labels, registry=registry)
    changes = Counter("certificate_changes", "certificate changes", labels, registry=registry)
    for instance in (UNCHANGED, FAILING_BEFORE, CHANGED):
        failures.labels(SERVICE, instance).inc(0)
        changes.labels(SERVICE, instance).inc(0)
    old, new = make_chain("Payments Root CA 2024"), make_chain("Payments Root CA 2026")
    with ExitStack() as stack:
        endpoints = {
            UNCHANGED: stack.enter_context(tls_server(*old, port=tls_ports[0]))[0],
            CHANGED: stack.enter_context(tls_server(*new, port=tls_ports[1]))[0],
        }
        server, thread = start_http_server(metrics_port, addr="127.0.0.1", registry=registry)
        stack.callback(thread.join, 5)
        stack.callback(server.shutdown)
        sys.stdout.write(json.dumps({"metrics": f"127.0.0.1:{metrics_port}", "tls": endpoints}) + "\n")
        sys.stdout.flush()
        changed = False
        tick = 0
        while not stop.wait(0.25):
            tick += 1
            if tick % 4 == 0:
                failures.labels(SERVICE, FAILING_BEFORE).inc()
            if not changed and change_file.exists():
                changed = True
                changes.labels(SERVICE, CHANGED).inc()
            if changed:
                failures.labels(SERVICE, CHANGED).inc()


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m caseboard.pilot.service", description=__doc__.splitlines()[0])
    parser.add_argument("--metrics-port", type=int, required=True)
    parser.add_argument("--tls-ports", type=int, nargs=2, required=True)
    parser.add_argument("--change-file", type=Path, required=True)
    args = parser.parse_args()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    serve(args.metrics_port, tuple(args.tls_ports), args.change_file, stop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
