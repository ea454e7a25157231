"""Shared fixtures. PostgreSQL and Redis are real: absent locally, their tests skip; with CI set, they fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.outcome import Outcome
from caseboard.ledger import EventsourcingLedger, open_ledger

ROOT = Path(__file__).resolve().parent.parent
SHARED_SCENARIOS = ROOT.parent / "shared" / "scenarios"
PACKAGED_SCENARIOS = ROOT / "caseboard" / "scenarios"
POSTGRES_URL = os.environ.get("CASEBOARD_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("CASEBOARD_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    """A test that runs the command line in-process configures logging to the stream of the moment (a
    capture that closes with the test); the next test must not write there."""
    yield
    structlog.reset_defaults()


def scenario_dir() -> Path:
    """The shared scenarios as they are; the packaged copy only where shared/ is absent (and not in CI)."""
    if SHARED_SCENARIOS.is_dir():
        return SHARED_SCENARIOS
    if os.environ.get("CI"):
        pytest.fail(f"{SHARED_SCENARIOS} is missing: CI runs beside a copy of shared/")
    return PACKAGED_SCENARIOS


def caseboard(*args: str, url: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command line in a subprocess, on the ledger at ``url``, logging JSON."""
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_FORMAT": "json"}
    env.pop("CASEBOARD_LOG_LEVEL", None)
    return subprocess.run(
        [sys.executable, "-m", "caseboard", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def caseboard_measured(*args: str, url: str, cwd: Path) -> tuple[int, str, str, int]:
    """``caseboard(*args)`` with its peak memory: exit status, output, errors and the largest resident set, in
    KB, of the process (read by a parent of its own, so that no other child of this one counts)."""
    wrapper = (
        "import json, resource, subprocess, sys; done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
        " print(json.dumps([done.returncode, done.stdout, done.stderr,"
        " resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))"
    )
    report = subprocess.run(
        [sys.executable, "-c", wrapper, sys.executable, "-m", "caseboard", *args],
        cwd=cwd,
        env={**os.environ, "CASEBOARD_DATABASE_URL": url},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    returncode, stdout, stderr, peak_kb = json.loads(report.stdout)
    return returncode, stdout, stderr, peak_kb


def service_missing(name: str, error: Exception) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{name} is not reachable in CI ({error}); .ci/run starts it")
    pytest.skip(f"{name} is not reachable: {error}")


@pytest.fixture(scope="session")
def postgres_available() -> str:
    import psycopg

    try:
        with psycopg.connect(POSTGRES_URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        service_missing("PostgreSQL", error)
    return POSTGRES_URL


@pytest.fixture
def postgres_url(postgres_available: str) -> Iterator[str]:
    """A PostgreSQL ledger URL in a fresh schema, dropped afterwards."""
    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    yield f"{postgres_available}?schema={schema}"
    with psycopg.connect(postgres_available, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path}/ledger.db"


@pytest.fixture
def sqlite_dispatch_store(sqlite_url: str) -> Iterator[DispatchStore]:
    """The consumers' store (processed ids, attempts) on an embedded ledger's file."""
    store = DispatchStore(sqlite_url)
    yield store
    store.close()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory://"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/ledger.db"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[EventsourcingLedger]:
    ledger = open_ledger(ledger_url)
    yield ledger
    ledger.close()


def scenario_lines() -> list[str]:
    return [line for line in (scenario_dir() / "incident-042.jsonl").read_text().splitlines() if line.strip()]


def stale_install() -> str:
    return (scenario_dir() / "incident-042.stale-install.json").read_text()


def play(coordinator: Coordinator, lines: list[str]) -> list[Outcome]:
    return [coordinator.submit(parse_contribution(line)) for line in lines]


def open_item(**limits: int) -> dict[str, Any]:
    """An operator's ``open`` item for incident-042's scope, with the scenario's limits unless given."""
    runtime_limits = {
        "max_selected_items": 20,
        "max_investigation_cycles": 6,
        "max_open_questions": 10,
        "max_proposals": 10,
        "max_pending_work": 10,
        **limits,
    }
    return {
        "type": "open",
        "goal": "Find out why authentication fails",
        "scope": {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"},
        "runtime_limits": runtime_limits,
        "execution_mode": "read_only",
    }


def contribution(
    items: list[dict[str, Any]],
    principal: str = "planner-1",
    role: str = "planner",
    workspace_id: str = "ws-1",
    **envelope: Any,
) -> str:
    return json.dumps(
        {"workspace_id": workspace_id, "author": {"principal": principal, "role": role}, "items": items, **envelope}
    )


@pytest.fixture(params=["sqlite", "postgres"])
def durable_url(request: pytest.FixtureRequest) -> str:
    """A ledger URL on each durable store: a fresh SQLite file, then a fresh PostgreSQL schema."""
    return str(request.getfixturevalue(f"{request.param}_url"))
