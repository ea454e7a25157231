"""A worker whose Redis is down keeps logging caseboard's JSON, backs off, and ``outbox status`` says so."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def events(log: Path) -> list[dict[str, Any]]:
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is JSON, or this fails


def test_a_passive_worker_with_redis_down_logs_json_and_backs_off(tmp_path: Path) -> None:
    log = tmp_path / "worker.log"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env.update(
        CASEBOARD_DATABASE_URL=f"sqlite:///{tmp_path}/ledger.db",
        CASEBOARD_REDIS_URL=f"redis://127.0.0.1:{free_port()}/0",
        CASEBOARD_LOG_FORMAT="json",
    )
    with log.open("wb") as sink:
        worker = subprocess.Popen(
            [sys.executable, "-m", "caseboard", "worker", "--passive", "--all-tenants"],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not [e for e in events(log) if e["event"] == "broker_unavailable" and e["failed_probes"] >= 3]:
            assert worker.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    seen = events(log)
    retries = [e["retry_in_s"] for e in seen if e["event"] == "broker_unavailable"]
    assert retries[:3] == [1.0, 2.0, 4.0]
    consumers = {e["logger"] for e in seen if e["event"] == "broker_connection_error"}
    errors = [e for e in seen if e["event"] == "broker_connection_error"]
    assert len(errors) <= len(consumers)  # each consumer reports once, then waits paused: no retry storm
    assert all("Traceback" not in json.dumps(e) for e in seen)


def test_outbox_status_says_the_broker_is_down(postgres_url: str, redis_available: str) -> None:
    env_url = f"redis://127.0.0.1:{free_port()}/0"
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "outbox", "status"],
        env={**os.environ, "CASEBOARD_DATABASE_URL": postgres_url, "CASEBOARD_REDIS_URL": env_url},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["broker"] == "down"
    assert "does not answer" in status["broker_detail"]
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "outbox", "status"],
        env={**os.environ, "CASEBOARD_DATABASE_URL": postgres_url, "CASEBOARD_REDIS_URL": redis_available},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert json.loads(done.stdout)["broker"] == "up"
