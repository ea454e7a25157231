"""Servers only the sources' tests use, each on a free port of 127.0.0.1, stopped by whoever started it. Those
the quickstart shares (Prometheus, Alertmanager, TLS servers and chains, ``Serving``) are caseboard.pilot.servers.

metrics_target   a process exposing ``prometheus_client`` metrics that change: authentication failures
                 counted on two instances, the second one's from a moment on (before and after a change)
counter_target   metrics served from the test's process, with a counter the test increments
RecordingProxy   a reverse proxy in front of a server, recording every request it was sent
FaultServer      an HTTP server that hangs, answers with warnings, answers 10 MB or drops mid-answer
"""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest

from caseboard.pilot.servers import Serving, free_port, wait_for

TARGET_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from prometheus_client import Counter, start_http_server
    failures = Counter("auth_failures", "authentication failures", ["instance"])
    start_http_server(int(sys.argv[1]), addr="127.0.0.1")
    while True:
        failures.labels("payments-api-1").inc(0)
        failures.labels("payments-api-2").inc(1)  # failing from the start: before the change
        if os.path.exists(sys.argv[2]):
            failures.labels("payments-api-3").inc(1)  # failing after the change only
        time.sleep(0.2)
    """
)


@contextmanager
def metrics_target(change: Path) -> Iterator[str]:
    """``host:port`` of a process exposing changing metrics; the change is made when the file ``change`` exists."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", TARGET_SCRIPT, str(port), str(change)])
    try:
        wait_for(f"http://127.0.0.1:{port}/metrics")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def counter_target() -> Iterator[tuple[str, Counter]]:
    """``host:port`` of metrics served from this process, and their counter ``auth_failures_total``, which the
    test increments while it wants authentication to fail."""
    registry = CollectorRegistry()
    failures = Counter("auth_failures", "authentication failures", registry=registry)

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = generate_latest(registry)
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    serving = Serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics))
    try:
        yield f"127.0.0.1:{serving.server.server_address[1]}", failures
    finally:
        serving.stop()


class RecordingProxy:
    """A reverse proxy that records each request's method, path and query, and forwards it unchanged."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.received: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _any(self) -> None:
                proxy.received.append((self.command, self.path))
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                reply = httpx.request(self.command, proxy.upstream + self.path, content=body, timeout=30)
                self.send_response(reply.status_code)
                self.send_header("content-type", reply.headers.get("content-type", "application/octet-stream"))
                self.send_header("content-length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = Serving(self.server)

    def close(self) -> None:
        self.serving.stop()


class FaultServer:
    """A Prometheus-shaped API that misbehaves by path: ``/hang/...`` never answers, ``/warn/...`` answers with
    a warning, ``/huge/...`` answers 10 MB, ``/drop/...`` sends half a response and closes the connection."""

    BODY = (
        b'{"status":"success","warnings":["partial response: store eu-1 unavailable"],"data":{"resultType":'
        b'"matrix","result":[{"metric":{"__name__":"auth_failures_total","instance":"a:1"},'
        b'"values":[[1700000000,"0"],[1700000015,"3"]]}]}}'
    )

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        self.release = threading.Event()
        fault = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                fault.received.append((self.command, self.path))
                mode = self.path.split("/")[1]
                if mode == "deny":  # a server that echoes the credential it was sent, in its error and a warning
                    said = self.headers.get("authorization", "")
                    body = json.dumps({"status": "error", "errorType": "unauthorized", "error": f"refused {said}"})
                    if self.path.startswith("/deny/ok"):
                        body = json.dumps(
                            {
                                "status": "success",
                                "warnings": [f"slow for {said}"],
                                "data": {"resultType": "matrix", "result": []},
                            }
                        )
                    payload = body.encode()
                    self.send_response(200 if self.path.startswith("/deny/ok") else 401)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if mode == "hang":
                    fault.release.wait(30)
                    return
                if mode == "huge":
                    chunk = b'{"status":"success","data":{"resultType":"matrix","result":[' + b" " * (1 << 20)
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(10 * len(chunk)))
                    self.end_headers()
                    for _ in range(10):
                        try:
                            self.wfile.write(chunk)
                        except OSError:
                            return
                    return
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(fault.BODY)))
                self.end_headers()
                if mode == "drop":
                    self.wfile.write(fault.BODY[: len(fault.BODY) // 2])
                    self.wfile.flush()
                    self.close_connection = True  # the server closes it now, half the body short
                    return
                self.wfile.write(fault.BODY)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = Serving(self.server)

    def close(self) -> None:
        self.release.set()
        self.serving.stop()
