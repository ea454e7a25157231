"""A JSON body sent under another content type (``curl -d`` sends ``application/x-www-form-urlencoded``), or
under none, is never read as JSON: its refusal says so and names the header to send, on every route that takes a
JSON body, instead of pydantic's words for bytes that are not an object. The fast path of the submit route reads
a body as JSON by the route's own rule, so no type is taken by one and refused by the other. A body sent as
JSON is read as JSON, so a JSON body that is not an object keeps the parser's words."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.http_server import RunningServer, observation, open_body, running_server

ADVICE = "which is not read as JSON: send it with Content-Type: application/json"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    folder = tmp_path_factory.mktemp("content-type")
    with running_server(f"sqlite:///{folder}/ledger.db") as running:
        assert (
            running.as_("oncall-operator", "operator").post("/workspaces", json=open_body("ws-ct")).status_code == 201
        )
        yield running


@pytest.mark.parametrize("opening", [True, False], ids=["open", "contribute"])
@pytest.mark.parametrize(
    "content_type", ["application/x-www-form-urlencoded", "text/plain; charset=utf-8", "text/x+json", None]
)
def test_a_json_body_under_another_type_is_told_the_header(
    server: RunningServer, opening: bool, content_type: str | None
) -> None:
    fresh = f"{'open' if opening else 'obs'}-{len(content_type or '')}"  # an id of its own per case
    if opening:
        client, path, body = server.as_("oncall-operator", "operator"), "/workspaces", open_body(f"ws-{fresh}")
    else:
        client, path = server.as_("log-specialist", "specialist"), "/workspaces/ws-ct/contributions"
        body = {"items": [observation(fresh)]}
    sent = json.dumps(body).encode()
    assert client.get("/whoami").status_code == 200  # the key cached, so the submit route's fast path may take it
    refused = client.post(path, content=sent, headers={} if content_type is None else {"Content-Type": content_type})
    assert refused.status_code == 422
    answer = refused.json()
    assert answer["ok"] is False and answer["reason"] == "invalid" and answer["field"] == "$"
    sent_as = "with no Content-Type" if content_type is None else f"as {content_type!r}"
    assert answer["message"] == f"$: the body was sent {sent_as}, {ADVICE}"
    accepted = client.post(path, content=sent, headers={"Content-Type": "application/json"})
    assert accepted.status_code == 201, accepted.text


def test_a_json_body_that_is_not_an_object_keeps_its_own_refusal(server: RunningServer) -> None:
    client = server.as_("log-specialist", "specialist")
    for headers in ({"Content-Type": "application/json"}, {"Content-Type": "application/vnd.caseboard+json"}):
        for path in ("/workspaces/ws-ct/contributions", "/workspaces"):
            refused = client.post(path, content=b"[]", headers=headers)
            assert refused.status_code == 422
            answer = refused.json()
            assert answer["reason"] == "invalid" and answer["field"] == "$"
            assert "object" in answer["message"] and ADVICE not in answer["message"]
