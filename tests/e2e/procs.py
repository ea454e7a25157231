"""Running the dispatcher and workers as real processes for end-to-end tests, and killing them by pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests.conftest import REDIS_URL, service_missing

T = TypeVar("T")


def poll(what: str, check: Callable[[], T | None], timeout: float = 60.0, every: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


class Cluster:
    """Processes sharing one PostgreSQL schema and one Redis namespace."""

    def __init__(self, database_url: str, tmp_path: Path, redis_url: str = REDIS_URL) -> None:
        self.database_url = database_url
        self.redis_url = redis_url
        self.namespace = f"cbtest-{uuid.uuid4().hex[:10]}"
        self.tmp_path = tmp_path
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: dict[int, Path] = {}

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
        env.update(
            CASEBOARD_DATABASE_URL=self.database_url,
            CASEBOARD_REDIS_URL=self.redis_url,
            CASEBOARD_REDIS_NAMESPACE=self.namespace,
            CASEBOARD_LOG_FORMAT="json",
            CASEBOARD_LOG_LEVEL="info",
            **extra,
        )
        return env

    def spawn(self, *args: str, **env: str) -> subprocess.Popen[bytes]:
        log = self.tmp_path / f"proc-{len(self.procs)}-{args[0]}.log"
        with log.open("wb") as sink:
            proc = subprocess.Popen(
                [sys.executable, "-m", "caseboard", *args],
                env=self.env(**env),
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        self.procs.append(proc)
        self.logs[proc.pid] = log
        return proc

    def events(self, proc: subprocess.Popen[bytes]) -> list[dict[str, Any]]:
        out = []
        for line in self.logs[proc.pid].read_text().splitlines():
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def saw(self, proc: subprocess.Popen[bytes], event: str) -> bool:
        return any(e.get("event") == event for e in self.events(proc))

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.kill(proc)

    def status(self) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "caseboard", "outbox", "status"],
            env=self.env(),
            capture_output=True,
        )
        assert done.returncode == 0, done.stderr.decode()
        return dict(json.loads(done.stdout))

    def flush_redis(self) -> int:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        keys = list(client.scan_iter(match=f"{self.namespace}*"))
        if keys:
            client.delete(*keys)
        client.close()
        return len(keys)

    def close(self) -> None:
        for proc in self.procs:
            self.stop(proc)
        self.flush_redis()


@pytest.fixture(scope="session")
def redis_available() -> str:
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
        client.ping()
        client.close()
    except redis.RedisError as error:
        service_missing("Redis", error)
    return REDIS_URL


@pytest.fixture
def cluster(postgres_url: str, redis_available: str, tmp_path: Path) -> Iterator[Cluster]:
    cluster = Cluster(postgres_url, tmp_path)
    yield cluster
    cluster.close()
