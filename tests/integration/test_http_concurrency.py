"""16 HTTP clients writing one workspace at once (PostgreSQL): nothing lost, only documented outcomes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.http_server import RunningServer, observation, open_body, running_server

CLIENTS = 16
PER_CLIENT = 8


@pytest.fixture
def server(postgres_url: str) -> Iterator[RunningServer]:
    with running_server(postgres_url) as running:
        yield running


def test_sixteen_clients_lose_nothing_and_see_only_documented_outcomes(server: RunningServer) -> None:
    operator = server.as_("oncall-operator", "operator")
    assert operator.post("/workspaces", json=open_body("ws-crowd")).status_code == 201
    clients = [server.as_(f"specialist-{n}", "specialist") for n in range(CLIENTS)]
    barrier = threading.Barrier(CLIENTS)
    results: list[list[tuple[str, int, dict[str, Any]]]] = [[] for _ in range(CLIENTS)]

    def work(n: int) -> None:
        client = clients[n]
        seen = 1
        barrier.wait(timeout=30)
        for i in range(PER_CLIENT):
            obs_id = f"obs-{n}-{i}"
            body: dict[str, Any] = {"items": [observation(obs_id)]}
            if i % 2:
                body["expected_version"] = seen  # compare-and-set on what this client last saw
            response = client.post("/workspaces/ws-crowd/contributions", json=body)
            outcome = response.json()
            results[n].append((obs_id, response.status_code, outcome))
            if response.status_code == 201:
                seen = outcome["workspace_version"]
            elif outcome.get("current_version"):
                seen = outcome["current_version"]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)

    flat = [entry for per_client in results for entry in per_client]
    assert len(flat) == CLIENTS * PER_CLIENT
    outcomes = {(status, body.get("reason")) for _, status, body in flat}
    assert outcomes <= {(201, None), (409, "version_conflict")}, outcomes
    unconditional = [entry for entry in flat if int(entry[0].rsplit("-", 1)[1]) % 2 == 0]
    assert all(status == 201 for _, status, _ in unconditional)
    accepted = {obs_id: body["workspace_version"] for obs_id, status, body in flat if status == 201}
    assert len(set(accepted.values())) == len(accepted)

    reader = server.as_("auditor", "reporter")
    projection = reader.get("/workspaces/ws-crowd").json()
    assert projection["workspace_version"] == 1 + len(accepted)
    assert {o["id"] for o in projection["observations"]} == set(accepted)
    versions: list[int] = []
    after = 0
    while True:
        page = reader.get("/workspaces/ws-crowd/ledger", params={"after": after}).json()
        versions += [c["workspace_version"] for c in page["commits"]]
        if page.get("next_after") is None:
            break
        after = page["next_after"]
    assert versions == list(range(1, 2 + len(accepted)))
    for _, status, body in flat:
        if status == 409:
            assert body["current_version"] > 1 and body["since"], body
