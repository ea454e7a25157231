"""HTTP submit throughput and p99 latency, against the same commits made in-process in the same run.

Both sides commit the same contributions (one observation each) to PostgreSQL, from the same number of
concurrent writers, each on its own workspace. The HTTP side is ``caseboard serve`` in its own process (as
deployed: uvicorn, authentication, body validation, JSON), driven over one keep-alive connection per writer
(``KeepAlive``: ``http.client`` parses each response's headers with the email package, ~160 us of CPU a
request, which this two-core machine would take from the server it measures); the in-process side calls
``Coordinator.submit`` directly.
Logging is at ``warning`` on both sides. ``http_vs_inprocess`` is the ratio of commits per second (goal
>= 0.5).
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from benchmarks.context import BenchContext, median, p99_of
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.logs import configure_logging
from caseboard.settings import Settings

WRITERS = 4
SERVER_WORKERS = int(os.environ.get("CASEBOARD_BENCH_HTTP_WORKERS", "1"))
LIMITS = {
    "max_selected_items": 10**6,
    "max_investigation_cycles": 6,
    "max_open_questions": 10,
    "max_proposals": 10,
    "max_pending_work": 10,
}


def _open(workspace_id: str) -> dict[str, Any]:
    return {
        "workspace_id": workspace_id,
        "author": {"principal": "operator", "role": "operator"},
        "items": [
            {
                "type": "open",
                "goal": "benchmark",
                "runtime_limits": LIMITS,
                "execution_mode": "read_only",
                "scope": {"tenant_id": "bench", "environment": "bench", "service": "bench"},
            }
        ],
    }


def _observation(obs_id: str) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": "authentication failures on payments-api-3",
        "source": {"system": "auth-logs", "instance": "payments-api-3"},
        "event_time": "2026-03-02T13:57:00Z",
        "event_time_quality": "verified",
        "evidence_ref": f"artifact://logs/{obs_id}",
    }


def _run_writers(writers: int, commits: int, submit: Callable[[int, int], None]) -> tuple[float, list[float]]:
    """Each writer makes ``commits`` submissions; returns (commits per second, latencies in seconds)."""
    barrier = threading.Barrier(writers + 1)
    latencies: list[list[float]] = [[] for _ in range(writers)]

    def writer(n: int) -> None:
        barrier.wait()
        for i in range(commits):
            started = time.perf_counter()
            submit(n, i)
            latencies[n].append(time.perf_counter() - started)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    return writers * commits / elapsed, [x for per in latencies for x in per]


@contextmanager
def _server_process(database_url: str) -> Iterator[int]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    env = {**os.environ, "CASEBOARD_DATABASE_URL": database_url, "CASEBOARD_LOG_LEVEL": "warning"}
    process = subprocess.Popen(
        [sys.executable, "-m", "caseboard", "serve", "--port", str(port), "--workers", str(SERVER_WORKERS)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                connection.request("GET", "/health")
                if connection.getresponse().status == 200:
                    break
            except OSError as error:
                if process.poll() is not None or time.monotonic() > deadline:
                    reason = process.stderr.read() if process.stderr else b""
                    raise RuntimeError(f"caseboard serve did not start: {reason!r}") from error
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=30)


class KeepAlive:
    """One HTTP/1.1 keep-alive connection that POSTs JSON with a bearer key and reads each response up to
    its Content-Length (the server sends no other kind)."""

    def __init__(self, port: int, token: str) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.headers = f"Host: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n"
        self.buffer = b""

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        head = f"POST {path} HTTP/1.1\r\n{self.headers}Content-Length: {len(body)}\r\n\r\n"
        self.sock.sendall(head.encode() + body)
        while b"\r\n\r\n" not in self.buffer:
            self._receive()
        head_bytes, _, rest = self.buffer.partition(b"\r\n\r\n")
        self.buffer = rest
        lines = head_bytes.split(b"\r\n")
        status = int(lines[0].split()[1])
        fields = dict(line.split(b":", 1) for line in lines[1:])
        length = int({name.lower(): value for name, value in fields.items()}[b"content-length"])
        while len(self.buffer) < length:
            self._receive()
        payload, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, payload

    def _receive(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def _submit_body(workspace_id: str, writer: int, i: int) -> dict[str, Any]:
    author = {"principal": f"specialist-{writer}", "role": "specialist"}
    return {"workspace_id": workspace_id, "author": author, "items": [_observation(f"obs-{i}")]}


def _round(url: str, commits: int) -> tuple[tuple[float, list[float]], tuple[float, list[float]]]:
    """One round on a fresh schema: ((in-process rate, latencies), (HTTP rate, latencies))."""
    app = build_app(Settings(), database_url=url)
    keys = open_key_store(url)
    try:
        coordinator = app.coordinator()
        for n in range(WRITERS):
            for side in ("local", "http"):
                assert coordinator.submit(parse_contribution(_open(f"{side}-{n}")))["ok"]

        def local(n: int, i: int) -> None:
            outcome = coordinator.submit(parse_contribution(_submit_body(f"local-{n}", n, i)))
            assert outcome["ok"], outcome

        in_process = _run_writers(WRITERS, commits, local)
        tokens = [keys.create(f"specialist-{n}", (Role.SPECIALIST,), "bench").token for n in range(WRITERS)]
        with _server_process(url) as port:
            connections = [KeepAlive(port, tokens[n]) for n in range(WRITERS)]

            def remote(n: int, i: int) -> None:
                body = json.dumps({"items": [_observation(f"obs-{i}")]}).encode()
                status, payload = connections[n].post(f"/workspaces/http-{n}/contributions", body)
                assert status == 201, payload

            over_http = _run_writers(WRITERS, commits, remote)
            for connection in connections:
                connection.close()
        return in_process, over_http
    finally:
        keys.close()
        app.close()


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", cache=True)  # the section has a process of its own
    commits = 50 if ctx.quick else 1000
    http_rates, local_rates, http_p99s, local_p99s = [], [], [], []
    for round_number in range(ctx.rounds):
        with ctx.fresh_schema() as url:
            (local_rate, local_latencies), (http_rate, http_latencies) = _round(url, commits)
        http_rates.append(http_rate)
        local_rates.append(local_rate)
        http_p99s.append(p99_of(http_latencies) * 1000)
        local_p99s.append(p99_of(local_latencies) * 1000)
        print(
            f"  round {round_number + 1}, {WRITERS} writers: in-process {local_rate:.0f} commits/s "
            f"(p99 {local_p99s[-1]:.1f} ms), HTTP {http_rate:.0f} commits/s (p99 {http_p99s[-1]:.1f} ms)",
            flush=True,
        )
    return {
        "http_submit_per_s": median(http_rates),
        "inprocess_submit_per_s": median(local_rates),
        "http_vs_inprocess": median([h / i for h, i in zip(http_rates, local_rates, strict=True)]),
        "http_submit_p99_ms": median(http_p99s),
        "inprocess_submit_p99_ms": median(local_p99s),
    }
