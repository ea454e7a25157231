"""The ``/events`` streams of a server process share one follower per workspace (``api/event_hub.py``,
issue 21): every stream gets every commit once and in order, however many there are, and joining behind
the follower misses nothing."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from caseboard.api.event_hub import EventHub
from tests.http_server import RunningServer, observation, open_body, running_server

SUBSCRIBERS = 200
WRITERS = 4
COMMITS_EACH = 5


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    with running_server(str(request.getfixturevalue(f"{request.param}_url"))) as running:
        yield running


@pytest.fixture
def pg_server(postgres_url: str) -> Iterator[RunningServer]:
    with running_server(postgres_url) as running:
        yield running


def hub_of(server: RunningServer) -> EventHub:
    hub: EventHub = server.api.state.services.events
    return hub


def eventually(condition: Callable[[], bool], what: str, within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not condition():
        assert time.monotonic() < deadline, f"{what}: not within {within_s} s"
        time.sleep(0.01)


def open_workspace(server: RunningServer, workspace_id: str) -> None:
    operator = server.as_("oncall-operator", "operator")
    assert operator.post("/workspaces", json=open_body(workspace_id)).status_code == 201


class Stream:
    """A subscriber on a thread of its own: the ids it was sent, until ``until`` or the stream's end."""

    def __init__(self, client: httpx.Client, workspace_id: str, after: int, until: int) -> None:
        self.ids: list[int] = []
        self.workspaces: set[str] = set()  # named by the commit events' data
        self.end: str | None = None
        params = {"after": after, "timeout_s": 60}
        self._thread = threading.Thread(target=self._run, args=(client, workspace_id, params, until), daemon=True)
        self._thread.start()

    def _run(self, client: httpx.Client, workspace_id: str, params: dict[str, int], until: int) -> None:
        with client.stream("GET", f"/workspaces/{workspace_id}/events", params=params) as response:
            lines = response.iter_lines()
            for line in lines:
                if line.startswith("id: "):
                    self.ids.append(int(line[4:]))
                    assert next(lines) == "event: commit"
                    self.workspaces.add(json.loads(next(lines).removeprefix("data: "))["workspace_id"])
                    if self.ids[-1] >= until:
                        return
                elif line == "event: end":
                    self.end = next(lines)
                    return

    def join(self) -> None:
        self._thread.join(timeout=30)
        assert not self._thread.is_alive(), f"the stream got {self.ids} and was still open"


def test_many_subscribers_of_one_workspace_get_every_commit_once_in_order_while_writers_commit_at_once(
    pg_server: RunningServer,
) -> None:
    open_workspace(pg_server, "ws-many")
    hub = hub_of(pg_server)
    last = 1 + WRITERS * COMMITS_EACH
    token = pg_server.token("watcher", "controller")
    seen: list[list[int]] = [[] for _ in range(SUBSCRIBERS)]

    async def subscribe(client: httpx.AsyncClient, ids: list[int]) -> None:
        params = {"after": 1, "timeout_s": 60}
        async with client.stream("GET", "/workspaces/ws-many/events", params=params) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    ids.append(int(line[4:]))
                    if ids[-1] >= last:
                        return
                elif line == "event: end":
                    return

    def write(barrier: threading.Barrier, n: int) -> None:
        writer = pg_server.as_(f"specialist-{n}", "specialist")
        barrier.wait(timeout=10)
        for i in range(COMMITS_EACH):
            answer = writer.post("/workspaces/ws-many/contributions", json={"items": [observation(f"o-{n}-{i}")]})
            assert answer.status_code == 201, answer.text

    async def run() -> tuple[int, bool, int]:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=pg_server.base_url, headers=headers, limits=limits, timeout=60) as client:
            streams = [asyncio.create_task(subscribe(client, ids)) for ids in seen]
            deadline = time.monotonic() + 30
            while hub.subscribers("tenant-a/ws-many") < SUBSCRIBERS:
                assert time.monotonic() < deadline, f"{hub.subscribers('tenant-a/ws-many')} of {SUBSCRIBERS} subscribed"
                await asyncio.sleep(0.02)
            followed, listening, reads = hub.followed, hub.listening, hub.reads
            barrier = threading.Barrier(WRITERS)
            writers = [threading.Thread(target=write, args=(barrier, n)) for n in range(WRITERS)]
            for thread in writers:
                thread.start()
            for thread in writers:
                await asyncio.to_thread(thread.join, 60)
            await asyncio.wait_for(asyncio.gather(*streams), 60)
            return followed, listening, hub.reads - reads

    followed, listening, reads = asyncio.run(run())
    expected = list(range(2, last + 1))
    wrong = [ids for ids in seen if ids != expected]
    assert not wrong, f"{len(wrong)} of {SUBSCRIBERS} streams got another sequence, e.g. {wrong[0]}"
    assert followed == 1
    assert listening  # woken by the commit notifier's NOTIFY, not polling
    assert reads < SUBSCRIBERS, f"{reads} reads for {WRITERS * COMMITS_EACH} commits: one per stream?"
    assert hub.catch_up_reads == 0  # every stream joined at the head: none read the ledger itself
    eventually(lambda: hub.followed == 0 and not hub.running, "the follower stopped after the last stream left")


