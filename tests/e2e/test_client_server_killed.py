"""caseboard.client against a server killed with SIGKILL and started again: a submission in flight when the
server died is sent again with its idempotency key once the server is back, and lands exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from caseboard.client import Caseboard
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from tests.e2e.test_serve_demo import free_port, wait_until_healthy
from tests.http_server import LIMITS, observation

pytestmark = pytest.mark.postgres
SCOPE = {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"}


def test_submissions_across_a_killed_server_each_land_once(postgres_url: str) -> None:
    keys = open_key_store(postgres_url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    writer = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "CASEBOARD_DATABASE_URL": postgres_url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port)]

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_until_healthy(base, process, time.monotonic() + 60)
        return process

    answered: dict[str, int] = {}
    stop = threading.Event()
    failures: list[BaseException] = []

    def submit() -> None:
        try:
            with Caseboard(base, writer, retry_for_s=60, timeout_s=10) as board:
                number = 0
                while not stop.is_set() and number < 400:
                    outcome = board.submit("ws-kill", [observation(f"obs-{number}")], idempotency_key=f"k-{number}")
                    answered[f"obs-{number}"] = outcome["workspace_version"]
                    number += 1
        except BaseException as error:  # reported by the test's thread
            failures.append(error)

    first = start()
    second: subprocess.Popen[bytes] | None = None
    thread = threading.Thread(target=submit)
    try:
        with Caseboard(base, operator) as op:
            op.open("ws-kill", scope=SCOPE, goal="survive a crash", runtime_limits=LIMITS)
        thread.start()
        deadline = time.monotonic() + 60
        while len(answered) < 50:
            assert time.monotonic() < deadline and thread.is_alive(), failures
            time.sleep(0.01)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        before = len(answered)
        second = start()
        while len(answered) < before + 50:
            assert time.monotonic() < deadline + 60 and thread.is_alive(), failures
            time.sleep(0.01)
    finally:
        stop.set()
        thread.join(timeout=90)
        for process in (first, second):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=30)
    assert failures == []
    ledger = open_ledger(postgres_url)
    try:
        commits = ledger.read("tenant-a/ws-kill")
    finally:
        ledger.close()
    landed = [commit.items[0].id for commit in commits[1:]]  # type: ignore[union-attr]
    assert len(landed) == len(set(landed)), "a submission landed twice"
    assert landed == [f"obs-{n}" for n in range(len(landed))]  # none lost, in order
    assert {obs: dict(zip(landed, range(2, len(landed) + 2), strict=True))[obs] for obs in answered} == answered
