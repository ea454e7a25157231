"""A ``caseboard serve`` killed with SIGKILL in the middle of an upload leaves no half artifact visible."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from caseboard.domain.items import Role
from caseboard.evidence import open_artifact_store
from caseboard.keys import open_key_store
from tests.e2e.test_serve_demo import free_port, wait_until_healthy

MiB = 1 << 20


def upload_then_kill(url: str, receiving: Callable[[], bool]) -> None:
    keys = open_key_store(url)
    token = keys.create("log-specialist", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    port = free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port)]
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            deadline = time.monotonic() + 60
            wait_until_healthy(f"http://127.0.0.1:{port}", process, deadline)
            with socket.create_connection(("127.0.0.1", port)) as conn:
                head = (
                    f"POST /artifacts HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
                    f"Content-Type: text/plain\r\nContent-Length: {64 * MiB}\r\n\r\n"
                )
                conn.sendall(head.encode())
                for _ in range(6):
                    conn.sendall(b"auth_failure payments-api-3\n" * (MiB // 28))
                while not receiving():  # the server has part of the body in the store's hands
                    assert time.monotonic() < deadline and process.poll() is None, "the upload never started"
                    time.sleep(0.02)
                os.kill(process.pid, signal.SIGKILL)
                process.wait(timeout=30)
        finally:
            process.kill()
    store = open_artifact_store(url)
    try:
        assert store.list("tenant-a") == []
    finally:
        store.close()


def test_a_killed_upload_leaves_nothing_in_the_file_store(tmp_path: Path) -> None:
    partial = tmp_path / "artifacts" / ".partial"
    upload_then_kill(
        f"sqlite:///{tmp_path}/ledger.db",
        lambda: any(p.stat().st_size >= MiB for p in partial.glob("*")) if partial.exists() else False,
    )
    assert not list((tmp_path / "artifacts").glob("*/*/*"))  # no bytes outside .partial either


@pytest.mark.postgres
def test_a_killed_upload_leaves_nothing_in_postgresql(postgres_url: str) -> None:
    base, _, query = postgres_url.partition("?")

    def receiving() -> bool:
        with psycopg.connect(base, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE %s",
                (f"%{query.removeprefix('schema=')}%caseboard_artifact_blocks%",),
            ).fetchone()
        return bool(row and row[0])

    upload_then_kill(postgres_url, receiving)
    schema = query.removeprefix("schema=")
    with psycopg.connect(base, autocommit=True) as conn:
        row = conn.execute(f'SELECT count(*) FROM "{schema}".caseboard_artifact_blocks').fetchone()
    assert row == (0,)
