"""A server whose PostgreSQL crashes under load answers 503 promptly meanwhile and serves again within
seconds of the database's return, without a restart (issue 10, items 1 and 6; ADR 0040).

The database is a private instance on a free port (tests/private_services.py), crashed with
``pg_ctl -m immediate``: every backend is killed, as in a crash, and nothing is checkpointed.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from caseboard.domain.errors import LedgerUnavailable
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.replay.records import read_ledger
from tests.e2e.test_serve_demo import wait_until_healthy
from tests.http_server import observation, open_body, running_server
from tests.private_services import PrivatePostgres, free_port, private_postgres

CLIENTS = 4
CRASHES = 3
PROMPT_S = 2.0
"""The longest any request may take while the database is down (a hang is what this catches)."""
RECOVERY_S = 5.0
"""Every client must be served again within this long after the database accepts connections."""


@dataclass
class Load:
    """Clients that each submit to a workspace of their own, every 20 ms, and record what they saw."""

    base: str
    tokens: list[str]
    stop: threading.Event = field(default_factory=threading.Event)
    statuses: collections.Counter[object] = field(default_factory=collections.Counter)
    acknowledged: list[dict[str, int]] = field(default_factory=list)
    last_accepted: list[float] = field(default_factory=list)
    slowest: float = 0.0
    bad_refusals: list[str] = field(default_factory=list)

    def run(self, n: int) -> None:
        headers = {"Authorization": f"Bearer {self.tokens[n]}"}
        with httpx.Client(base_url=self.base, headers=headers, timeout=30) as client:
            number = 0
            while not self.stop.is_set():
                started = time.monotonic()
                try:
                    answer = client.post(
                        f"/workspaces/ws-{n}/contributions", json={"items": [observation(f"o-{number}")]}
                    )
                except httpx.TransportError as error:
                    self.statuses[type(error).__name__] += 1
                    continue
                finally:
                    self.slowest = max(self.slowest, time.monotonic() - started)
                self.statuses[answer.status_code] += 1
                if answer.status_code == 201:
                    self.acknowledged[n][f"o-{number}"] = answer.json()["workspace_version"]
                    self.last_accepted[n] = time.monotonic()
                    number += 1
                elif answer.status_code == 503:
                    body = answer.json()
                    if body.get("reason") != "unavailable" or "Retry-After" not in answer.headers:
                        self.bad_refusals.append(answer.text)
                else:
                    self.bad_refusals.append(f"{answer.status_code} {answer.text}")
                self.stop.wait(0.02)


@pytest.fixture
def database() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


def serve(url: str) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    wait_until_healthy(base, process, time.monotonic() + 60)
    return process, base


def test_a_server_serves_again_within_seconds_after_each_database_crash_under_load(database: PrivatePostgres) -> None:
    keys = open_key_store(database.url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    tokens = [keys.create(f"spec-{n}", (Role.SPECIALIST,), "tenant-a").token for n in range(CLIENTS)]
    keys.close()
    process, base = serve(database.url)
    load = Load(base, tokens, acknowledged=[{} for _ in range(CLIENTS)], last_accepted=[0.0] * CLIENTS)
    threads = [threading.Thread(target=load.run, args=(n,), daemon=True) for n in range(CLIENTS)]
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {operator}"}) as client:
            for n in range(CLIENTS):
                assert client.post("/workspaces", json=open_body(f"ws-{n}")).status_code == 201
        for thread in threads:
            thread.start()
        for crash in range(CRASHES):
            before = sum(map(len, load.acknowledged))
            deadline = time.monotonic() + 20
            while sum(map(len, load.acknowledged)) < before + 40:  # the clients commit before each crash
                assert time.monotonic() < deadline, f"crash {crash}: the clients did not commit: {load.statuses}"
                time.sleep(0.01)
            database.stop("immediate")
            refused = load.statuses[503]
            load.slowest = 0.0
            outage_ends = time.monotonic() + 3.0
            while time.monotonic() < outage_ends:  # an outage of 3 s; meanwhile /health says so promptly
                started = time.monotonic()
                health = httpx.get(f"{base}/health", timeout=10)
                assert health.status_code == 503 and time.monotonic() - started < 1.0, health.text
                time.sleep(0.2)
            assert load.statuses[503] > refused, f"crash {crash}: no prompt 503 while the database was down"
            assert load.slowest < PROMPT_S, f"crash {crash}: a request took {load.slowest:.1f} s"
            database.start()
            back = time.monotonic()
            while min(load.last_accepted) < back:
                assert time.monotonic() - back < RECOVERY_S, (
                    f"crash {crash}: not every client was served within {RECOVERY_S} s: {load.statuses}"
                )
                time.sleep(0.02)
        assert httpx.get(f"{base}/health").status_code == 200
        assert not load.bad_refusals, load.bad_refusals[:3]
    finally:
        load.stop.set()
        for thread in threads:
            thread.join(timeout=30)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        finally:
            process.kill()
    assert process.returncode is not None

    ledger = open_ledger(database.url)
    try:
        for n in range(CLIENTS):
            commits = ledger.read(f"tenant-a/ws-{n}")
            assert [c.version for c in commits] == list(range(1, len(commits) + 1))
            landed = {item.id: commit.version for commit in commits for item in commit.items if hasattr(item, "id")}
            for obs_id, version in load.acknowledged[n].items():
                assert landed.get(obs_id) == version, f"ws-{n}: acknowledged {obs_id} at {version} is not in the ledger"
    finally:
        ledger.close()


def test_health_says_within_a_second_that_the_database_is_down_and_then_that_it_is_back(
    database: PrivatePostgres,
) -> None:
    process, base = serve(database.url)
    try:
        database.stop("immediate")
        for _ in range(3):
            started = time.monotonic()
            answer = httpx.get(f"{base}/health", timeout=10)
            assert time.monotonic() - started < 1.0
            assert answer.status_code == 503
            assert answer.json()["status"] == "unavailable" and answer.headers["Retry-After"]
        database.start()
        deadline = time.monotonic() + RECOVERY_S
        while httpx.get(f"{base}/health", timeout=10).status_code != 200:
            assert time.monotonic() < deadline, "health did not say that the database is back"
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait(timeout=10)


READS = ("", "/ledger?limit=20", "/ledger", "/view?budget_chars=2000", "/timeline", "/events?after=0&timeout_s=0.5")


def test_every_read_answers_promptly_while_the_database_is_down_never_with_a_server_error(
    database: PrivatePostgres,
) -> None:
    """A read that needs rows (the ledger, the checked timeline) is 503 ``unavailable`` while the database is
    down; one the cache can answer may be 200; none is a 500 or waits."""
    keys = open_key_store(database.url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    specialist = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    keys.close()
    process, base = serve(database.url)
    headers = {"Authorization": f"Bearer {operator}"}
    as_specialist = {"Authorization": f"Bearer {specialist}"}
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=10) as client:
            assert client.post("/workspaces", json=open_body("ws-r")).status_code == 201
            for n in range(3):
                body = {"items": [observation(f"o-{n}")]}
                answer = client.post("/workspaces/ws-r/contributions", json=body, headers=as_specialist)
                assert answer.status_code == 201, answer.text
            for path in READS:
                assert client.get(f"/workspaces/ws-r{path}").status_code == 200, path
            database.stop("immediate")
            seen: dict[str, int] = {}
            for _ in range(3):  # the first read after the crash finds the connection dead; later ones are refused
                for path in READS:
                    started = time.monotonic()
                    answer = client.get(f"/workspaces/ws-r{path}")
                    took = time.monotonic() - started
                    assert took < PROMPT_S, f"{path}: {took:.1f} s while the database was down"
                    assert answer.status_code in (200, 503), f"{path}: {answer.status_code} {answer.text[:300]}"
                    if answer.status_code == 503:
                        assert answer.json()["reason"] == "unavailable" and answer.headers["Retry-After"], path
                    seen[path] = answer.status_code
            assert seen["/ledger"] == 503 and seen["/timeline"] == 503, seen
            database.start()
            deadline = time.monotonic() + RECOVERY_S
            while client.get("/workspaces/ws-r/timeline").status_code != 200:
                assert time.monotonic() < deadline, "the timeline was not served again after the database's return"
                time.sleep(0.05)
    finally:
        process.kill()
        process.wait(timeout=10)


def test_reading_a_ledger_s_rows_while_the_database_is_down_is_unavailable_whatever_the_pool_meets(
    database: PrivatePostgres,
) -> None:
    """The first read after the crash finds its pooled connection dead; the next ones cannot connect, and the
    pool reports that wrapped in its own error class: each is ``LedgerUnavailable`` (503), never a bare error
    (a 500 on ``/timeline`` in a 30-minute soak)."""
    with running_server(database.url) as server:
        assert server.as_("op", "operator").post("/workspaces", json=open_body("ws-rows")).status_code == 201
        answer = server.as_("spec", "specialist").post(
            "/workspaces/ws-rows/contributions", json={"items": [observation("o-1")]}
        )
        assert answer.status_code == 201, answer.text
    ledger = open_ledger(database.url)
    try:
        assert [c.version for c in read_ledger(ledger, "tenant-a/ws-rows")] == [1, 2]
        database.stop("immediate")
        for _ in range(4):
            with pytest.raises(LedgerUnavailable):
                list(read_ledger(ledger, "tenant-a/ws-rows"))
        database.start()
        deadline = time.monotonic() + RECOVERY_S
        while True:
            try:
                assert [c.version for c in read_ledger(ledger, "tenant-a/ws-rows")] == [1, 2]
                break
            except LedgerUnavailable:
                assert time.monotonic() < deadline, "the ledger was not read again after the database's return"
                time.sleep(0.1)
    finally:
        ledger.close()


def test_open_event_streams_end_as_unavailable_when_the_database_crashes_and_follow_again_after_its_return(
    database: PrivatePostgres,
) -> None:
    """The streams of a workspace share one follower (``api/event_hub.py``): when it cannot read the ledger,
    every stream ends with ``unavailable`` and the position to resume from, promptly; after the database's
    return a stream resuming there gets the next commit."""
    with running_server(database.url) as server:
        assert server.as_("op", "operator").post("/workspaces", json=open_body("ws-sse")).status_code == 201
        specialist = server.as_("spec", "specialist")
        watcher = server.as_("watcher", "controller")
        seen: list[list[str]] = [[] for _ in range(3)]
        ended: list[float] = []

        def follow(lines: list[str]) -> None:
            with watcher.stream("GET", "/workspaces/ws-sse/events", params={"timeout_s": 60}) as response:
                lines.extend(line for line in response.iter_lines() if line.startswith(("id: ", 'data: {"reason')))
            ended.append(time.monotonic())

        streams = [threading.Thread(target=follow, args=(lines,), daemon=True) for lines in seen]
        for thread in streams:
            thread.start()
        body = {"items": [observation("o-1")]}
        assert specialist.post("/workspaces/ws-sse/contributions", json=body).status_code == 201
        deadline = time.monotonic() + 10
        while any(lines[-1:] != ["id: 2"] for lines in seen):
            assert time.monotonic() < deadline, f"the streams did not get the commit: {seen}"
            time.sleep(0.01)
        database.stop("immediate")
        crashed = time.monotonic()
        for thread in streams:
            thread.join(timeout=PROMPT_S + 5)
        assert len(ended) == len(streams), "a stream was still open after the crash"
        assert max(ended) - crashed < PROMPT_S, f"a stream ended {max(ended) - crashed:.1f} s after the crash"
        for lines in seen:
            assert lines == ["id: 1", "id: 2", 'data: {"reason": "unavailable", "next_after": 2}'], lines
        database.start()
        deadline = time.monotonic() + RECOVERY_S
        for attempt in range(1000):
            body = {"items": [observation(f"o-2-{attempt}")]}
            if specialist.post("/workspaces/ws-sse/contributions", json=body).status_code == 201:
                break
            assert time.monotonic() < deadline, "no commit was accepted after the database's return"
            time.sleep(0.1)
        while True:  # a client reconnects after ``unavailable``: a pooled connection may still be a dead one
            resumed = watcher.get(
                "/workspaces/ws-sse/events", params={"timeout_s": 0.5}, headers={"Last-Event-ID": "2"}
            )
            if resumed.status_code == 200 and '"reason": "unavailable"' not in resumed.text:
                break
            assert time.monotonic() < deadline, f"the stream was not served after the database's return: {resumed.text}"
            time.sleep(0.1)
        assert [line for line in resumed.text.splitlines() if line.startswith("id: ")][:1] == ["id: 3"], resumed.text
