"""Slow clients of one address cannot starve the others (ADR 0146): against a real ``caseboard serve`` with its
default limits, an attacker process on 127.0.0.2 keeps 300 connections dribbling headers and 300 dribbling
the bodies of artifact uploads (with a valid key), reopening each one the server closes, while another
client (127.0.0.1) asks for a workspace on a new connection every 50 ms. At least 99 % of that client's
requests are answered 200."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from tests.e2e.test_serve_demo import wait_until_healthy
from tests.http_server import open_body
from tests.private_services import free_port

ROOT = Path(__file__).resolve().parents[2]
ATTACK_S = 12.0
HEADERS, BODIES = 300, 300


def _second_loopback_address() -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.2", 0))
        except OSError:
            return False
    return True


@pytest.mark.skipif(not _second_loopback_address(), reason="127.0.0.2 is not a loopback address here")
def test_another_clients_requests_succeed_while_one_address_holds_slow_connections(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    keys = open_key_store(url)
    token = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    keys.close()
    port = free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port)]  # the default limits
    server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    attacker: subprocess.Popen[bytes] | None = None
    base = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        wait_until_healthy(base, server, time.monotonic() + 60)
        assert httpx.post(f"{base}/workspaces", json=open_body("ws-busy"), headers=headers).status_code == 201
        attack = [sys.executable, "-m", "tests.slow_clients", str(port), str(ATTACK_S), str(HEADERS), str(BODIES)]
        attacker = subprocess.Popen([*attack, "127.0.0.2", token], cwd=ROOT, stdout=subprocess.PIPE)
        time.sleep(2.0)  # the attacker's connections are open
        outcomes: list[object] = []
        ends = time.monotonic() + ATTACK_S - 4.0
        with httpx.Client(
            base_url=base, headers=headers, timeout=5, limits=httpx.Limits(max_keepalive_connections=0)
        ) as client:
            while time.monotonic() < ends:  # a new connection per request: a refused one would show
                try:
                    outcomes.append(client.get("/workspaces/ws-busy").status_code)
                except httpx.HTTPError as error:
                    outcomes.append(type(error).__name__)
                time.sleep(0.05)
        out, _ = attacker.communicate(timeout=ATTACK_S + 30)
        counts = json.loads(out)
        assert counts["opened"] >= HEADERS + BODIES, counts  # the attack ran
        served = outcomes.count(200) / len(outcomes)
        assert served >= 0.99, (served, len(outcomes), [o for o in outcomes if o != 200][:10])
    finally:
        if attacker is not None and attacker.poll() is None:
            attacker.kill()
            attacker.wait(timeout=10)
        server.kill()
        server.wait(timeout=10)