def test_a_subscriber_joining_behind_the_follower_gets_the_missed_commits_then_the_live_ones(
    server: RunningServer,
) -> None:
    open_workspace(server, "ws-late")
    hub = hub_of(server)
    specialist = server.as_("log-specialist", "specialist")
    watcher = server.client(server.token("watcher", "controller"))

    def commit(n: int) -> None:
        answer = specialist.post("/workspaces/ws-late/contributions", json={"items": [observation(f"o-{n}")]})
        assert answer.status_code == 201, answer.text

    early = Stream(watcher, "ws-late", after=1, until=8)
    eventually(lambda: hub.subscribers("tenant-a/ws-late") == 1, "the first stream subscribed")
    for n in range(2, 7):
        commit(n)
    eventually(lambda: early.ids[-1:] == [6], "the first stream got the commits up to 6")
    catch_up_reads = hub.catch_up_reads
    late = server.client(server.token("late-watcher", "controller"))
    behind = Stream(late, "ws-late", after=2, until=8)
    eventually(lambda: behind.ids[-1:] == [6], "the late stream caught up with the follower")
    assert hub.followed == 1 and hub.subscribers("tenant-a/ws-late") == 2
    assert hub.catch_up_reads > catch_up_reads  # read from the ledger by the late stream itself
    for n in range(7, 9):
        commit(n)
    early.join()
    behind.join()
    assert early.ids == list(range(2, 9))
    assert behind.ids == list(range(3, 9))


def test_each_workspace_has_one_follower_for_all_its_streams_and_none_once_they_leave(pg_server: RunningServer) -> None:
    hub = hub_of(pg_server)
    for workspace_id in ("ws-a", "ws-b"):
        open_workspace(pg_server, workspace_id)
    watcher = pg_server.client(pg_server.token("watcher", "controller"))
    streams = {ws: [Stream(watcher, ws, after=1, until=2) for _ in range(3)] for ws in ("ws-a", "ws-b")}
    eventually(
        lambda: hub.subscribers("tenant-a/ws-a") == 3 and hub.subscribers("tenant-a/ws-b") == 3,
        "six streams subscribed",
    )
    assert hub.followed == 2
    specialist = pg_server.as_("log-specialist", "specialist")
    for workspace_id in ("ws-a", "ws-b"):
        body = {"items": [observation(f"o-{workspace_id}", statement=f"seen on {workspace_id}")]}
        assert specialist.post(f"/workspaces/{workspace_id}/contributions", json=body).status_code == 201
    for workspace_id, group in streams.items():
        for stream in group:
            stream.join()
            assert stream.ids == [2] and stream.workspaces == {workspace_id} and stream.end is None
    eventually(lambda: hub.followed == 0 and not hub.running, "the followers stopped after their last stream")
