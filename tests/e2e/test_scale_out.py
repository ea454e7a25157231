"""Scaled out: two ``caseboard serve`` processes, a dispatcher and two workers on one PostgreSQL and one Redis.

Clients are spread over both servers: 4 workspaces, 8 writers each, every writer alternating between the
servers commit by commit, so both processes race for the versions of every workspace. Nothing is lost,
every workspace's versions are contiguous, every notification routing promises is processed (once, in
effect) and the outbox has announced every commit; a claim made through one server and reclaimed and claimed
again through the other fences the first holder's result, sent through the first server.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from functools import partial
from typing import Any

import httpx
import pytest

from caseboard.dispatcher.route import route
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from tests.e2e.procs import Cluster, poll
from tests.http_server import observation, open_body
from tests.private_services import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WORKSPACES = 4
WRITERS = 8
COMMITS = 6  # per writer
TENANT = "tenant-a"


class Servers:
    """Two ``caseboard serve`` processes of the cluster, and keys for whoever needs one."""

    def __init__(self, cluster: Cluster) -> None:
        self.keys = open_key_store(cluster.database_url)
        self.ports = [free_port(), free_port()]
        self.procs = [cluster.spawn("serve", "--port", str(port)) for port in self.ports]
        self.clients: list[httpx.Client] = []
        for port, proc in zip(self.ports, self.procs, strict=True):
            poll(f"the server on {port}", partial(self._healthy, port, proc), timeout=60)

    @staticmethod
    def _healthy(port: int, proc: subprocess.Popen[bytes]) -> bool:
        assert proc.poll() is None, f"caseboard serve on {port} exited with status {proc.returncode}"
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def client(self, server: int, principal: str, role: Role) -> httpx.Client:
        token = self.keys.create(principal, (role,), TENANT).token
        headers = {"Authorization": f"Bearer {token}"}
        client = httpx.Client(base_url=f"http://127.0.0.1:{self.ports[server]}", headers=headers, timeout=60)
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        self.keys.close()


@pytest.fixture
def servers(cluster: Cluster) -> Iterator[Servers]:
    running = Servers(cluster)
    yield running
    running.close()


def write(clients: list[httpx.Client], workspace_id: str, writer: int, barrier: threading.Barrier) -> list[int]:
    """``COMMITS`` observations, alternating between the two servers; the status of each."""
    barrier.wait()
    statuses = []
    for number in range(COMMITS):
        body = {"items": [observation(f"obs-w{writer}-{number}")]}
        response = clients[number % 2].post(f"/workspaces/{workspace_id}/contributions", json=body)
        statuses.append(response.status_code)
    return statuses


def test_two_servers_and_two_workers_share_one_ledger_and_one_broker(cluster: Cluster, servers: Servers) -> None:
    cluster.spawn("worker", "--passive", "--all-tenants")
    cluster.spawn("worker", "--passive", "--all-tenants")
    cluster.spawn("dispatch")
    ids = [f"ws-scale-{n}" for n in range(WORKSPACES)]
    for n, workspace_id in enumerate(ids):
        operator = servers.client(n % 2, f"operator-{n}", Role.OPERATOR)
        created = operator.post("/workspaces", json=open_body(workspace_id))
        assert created.status_code == 201, created.text

    barrier = threading.Barrier(WORKSPACES * WRITERS)
    results: dict[tuple[str, int], list[int]] = {}
    threads = []
    for workspace_id in ids:
        for writer in range(WRITERS):
            principal = f"specialist-{writer}"
            clients = [servers.client(s, principal, Role.SPECIALIST) for s in ((writer % 2), 1 - writer % 2)]

            def run(w: str = workspace_id, n: int = writer, c: list[httpx.Client] = clients) -> None:
                results[(w, n)] = write(c, w, n, barrier)

            threads.append(threading.Thread(target=run))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert len(results) == WORKSPACES * WRITERS
    assert all(statuses == [201] * COMMITS for statuses in results.values()), results

    fencing(servers, ids[0])

    ledger = open_ledger(cluster.database_url)
    promised: set[tuple[str, str]] = set()
    snapshots: set[tuple[str, str]] = set()
    total = 0
    try:
        reducer = get_reducer()
        for workspace_id in ids:
            commits = ledger.read(f"{TENANT}/{workspace_id}")  # its tenant's key (docs/adr/0130)
            total += len(commits)
            assert [c.version for c in commits] == list(range(1, len(commits) + 1))
            observed = [item.id for c in commits for item in c.items if item.type == "observation"]
            expected = {f"obs-w{w}-{n}" for w in range(WRITERS) for n in range(COMMITS)}
            assert sorted(observed) == sorted(expected)  # each writer's, once: nothing lost, nothing doubled
            assert not any("obs-from-zombie" in c.model_dump_json() for c in commits)
            state = reducer.initial(workspace_id)
            for commit in commits:
                state = reducer.evolve(state, commit)
                for note in route(commit, state):
                    (snapshots if note.queue == "caseboard.snapshot" else promised).add((note.queue, note.id))
    finally:
        ledger.close()
    assert total == WORKSPACES * (1 + WRITERS * COMMITS) + 5  # ids[0] also has the fencing's five commits

    last: dict[str, Any] = {}

    def announced() -> list[tuple[str, str, int]] | None:
        last["status"] = status = cluster.status()
        if status["pending"] != 0 or status["head"] < total:  # a version lost in a race leaves a gap in the ids
            return None
        last["rows"] = rows = processed(cluster.database_url)
        last["missing"] = promised - {(q, n) for q, n, _ in rows}
        # read again after the rows: the status read before them may count as unprocessed what they show done
        last["status"] = status = cluster.status()
        return rows if not last["missing"] and len(rows) == status["delivered"] else None

    try:
        rows = poll("every commit announced and every notification processed", announced, timeout=120)
    except AssertionError as error:
        raise AssertionError(
            f"{error}: {last.get('status')}, {len(last.get('rows', []))} processed, "
            f"missing {sorted(last.get('missing', []))[:5]}"
        ) from None
    seen = [(q, n) for q, n, _ in rows]
    assert len(seen) == len(set(seen))  # each notification processed once
    assert last["status"]["unprocessed"] == 0
    assert set(seen) - promised <= snapshots


def fencing(servers: Servers, workspace_id: str) -> None:
    """A claim through server 0, reclaimed and claimed again through server 1: the first holder's result,
    sent through server 0 (whose cached state last saw its own claim), is fenced."""
    path = f"/workspaces/{workspace_id}/contributions"
    planner = servers.client(1, "planner-1", Role.PLANNER)
    zombie = servers.client(0, "specialist-a", Role.SPECIALIST)
    controller = servers.client(1, "controller", Role.CONTROLLER)
    successor = servers.client(1, "specialist-b", Role.SPECIALIST)
    request = {"type": "work_request", "request_id": "req-fence", "kind": "log_query", "target": "auth logs"}
    assert planner.post(path, json={"items": [request]}).status_code == 201
    claimed = zombie.post(path, json={"items": [{"type": "work_claim", "request_id": "req-fence", "lease_s": 600}]})
    assert claimed.status_code == 201, claimed.text
    assert claimed.json()["items"][0]["generation"] == 1
    reclaim = {"type": "work_reclaim", "request_id": "req-fence", "reason": "specialist-a went silent"}
    reclaimed = controller.post(path, json={"items": [reclaim]})
    assert reclaimed.status_code == 201, reclaimed.text
    assert reclaimed.json()["items"][0]["fenced_generation"] == 1
    again = successor.post(path, json={"items": [{"type": "work_claim", "request_id": "req-fence", "lease_s": 600}]})
    assert again.status_code == 201, again.text
    assert again.json()["items"][0]["generation"] == 2

    late = zombie.post(path, json={"items": [work_result(1, "obs-from-zombie")]})
    assert late.status_code == 409, late.text
    assert late.json()["reason"] == "fenced"
    assert late.json()["current_generation"] == 2
    accepted = successor.post(path, json={"items": [work_result(2, "obs-from-b")]})
    assert accepted.status_code == 201, accepted.text


def work_result(generation: int, obs_id: str) -> dict[str, Any]:
    return {
        "type": "work_result",
        "request_id": "req-fence",
        "generation": generation,
        "status": "completed",
        "summary": "the auth logs show the failures",
        "observation": {k: v for k, v in observation(obs_id).items() if k != "type"},
    }


def processed(url: str) -> list[tuple[str, str, int]]:
    store = DispatchStore(url)
    try:
        return store.processed_ids()
    finally:
        store.close()
