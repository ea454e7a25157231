"""Private PostgreSQL and Redis servers for fault tests: each on a free loopback port, in a folder of its own.

A test that stops, crashes or restarts a service does it to one of these, never to the machine's shared
servers (127.0.0.1:5432 and :6379). ``private_postgres()`` runs ``initdb`` and ``pg_ctl`` (found under
``/usr/lib/postgresql/*/bin``, on ``PATH`` or in ``CASEBOARD_TEST_PG_BIN``) in a temporary folder;
``private_redis()`` runs ``redis-server`` without persistence. Each yields a handle with the URL and
``stop``/``start``/``restart``, and stops only its own process when the block ends. As root (PostgreSQL
refuses to run as root), the PostgreSQL server runs as the ``postgres`` user.

When the programs are missing the test is skipped locally and fails with ``CI`` set, as for the shared
services (``tests/conftest.py``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from caseboard.pilot.servers import postgres_bin

__all__ = ["PrivatePostgres", "PrivateRedis", "free_port", "private_postgres", "private_redis"]


def free_port() -> int:
    """A loopback TCP port nobody listened on a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _missing(what: str) -> None:
    import pytest

    if os.environ.get("CI"):
        pytest.fail(f"{what} is needed for the fault tests in CI")
    pytest.skip(f"{what} is not installed")


def _pg_bin() -> Path | None:
    return postgres_bin()


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.5)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class PrivatePostgres:
    """One PostgreSQL cluster of a test's own. ``url`` names its ``postgres`` database."""

    bin: Path
    folder: Path
    port: int
    as_user: list[str] = field(default_factory=list)
    outages: int = 0
    settings: dict[str, str] = field(default_factory=dict)
    """Server settings of the test's own (``-c name=value``), e.g. a long ``wal_writer_delay``."""

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def _run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.as_user, *args], capture_output=True, text=True, timeout=timeout, check=False, cwd=self.folder
        )

    def init(self) -> None:
        done = self._run(
            str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"
        )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {done.stderr.strip()}")

    def start(self, timeout: float = 60) -> None:
        """Start the server and wait until it accepts connections."""
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} -c fsync=off "
            "-c max_connections=200 -c shared_buffers=32MB"
        ) + "".join(f" -c {name}={value}" for name, value in self.settings.items())
        done = self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.folder / "log"), "-o", options, "-w",
            "-t", str(int(timeout)), "start", timeout=timeout + 10,
        )  # fmt: skip
        if done.returncode != 0:
            log = (self.folder / "log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"pg_ctl start failed: {done.stderr.strip()} {log}")

    def stop(self, mode: str = "immediate") -> None:
        """Stop the server: ``immediate`` is a crash (no checkpoint, every backend killed), ``fast`` a clean one."""
        done = self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        if done.returncode != 0 and self.running():
            raise RuntimeError(f"pg_ctl stop failed: {done.stderr.strip()}")
        self.outages += 1

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists() and _accepts(self.port)

    def restart(self, mode: str = "immediate", down_s: float = 0.0) -> None:
        self.stop(mode)
        if down_s:
            time.sleep(down_s)  # an outage of a given length, not a wait for work
        self.start()


@contextlib.contextmanager
def private_postgres(settings: dict[str, str] | None = None) -> Iterator[PrivatePostgres]:
    """A fresh PostgreSQL cluster on a free port, crashed and removed when the block ends; ``settings``: server
    settings of the test's own."""
    bin_dir = _pg_bin()
    if bin_dir is None or not (bin_dir / "initdb").exists():
        _missing("PostgreSQL's initdb and pg_ctl")
        raise AssertionError("unreachable")
    folder = Path(tempfile.mkdtemp(prefix="caseboard-pg-"))
    as_user: list[str] = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    server = PrivatePostgres(bin_dir, folder, free_port(), as_user, settings=dict(settings or {}))
    try:
        server.init()
        for attempt in range(3):
            try:
                server.start()
                break
            except RuntimeError:  # the port was taken meanwhile: another one
                if attempt == 2:
                    raise
                server.port = free_port()
        yield server
    finally:
        if (server.data / "postmaster.pid").exists():
            server._run(str(bin_dir / "pg_ctl"), "-D", str(server.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)


@dataclass
class PrivateRedis:
    """One Redis server of a test's own, keeping nothing on disk. ``url`` names its database 0."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes] | None = None
    restarts: int = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 30) -> None:
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", str(self.folder), "--daemonize", "no",
        ]  # fmt: skip
        with (self.folder / "log").open("ab") as sink:
            self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while not _accepts(self.port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on port {self.port}")
            time.sleep(0.02)

    def stop(self) -> None:
        """Kill the server (SIGKILL: every message it held is gone) and wait for it to exit."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=10)

    def restart(self) -> None:
        self.stop()
        self.start()
        self.restarts += 1


@contextlib.contextmanager
def private_redis() -> Iterator[PrivateRedis]:
    """A fresh Redis server on a free port, killed when the block ends."""
    if shutil.which("redis-server") is None:
        _missing("redis-server")
    folder = Path(tempfile.mkdtemp(prefix="caseboard-redis-"))
    server = PrivateRedis(free_port(), folder)
    try:
        for attempt in range(3):
            try:
                server.start()
                break
            except RuntimeError:
                server.stop()
                if attempt == 2:
                    raise
                server.port = free_port()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
