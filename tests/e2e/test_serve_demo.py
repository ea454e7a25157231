"""``caseboard serve --demo``: incident-042 loaded, demo keys and a curl line printed, tenants kept apart."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_healthy(base: str, process: subprocess.Popen[bytes], deadline: float) -> None:
    """Until the server at ``base`` answers ``/health``; it must neither exit nor take past ``deadline``."""
    while True:
        try:
            if httpx.get(f"{base}/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline and process.poll() is None, "the server did not start"
        time.sleep(0.05)


def serving(url: str, *options: str) -> tuple[str, list[str], dict[str, str]]:
    """The base URL, command line and environment of ``caseboard serve`` on ``url``, on a free port."""
    port = free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_LEVEL": "warning"}
    return f"http://127.0.0.1:{port}", [sys.executable, "-m", "caseboard", "serve", "--port", str(port), *options], env


def test_serve_demo_prints_keys_and_a_curl_line_that_works(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [
        sys.executable,
        "-m",
        "caseboard",
        "serve",
        "--demo",
        "--port",
        str(port),
        "--demo-dir",
        str(tmp_path / "demo"),
    ]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            lines: list[str] = []
            deadline = time.monotonic() + 60
            assert process.stdout is not None
            while not any("events?timeout_s" in line for line in lines):
                assert time.monotonic() < deadline and process.poll() is None, "".join(lines)
                lines.append(process.stdout.readline())
            printed = "".join(lines)
            assert f"http://127.0.0.1:{port}/docs" in printed
            assert "incident-042 loaded (22 versions" in printed  # what `make run` tells, cited evidence included
            assert f"http://127.0.0.1:{port}/ui/" in printed
            curl = next(line for line in lines if "/view?budget_chars" in line)
            token = re.search(r"Bearer (cbk_\S+)'", curl)
            assert token is not None
            outsider = re.search(r"tenant-b-operator\s+operator\s+(cbk_\S+)", printed)
            assert outsider is not None
            base = f"http://127.0.0.1:{port}"
            while True:
                try:
                    view = httpx.get(
                        f"{base}/workspaces/incident-042/view",
                        params={"budget_chars": 4000},
                        headers={"Authorization": f"Bearer {token.group(1)}"},
                    )
                    break
                except httpx.ConnectError:
                    assert time.monotonic() < deadline, "the demo server did not answer"
                    time.sleep(0.05)
            assert view.status_code == 200
            assert view.json()["built_from_version"] == 22
            hidden = httpx.get(
                f"{base}/workspaces/incident-042", headers={"Authorization": f"Bearer {outsider.group(1)}"}
            )
            assert hidden.status_code == 404
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_serve_with_two_workers_on_postgres_commits_every_write_once(postgres_url: str) -> None:
    from caseboard.domain.items import Role
    from caseboard.keys import open_key_store
    from tests.http_server import observation, open_body

    keys = open_key_store(postgres_url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    specialist = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    base, command, env = serving(postgres_url, "--workers", "2")
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            wait_until_healthy(base, process, time.monotonic() + 60)
            auth = {"Authorization": f"Bearer {operator}"}
            assert httpx.post(f"{base}/workspaces", json=open_body("ws-workers"), headers=auth).status_code == 201
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {specialist}"}) as client:
                for i in range(20):  # new connections land on either worker
                    body = {"items": [observation(f"obs-{i}")]}
                    response = client.post(
                        "/workspaces/ws-workers/contributions", json=body, headers={"Connection": "close"}
                    )
                    assert response.status_code == 201, response.text
            projection = httpx.get(f"{base}/workspaces/ws-workers", headers=auth).json()
            assert projection["workspace_version"] == 21
            assert len(projection["observations"]) == 20
        finally:
            process.terminate()
            process.wait(timeout=30)


def test_serve_stopped_by_sigterm_closes_its_ledger_and_exits_0(tmp_path: Path) -> None:
    """A service manager stops ``caseboard serve`` with SIGTERM. uvicorn shuts down gracefully, then raises the
    signal again; the process must still close its ledger (SQLite checkpoints its write-ahead log into the
    database file and removes it only on a clean close) and exit 0, as the dispatcher and workers do."""
    from caseboard.domain.items import Role
    from caseboard.keys import open_key_store
    from tests.http_server import open_body

    url = f"sqlite:///{tmp_path}/ledger.db"
    with contextlib.closing(open_key_store(url)) as keys:
        operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    base, command, env = serving(url)
    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as process:
        try:
            wait_until_healthy(base, process, time.monotonic() + 60)
            auth = {"Authorization": f"Bearer {operator}"}
            assert httpx.post(f"{base}/workspaces", json=open_body("ws-term"), headers=auth).status_code == 201
            assert (tmp_path / "ledger.db-wal").exists()
        finally:
            process.terminate()
            process.wait(timeout=30)
        stderr = process.stderr.read().decode() if process.stderr else ""
    assert process.returncode == 0, stderr[-2000:]
    assert not (tmp_path / "ledger.db-wal").exists()
    assert "Traceback" not in stderr
