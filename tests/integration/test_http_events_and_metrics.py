"""The server-sent events stream of commits, health and Prometheus metrics."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.http_server import RunningServer, observation, open_body, running_server


@pytest.fixture
def server(sqlite_url: str) -> Iterator[RunningServer]:
    with running_server(sqlite_url) as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=open_body("ws-events")).status_code == 201
        yield running


def read_events(response: httpx.Response, until: int) -> list[dict[str, str]]:
    events, current = [], {}
    for line in response.iter_lines():
        if not line:
            if current:
                events.append(current)
                if current.get("event") == "end" or len([e for e in events if e.get("event") == "commit"]) >= until:
                    return events
            current = {}
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(": ")
        current[name] = value
    return events


def test_a_subscriber_gets_past_and_new_commits_in_order_with_resumable_ids(server: RunningServer) -> None:
    specialist = server.as_("log-specialist", "specialist")
    assert (
        specialist.post("/workspaces/ws-events/contributions", json={"items": [observation("obs-1")]}).status_code
        == 201
    )
    subscriber = server.as_("watcher", "controller")
    later = threading.Timer(
        0.3,
        lambda: specialist.post("/workspaces/ws-events/contributions", json={"items": [observation("obs-2")]}),
    )
    with subscriber.stream("GET", "/workspaces/ws-events/events", params={"timeout_s": 20}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        later.start()
        events = read_events(response, until=3)
    later.join()
    commits = [e for e in events if e.get("event") == "commit"]
    assert [e["id"] for e in commits] == ["1", "2", "3"]
    assert json.loads(commits[2]["data"])["items"] == ["observation obs-2"]
    resumed = subscriber.get("/workspaces/ws-events/events", params={"timeout_s": 0.2}, headers={"Last-Event-ID": "2"})
    ids = [line[4:] for line in resumed.text.splitlines() if line.startswith("id: ")]
    assert ids == ["3"]
    assert "event: end" in resumed.text and '"next_after": 3' in resumed.text


def test_the_stream_ends_when_the_client_disconnects(server: RunningServer) -> None:
    subscriber = server.as_("watcher", "controller")
    with subscriber.stream("GET", "/workspaces/ws-events/events", params={"timeout_s": 600}) as response:
        assert response.status_code == 200
        next(response.iter_lines())
    pattern = 'caseboard_http_requests_total{method="GET",route="/workspaces/{workspace_id}/events",status="200"} 1'
    deadline = time.monotonic() + 10
    while pattern not in httpx.get(f"{server.base_url}/metrics").text:
        assert time.monotonic() < deadline, "the stream was still open 10 s after the client left"
        time.sleep(0.05)


def test_health_and_metrics_count_commits_refusals_and_latency(server: RunningServer) -> None:
    health = httpx.get(f"{server.base_url}/health").json()
    assert (health["status"], health["ledger"]) == ("ok", "ok")
    planner = server.as_("planner-1", "planner")
    assert (
        planner.post("/workspaces/ws-events/contributions", json={"items": [observation("obs-x")]}).status_code == 403
    )
    assert (
        planner.post(
            "/workspaces/ws-events/contributions",
            json={"expected_version": 1, "items": [{"type": "question", "id": "q-1", "text": "Why?"}]},
        ).status_code
        == 201
    )
    assert (
        planner.post(
            "/workspaces/ws-events/contributions",
            json={"expected_version": 1, "items": [{"type": "question", "id": "q-2", "text": "How?"}]},
        ).status_code
        == 409
    )
    response = httpx.get(f"{server.base_url}/metrics")
    assert response.headers["content-type"].startswith("text/plain; version=0.0.4")
    text = response.text
    assert "caseboard_commits_total 2" in text  # the open and the question
    assert 'caseboard_refusals_total{reason="forbidden"} 1' in text
    assert 'caseboard_refusals_total{reason="version_conflict"} 1' in text
    route = "/workspaces/{workspace_id}/contributions"
    assert f'caseboard_http_request_duration_seconds_count{{route="{route}"}} 3' in text
    assert "ws-events" not in text and "planner-1" not in text
