"""An ``/events`` stream opened before its key was revoked ends within the key's revocation delay
(issue 10, item 5): the stream asks the key store again every ``key_cache_s``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from tests.http_server import RunningServer, open_body, running_server

REVOCATION_DELAY_S = 0.5


@pytest.fixture(params=["sqlite", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    url = str(request.getfixturevalue(f"{request.param}_url"))
    with running_server(url, key_cache_s=REVOCATION_DELAY_S) as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=open_body("ws-events")).status_code == 201
        yield running


def test_an_event_stream_ends_within_the_revocation_delay_once_its_key_is_revoked(server: RunningServer) -> None:
    token = server.token("watcher", "controller")
    key_id = token.split("_")[1]
    subscriber = server.client(token)
    with subscriber.stream("GET", "/workspaces/ws-events/events", params={"timeout_s": 60}) as response:
        assert response.status_code == 200
        lines = response.iter_lines()
        while next(lines) != "id: 1":  # the stream delivers the workspace's commit: it is live
            pass
        server.keys.revoke(key_id)
        revoked = time.monotonic()
        end = None
        for line in lines:
            if line == "event: end":
                end = json.loads(next(lines).removeprefix("data: "))
                break
        elapsed = time.monotonic() - revoked
    assert end is not None and end["reason"] == "revoked" and end["next_after"] == 1
    assert elapsed < REVOCATION_DELAY_S + 0.5, f"the stream ended {elapsed:.2f} s after the revocation"
    assert subscriber.get("/workspaces/ws-events").status_code == 401


def test_an_event_stream_of_a_key_that_stays_valid_runs_to_its_timeout(server: RunningServer) -> None:
    subscriber = server.as_("watcher", "controller")
    started = time.monotonic()
    answer = subscriber.get("/workspaces/ws-events/events", params={"timeout_s": 1.5})
    assert time.monotonic() - started >= 1.5
    assert '"reason": "timeout"' in answer.text and "id: 1" in answer.text
