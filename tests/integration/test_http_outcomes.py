"""Each refusal token has its documented HTTP status, and the body is the same outcome the CLI prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from caseboard.coordinator import parse_contribution
from caseboard.domain.outcome import Accepted, Refused
from tests.http_server import RunningServer, observation, open_body, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path_factory.mktemp('outcomes')}/ledger.db") as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=open_body("ws-out")).status_code == 201
        planner = running.as_("planner-1", "planner")
        request = {"type": "work_request", "request_id": "req-1", "kind": "log_query", "target": "auth logs"}
        assert planner.post("/workspaces/ws-out/contributions", json={"items": [request]}).status_code == 201
        holder = running.as_("log-specialist", "specialist")
        claim = {"type": "work_claim", "request_id": "req-1", "lease_s": 600}
        assert holder.post("/workspaces/ws-out/contributions", json={"items": [claim]}).status_code == 201
        yield running


def post(server: RunningServer, who: tuple[str, str], body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = server.as_(*who).post("/workspaces/ws-out/contributions", json=body)
    return response.status_code, response.json()


SPECIALIST = ("log-specialist", "specialist")
OTHER = ("change-specialist", "specialist")
PLANNER = ("planner-1", "planner")


@pytest.mark.parametrize(
    ("who", "body", "status", "reason"),
    [
        (SPECIALIST, {"expected_version": 1, "items": [observation("obs-late")]}, 409, "version_conflict"),
        (
            SPECIALIST,
            {"expected_version": 99, "items": [observation("obs-ahead")]},
            409,
            "expected_version_ahead",
        ),
        (OTHER, {"items": [{"type": "work_claim", "request_id": "req-1", "lease_s": 60}]}, 409, "lease_held"),
        (
            SPECIALIST,
            {"items": [{"type": "work_renew", "request_id": "req-1", "generation": 7, "lease_s": 60}]},
            409,
            "fenced",
        ),
        (PLANNER, {"items": [observation("obs-by-planner")]}, 403, "forbidden"),
        (
            PLANNER,
            {"items": [{"type": "hypothesis", "id": "h-1", "statement": "x", "supporting_evidence": ["nope"]}]},
            422,
            "unknown_reference",
        ),
        (PLANNER, {"items": [{"type": "question", "id": "req-1", "text": "again?"}]}, 409, "duplicate_id"),
        (PLANNER, {"items": [{"type": "question", "id": "q-x", "text": "x", "extra": 1}]}, 422, "invalid"),
        (PLANNER, {"items": []}, 422, "invalid"),
        (
            PLANNER,
            {"workspace_id": "ws-other", "items": [{"type": "question", "id": "q-y", "text": "y"}]},
            422,
            "invalid",
        ),
    ],
)
def test_each_refusal_has_its_documented_status(
    server: RunningServer, who: tuple[str, str], body: dict[str, Any], status: int, reason: str
) -> None:
    code, outcome = post(server, who, body)
    assert (code, outcome["ok"], outcome["reason"]) == (status, False, reason), outcome
    assert outcome["message"]


def test_a_version_conflict_names_the_current_version_and_the_commits_since(server: RunningServer) -> None:
    code, outcome = post(server, SPECIALIST, {"expected_version": 2, "items": [observation("obs-behind")]})
    assert code == 409
    assert outcome["current_version"] >= 3
    assert outcome["since"][0]["workspace_version"] == 3


def test_an_idempotent_retry_is_200_with_the_original_outcome_and_other_content_is_409(
    server: RunningServer,
) -> None:
    body = {"idempotency_key": "spec/obs-once", "items": [observation("obs-once")]}
    first_code, first = post(server, SPECIALIST, body)
    again_code, again = post(server, SPECIALIST, body)
    assert (first_code, again_code) == (201, 200)
    assert again["idempotent_replay"] is True
    assert again["workspace_version"] == first["workspace_version"]
    changed = {"idempotency_key": "spec/obs-once", "items": [observation("obs-twice")]}
    assert post(server, SPECIALIST, changed)[1]["reason"] == "idempotency_mismatch"


def test_a_closed_workspace_refuses_with_409(tmp_path_factory: pytest.TempPathFactory) -> None:
    with running_server(f"sqlite:///{tmp_path_factory.mktemp('closed')}/ledger.db") as server:
        operator = server.as_("op", "operator")
        assert operator.post("/workspaces", json=open_body("ws-closed")).status_code == 201
        close = {"type": "status", "to": "closed", "reason": "done"}
        assert operator.post("/workspaces/ws-closed/contributions", json={"items": [close]}).status_code == 201
        planner = server.as_("planner-1", "planner")
        question = {"type": "question", "id": "q-late", "text": "late?"}
        response = planner.post("/workspaces/ws-closed/contributions", json={"items": [question]})
        assert (response.status_code, response.json()["reason"]) == (409, "workspace_closed")
        reopened = operator.post("/workspaces", json=open_body("ws-closed"))
        assert (reopened.status_code, reopened.json()["reason"]) == (409, "workspace_exists")


def test_an_oversized_body_is_refused_before_it_is_read_whole(server: RunningServer) -> None:
    huge = {"items": [observation(f"obs-big-{i}", "x" * 4000) for i in range(600)]}
    response = server.as_(*SPECIALIST).post("/workspaces/ws-out/contributions", json=huge)
    assert response.status_code == 413


def test_http_answers_with_the_json_submit_returns_in_process_but_the_author(server: RunningServer) -> None:
    """The same contributions to two workspaces of the same history, one over HTTP and one to
    ``Coordinator.submit`` in process: key for key, in order, the same JSON (times of the commits aside)."""
    operator = server.as_("oncall-operator", "operator")
    for workspace_id in ("ws-same-http", "ws-same-local"):
        assert operator.post("/workspaces", json=open_body(workspace_id)).status_code == 201
    hypothesis = {"type": "hypothesis", "id": "hyp-1", "statement": "a rotated certificate", "supporting_evidence": []}
    steps: list[tuple[tuple[str, str], dict[str, Any], int, type[Accepted | Refused]]] = [
        (SPECIALIST, {"idempotency_key": "spec/two", "items": [observation("o-1"), observation("o-2")]}, 201, Accepted),
        (SPECIALIST, {"idempotency_key": "spec/two", "items": [observation("o-1"), observation("o-2")]}, 200, Accepted),
        (PLANNER, {"items": [hypothesis, {"type": "question", "id": "q-1", "text": "which hosts?"}]}, 201, Accepted),
        (SPECIALIST, {"expected_version": 1, "items": [observation("o-3")]}, 409, Refused),
        (PLANNER, {"items": [observation("o-4")]}, 403, Refused),
    ]
    coordinator = server.app.coordinator()
    for (principal, role), body, status, kind in steps:
        response = server.as_(principal, role).post("/workspaces/ws-same-http/contributions", json=body)
        author = {"principal": principal, "role": role}
        outcome = coordinator.submit(parse_contribution({"workspace_id": "ws-same-local", "author": author, **body}))
        assert (response.status_code, type(outcome)) == (status, kind), response.json()
        over_http = response.json()
        if kind is Accepted:
            assert over_http.pop("author") == author
        assert without_times(over_http) == without_times(json.loads(json.dumps(outcome.as_json())))
        assert list(over_http) == list(outcome)


def without_times(body: dict[str, Any]) -> str:
    """The body as JSON text, with the commit times of a conflict's ``since`` left out."""
    since = [{k: v for k, v in commit.items() if k != "at"} for commit in body.get("since", [])]
    return json.dumps({**body, **({"since": since} if since else {})})
