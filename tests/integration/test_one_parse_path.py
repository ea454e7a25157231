"""HTTP and the command line validate a contribution through the one strict parser
(``caseboard.coordinator.parse``): the same bytes, sent as the body of ``POST /workspaces/{id}/contributions``
and as a line of ``caseboard submit``, get the same refusal (reason, field and message). A nested object's
error names its own path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import caseboard
from tests.http_server import observation, open_body, running_server

AUTHOR = {"principal": "log-specialist", "role": "specialist"}


def envelope(**fields: Any) -> dict[str, Any]:
    return {"workspace_id": "ws-parse", "author": AUTHOR, "items": [observation("obs-1")], **fields}


def raw(**fields: Any) -> bytes:
    return json.dumps(envelope(**fields)).encode()


def body_of(obs: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in obs.items() if key != "type"}


RESULT = {"type": "work_result", "request_id": "req-1", "generation": 1, "status": "completed", "summary": "s"}
BAD: list[tuple[str, bytes, str]] = [
    # (what, the bytes sent, the field the refusal must name)
    ("a string for a version", raw(expected_version="2"), "expected_version"),
    ("a float for a version", raw(expected_version=2.0), "expected_version"),
    ("a boolean for a version", raw(expected_version=True), "expected_version"),
    ("a number for a time", raw(at=1767225600), "at"),
    ("no items", raw(items=[]), "items"),
    ("an unknown type", raw(items=[{"type": "rumour", "id": "x"}]), "items[0].type"),
    ("an item without a type", raw(items=[{"id": "x"}]), "items[0].type"),
    (
        "an unknown field of an item",
        raw(items=[{**observation("obs-1"), "colour": "red"}]),
        "items[0].colour",
    ),
    (
        "an unknown field of a result's observation",
        raw(items=[{**RESULT, "observation": {**body_of(observation("obs-1")), "colour": "red"}}]),
        "items[0].observation.colour",
    ),
    (
        "a bad field of a result's observation",
        raw(items=[{**RESULT, "observation": {**body_of(observation("obs-1")), "event_time": 5}}]),
        "items[0].observation.event_time",
    ),
    (
        "a bad field of a link",
        json.dumps(
            envelope(items=[{"type": "link", "observation": 7, "hypothesis": "h", "relation": "supports"}])
        ).encode(),
        "items[0].observation",
    ),
    (
        "a time without a zone",
        raw(items=[{**observation("obs-1"), "event_time": "2026-03-02T14:00:00"}]),
        "items[0].event_time",
    ),
    (
        "a query that ends before it starts",
        json.dumps(
            envelope(
                items=[
                    {
                        **RESULT,
                        "query": {"time_range": ["2026-03-02T14:00:00Z", "2026-03-02T13:00:00Z"], "completed": True},
                    }
                ]
            )
        ).encode(),
        "items[0].query",
    ),
    ("a statement too long", raw(items=[observation("obs-1", "x" * 5000)]), "items[0].statement"),
    ("an empty idempotency key", raw(idempotency_key=""), "idempotency_key"),
    ("an unknown envelope field", raw(colour="red"), "colour"),
    ("not JSON", b'{"workspace_id": "ws-parse", "items": [', "$"),
]


@pytest.fixture(scope="module")
def refusals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """Each bad input's refusal over HTTP and on the command line, each on a ledger where ``ws-parse`` is open."""
    folder = tmp_path_factory.mktemp("parse")
    http: list[dict[str, Any]] = []
    with running_server(f"sqlite:///{folder}/http.db") as server:
        assert (
            server.as_("oncall-operator", "operator").post("/workspaces", json=open_body("ws-parse")).status_code == 201
        )
        client = server.as_("log-specialist", "specialist")
        for _, sent, _ in BAD:
            response = client.post(
                "/workspaces/ws-parse/contributions", content=sent, headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 422, response.text
            http.append(response.json())
    url = f"sqlite:///{folder}/cli.db"
    opening = {
        "workspace_id": "ws-parse",
        "author": {"principal": "oncall-operator", "role": "operator"},
        "items": [
            {
                "type": "open",
                "execution_mode": "read_only",
                **{k: v for k, v in open_body("ws-parse").items() if k != "workspace_id"},
            }
        ],
    }
    (folder / "open.jsonl").write_text(json.dumps(opening) + "\n")
    assert caseboard("submit", "ws-parse", "--file", str(folder / "open.jsonl"), url=url).returncode == 0
    (folder / "bad.jsonl").write_bytes(b"".join(sent + b"\n" for _, sent, _ in BAD))
    run = caseboard("submit", "ws-parse", "--file", str(folder / "bad.jsonl"), url=url)
    assert run.returncode == 1, run.stderr
    cli = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert len(cli) == len(BAD), run.stdout
    return {what: (http[index], cli[index]) for index, (what, _, _) in enumerate(BAD)}


@pytest.mark.parametrize(("what", "field"), [(what, field) for what, _, field in BAD])
def test_http_and_the_command_line_refuse_the_same_input_the_same_way(
    refusals: dict[str, tuple[dict[str, Any], dict[str, Any]]], what: str, field: str
) -> None:
    over_http, on_the_line = refusals[what]
    assert over_http["reason"] == on_the_line["reason"] == "invalid"
    assert over_http["field"] == on_the_line["field"] == field
    assert over_http["message"] == on_the_line["message"]
    assert on_the_line["line"] == 1 + [w for w, _, _ in BAD].index(what)


def test_the_nested_observation_names_its_own_path(refusals: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> None:
    over_http, _ = refusals["an unknown field of a result's observation"]
    assert over_http["message"].startswith("items[0].observation.colour: unknown field: items[0].observation accepts")
