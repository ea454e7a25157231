"""A server killed with SIGKILL while clients submit loses no acknowledged commit: a submission is answered
only once its commit landed, whether it was committed on the event loop (ADR 0035) or on a thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest

from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.replay.verify import verify_ledger
from tests.e2e.test_serve_demo import free_port, wait_until_healthy
from tests.http_server import observation, open_body

pytestmark = pytest.mark.postgres

CLIENTS = 4


def test_a_server_killed_under_load_loses_no_acknowledged_commit(postgres_url: str) -> None:
    keys = open_key_store(postgres_url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    tokens = [keys.create(f"spec-{n}", (Role.SPECIALIST,), "tenant-a").token for n in range(CLIENTS)]
    keys.close()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {**os.environ, "CASEBOARD_DATABASE_URL": postgres_url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port)]
    acknowledged: list[dict[str, int]] = [{} for _ in range(CLIENTS)]
    stop = threading.Event()

    def submit(n: int) -> None:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {tokens[n]}"}, timeout=30) as client:
            number = 0
            while not stop.is_set():
                body = {"items": [observation(f"obs-{number}")]}
                try:
                    answer = client.post(f"/workspaces/ws-{n}/contributions", json=body)
                except httpx.TransportError:
                    return  # the server is gone; this submission may or may not have landed
                assert answer.status_code == 201, answer.text
                acknowledged[n][f"obs-{number}"] = answer.json()["workspace_version"]
                number += 1

    with subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as process:
        try:
            deadline = time.monotonic() + 60
            wait_until_healthy(base, process, deadline)
            with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {operator}"}) as client:
                for n in range(CLIENTS):
                    assert client.post("/workspaces", json=open_body(f"ws-{n}")).status_code == 201
            threads = [threading.Thread(target=submit, args=(n,)) for n in range(CLIENTS)]
            for thread in threads:
                thread.start()
            while sum(map(len, acknowledged)) < 400:
                assert time.monotonic() < deadline and all(t.is_alive() for t in threads), "the clients stopped"
                time.sleep(0.01)
            metrics = httpx.get(f"{base}/metrics").text
            on_loop = next(x for x in metrics.splitlines() if x.startswith("caseboard_http_submit_on_loop_total "))
            assert int(on_loop.split()[1]) > 0
            os.kill(process.pid, signal.SIGKILL)
        finally:
            stop.set()
            process.kill()
    for thread in threads:
        thread.join(timeout=30)

    ledger = open_ledger(postgres_url)
    try:
        for n in range(CLIENTS):
            commits = ledger.read(f"tenant-a/ws-{n}")
            assert [c.version for c in commits] == list(range(1, len(commits) + 1))
            landed = {commit.items[0].id: commit.version for commit in commits[1:]}  # type: ignore[union-attr]
            assert {obs: landed.get(obs) for obs in acknowledged[n]} == acknowledged[n]
            assert len(landed) - len(acknowledged[n]) in (0, 1)  # at most the one in flight, unanswered
            assert verify_ledger(ledger, f"tenant-a/ws-{n}").intact
    finally:
        ledger.close()
