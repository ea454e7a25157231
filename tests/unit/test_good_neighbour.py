"""The suite is a good neighbour: a test that stops a service stops a private one (tests/private_services.py),
never the machine's shared PostgreSQL (5432) or Redis (6379)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
STOPS_A_SHARED_SERVICE = [
    re.compile(r"\.shutdown\("),  # redis-py's SHUTDOWN of whatever server the client is connected to
    re.compile(r"redis-server[^\n]*6379|6379[^\n]*redis-server"),
    re.compile(r"pg_ctl" r"cluster[^\n]*(stop|restart)"),  # split, so that this line is not what it looks for
    re.compile(r"systemctl[^\n]*(stop|restart)[^\n]*(redis|postgres)"),
]


def test_no_test_stops_or_restarts_the_machines_shared_redis_or_postgresql() -> None:
    offenders = [
        f"{path.relative_to(TESTS)}: {pattern.pattern}"
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != Path(__file__).name
        for pattern in STOPS_A_SHARED_SERVICE
        if pattern.search(path.read_text())
    ]
    assert offenders == []


def test_the_redis_fault_test_restarts_a_private_server() -> None:
    source = (TESTS / "e2e" / "test_dispatch_processes.py").read_text()
    assert "private_redis()" in source
    assert "server.restart()" in source
