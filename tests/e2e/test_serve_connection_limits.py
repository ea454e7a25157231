"""``caseboard serve`` closes idle and slow connections and holds at most ``--max-connections`` (issue 10,
item 11; ADR 0041), and a busy port is one line and exit status 2, with nothing said about serving (issue
11). Against a real server on a free loopback port, with short limits so that the test is quick."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_serve_demo import wait_until_healthy
from tests.private_services import free_port

HEADER_S = 1.0
BODY_S = 1.0
KEEP_ALIVE_S = 1
MAX_CONNECTIONS = 16
SLACK_S = 1.5
"""How much later than its limit a connection may be closed (the server's timer, a busy machine)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    folder = tmp_path_factory.mktemp("limits")
    port = free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": f"sqlite:///{folder}/ledger.db", "CASEBOARD_LOG_LEVEL": "warning"}
    command = [
        sys.executable, "-m", "caseboard", "serve", "--port", str(port),
        "--header-timeout", str(HEADER_S), "--body-timeout", str(BODY_S),
        "--keep-alive", str(KEEP_ALIVE_S), "--max-connections", str(MAX_CONNECTIONS),
    ]  # fmt: skip
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            wait_until_healthy(f"http://127.0.0.1:{port}", process, time.monotonic() + 60)
            yield port
        finally:
            process.kill()


def connect(port: int) -> socket.socket:
    conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    return conn


def read_until_closed(conn: socket.socket, within_s: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes the connection, and when it did (seconds from now)."""
    started = time.monotonic()
    received = b""
    conn.settimeout(0.1)
    while time.monotonic() - started < within_s:
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    else:
        raise AssertionError(f"the connection was still open after {within_s} s")
    return received, time.monotonic() - started


def wait_for_free_slots(port: int) -> None:
    """Until the server has let go of the connections of an earlier test (they close on its timers)."""
    deadline = time.monotonic() + HEADER_S + KEEP_ALIVE_S + 5
    while True:
        conn = connect(port)
        conn.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer, _ = read_until_closed(conn, 10)
        conn.close()
        if answer.startswith(b"HTTP/1.1 200"):
            return
        assert time.monotonic() < deadline, answer[:200]
        time.sleep(0.1)


def test_connections_that_send_nothing_are_closed_after_the_header_timeout(server: int) -> None:
    idle = [connect(server) for _ in range(8)]
    opened = time.monotonic()
    for conn in idle:
        received, _ = read_until_closed(conn, HEADER_S + SLACK_S - (time.monotonic() - opened))
        assert received == b""  # nothing was asked, nothing is answered
        conn.close()


def test_a_request_whose_headers_trickle_in_gets_408_and_is_closed(server: int) -> None:
    conn = connect(server)
    conn.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n")
    started = time.monotonic()
    answer = b""
    conn.settimeout(0.2)
    while time.monotonic() - started < HEADER_S + SLACK_S:
        try:
            conn.sendall(b"x")  # a header name, one byte at a time, never finished
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
        if not chunk:
            break
        answer += chunk
    else:
        raise AssertionError("a slow-header connection was still open")
    conn.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
    assert body["ok"] is False and body["reason"] == "invalid" and "headers" in body["message"]


def test_a_request_whose_body_trickles_in_gets_408_and_is_closed(server: int) -> None:
    conn = connect(server)
    head = b"POST /workspaces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n"
    conn.sendall(head + b"{")
    started = time.monotonic()
    answer = b""
    conn.settimeout(0.2)
    while time.monotonic() - started < BODY_S + SLACK_S:
        try:
            conn.sendall(b" ")
            chunk = conn.recv(65536)
        except TimeoutError:
            continue
        except (BrokenPipeError, ConnectionResetError):
            break
        if not chunk:
            break
        answer += chunk
    else:
        raise AssertionError("a slow-body connection was still open")
    conn.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b'"reason": "invalid"' in answer and b"body" in answer


def test_an_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(server: int) -> None:
    conn = connect(server)
    conn.sendall(b"GET /health HTTP/1.1\r\nhost: x\r\n\r\n")
    conn.settimeout(5)
    first = conn.recv(65536)
    assert first.startswith(b"HTTP/1.1 200"), first
    _, after = read_until_closed(conn, KEEP_ALIVE_S + SLACK_S)
    assert after >= KEEP_ALIVE_S - 0.2
    conn.close()


def test_connections_beyond_the_limit_get_503_and_are_closed_while_the_others_are_served(server: int) -> None:
    wait_for_free_slots(server)
    held = [connect(server) for _ in range(MAX_CONNECTIONS)]
    try:
        time.sleep(0.2)  # the server takes the held connections first (it accepts in order)
        extra = [connect(server) for _ in range(4)]
        for conn in extra:
            answer, _ = read_until_closed(conn, 5)
            conn.close()
            assert answer.startswith(b"HTTP/1.1 503"), answer
            body = json.loads(answer.split(b"\r\n\r\n", 1)[1])
            assert body["reason"] == "unavailable" and str(MAX_CONNECTIONS) in body["message"]
            assert b"retry-after: 1" in answer.lower()
        held[0].sendall(b"GET /health HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        answer, _ = read_until_closed(held[0], 5)
        assert answer.startswith(b"HTTP/1.1 200"), answer
    finally:
        for conn in held:
            conn.close()


def test_serve_on_a_busy_port_is_one_line_and_exit_status_2_and_never_says_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "CASEBOARD_DATABASE_URL": f"sqlite:///{tmp_path}/ledger.db"}
        done = subprocess.run(
            [sys.executable, "-m", "caseboard", "serve", "--port", str(port)],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 2
    assert "serving" not in done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and "in use" in lines[0], done.stderr
