"""A server left idle while its PostgreSQL restarts serves its first requests afterwards: pooled connections
are checked before they are reused, ``/health`` reflects every store, and no database text reaches a client
(ADR 0145).

The database is a private instance (tests/private_services.py) restarted with ``pg_ctl -m immediate`` under a
real ``caseboard serve`` process that holds warm connections in each of its pools.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator

import httpx
import pytest

from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from tests.e2e.test_database_outage import serve
from tests.http_server import observation, open_body
from tests.private_services import PrivatePostgres, private_postgres

DATABASE_WORDS = ("terminating connection", "server closed", "psycopg", "administrator command", "consuming input",
                  "connection refused", "the database system", "SSL", "OperationalError", "127.0.0.1")  # fmt: skip


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


def _stopped(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=15)
    finally:
        process.kill()


def _uses_every_store(client: httpx.Client, specialist: httpx.Client, n: int) -> list[httpx.Response]:
    """A request for each pool the server holds: keys (every request), the ledger (reads and the commit
    paths), the artifact store, the knowledge store, and /health."""
    return [
        specialist.post("/workspaces/ws-idle/contributions", json={"items": [observation(f"o-{n}")]}),
        client.post("/artifacts", content=f"log line {n}\n".encode(), params={"media_type": "text/plain"}),
        client.get("/workspaces/ws-idle/ledger", params={"after": 0, "limit": 5}),
        client.get("/knowledge", params={"service": "payments-api"}),
        client.get("/health"),
    ]


def test_the_first_requests_after_a_restart_under_an_idle_server_are_served(database: PrivatePostgres) -> None:
    keys = open_key_store(database.url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    specialist_token = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    process, base = serve(database.url)
    try:
        with (
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {operator}"}, timeout=10) as client,
            httpx.Client(base_url=base, headers={"Authorization": f"Bearer {specialist_token}"}, timeout=10) as spec,
        ):
            assert client.post("/workspaces", json=open_body("ws-idle")).status_code == 201
            for n in range(3):  # warm connections in every pool
                assert [r.status_code for r in _uses_every_store(client, spec, n)] == [201, 201, 200, 200, 200]
            time.sleep(1.2)  # the server is idle
            database.restart("immediate")  # every backend killed, as in a crash
            time.sleep(1.2)  # and stays idle a moment after the database is back
            answers = [r for n in range(3, 6) for r in _uses_every_store(client, spec, n)]
            shown = [(r.request.method, r.request.url.path, r.status_code, r.text[:200]) for r in answers]
            assert [r.status_code for r in answers] == [201, 201, 200, 200, 200] * 3, shown
            health = client.get("/health").json()
            assert {name: health[name] for name in ("ledger", "keys", "artifacts", "knowledge")} == dict.fromkeys(
                ("ledger", "keys", "artifacts", "knowledge"), "ok"
            )
    finally:
        _stopped(process)


def test_while_the_database_is_down_health_names_every_store_and_no_answer_carries_database_text(
    database: PrivatePostgres,
) -> None:
    keys = open_key_store(database.url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    keys.close()
    process, base = serve(database.url)
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {operator}"}, timeout=10) as client:
            assert client.post("/workspaces", json=open_body("ws-down")).status_code == 201
            assert client.post("/artifacts", content=b"x\n").status_code == 201
            database.stop("immediate")
            answers = [
                client.post("/artifacts", content=b"y\n"),
                client.get("/workspaces/ws-down/ledger"),
                client.get("/knowledge", params={"service": "payments-api"}),
                client.post("/workspaces", json=open_body("ws-other")),
                httpx.get(f"{base}/health", timeout=10),
            ]
            for answer in answers:
                assert answer.status_code == 503, (answer.request.url.path, answer.text)
                assert not any(word.lower() in answer.text.lower() for word in DATABASE_WORDS), answer.text
            health = answers[-1].json()
            assert health["status"] == "unavailable"
            assert {health[name] for name in ("ledger", "keys", "artifacts", "knowledge")} == {"unavailable"}
            database.start()
            deadline = time.monotonic() + 10
            while httpx.get(f"{base}/health", timeout=10).status_code != 200:
                assert time.monotonic() < deadline
                time.sleep(0.1)
    finally:
        _stopped(process)
