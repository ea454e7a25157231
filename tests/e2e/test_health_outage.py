"""Health while the database is down: a private PostgreSQL crashed under a real ``caseboard serve``. The health
routes answer 503 ``unavailable`` promptly, never a 500; ``/metrics`` still answers, with
``caseboard_health_up 0``; all of it is served again once the database is back."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from tests.e2e.test_database_outage import serve
from tests.http_server import observation, open_body
from tests.private_services import PrivatePostgres, private_postgres

PROMPT_S = 2.0
RECOVERY_S = 10.0


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


def health_up(base: str) -> str:
    line = next(
        x for x in httpx.get(f"{base}/metrics", timeout=5).text.splitlines() if x.startswith("caseboard_health_up")
    )
    return line.split()[1]


def test_health_is_unavailable_during_an_outage_and_served_again_after_it(database: PrivatePostgres) -> None:
    keys = open_key_store(database.url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    specialist = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    process, base = serve(database.url)
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {operator}"}, timeout=10) as client:
            assert client.post("/workspaces", json=open_body("ws-h")).status_code == 201
            body = {"items": [observation("o-1")]}
            headers = {"Authorization": f"Bearer {specialist}"}
            assert client.post("/workspaces/ws-h/contributions", json=body, headers=headers).status_code == 201
            before = client.get("/workspaces/ws-h/health").json()
            assert before["workspace_version"] == 2
            assert client.get("/tenant/health").json()["workspaces"] == 1
            assert health_up(base) == "1"
            database.stop("immediate")
            for _ in range(3):  # the first read after the crash finds the connection dead; later ones are refused
                for path in ("/workspaces/ws-h/health", "/tenant/health"):
                    started = time.monotonic()
                    answer = client.get(path)
                    assert time.monotonic() - started < PROMPT_S, path
                    assert answer.status_code == 503, f"{path}: {answer.status_code} {answer.text[:300]}"
                    assert answer.json()["reason"] == "unavailable" and answer.headers["Retry-After"]
            assert health_up(base) == "0"
            database.start()
            deadline = time.monotonic() + RECOVERY_S
            while client.get("/workspaces/ws-h/health").status_code != 200:
                assert time.monotonic() < deadline, "health was not served again after the database's return"
                time.sleep(0.05)
            assert client.get("/workspaces/ws-h/health").json() == before
            assert health_up(base) == "1"
    finally:
        process.kill()
        process.wait(timeout=10)
