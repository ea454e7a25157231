"""The submit route's fast path (ADR 0034) answers exactly as the FastAPI route does.

Two servers over two identical ledgers, one with the fast path and one without, get the same requests in the
same order. Every answer (status, body, the headers a client reads) must be the same, and the fast path
must have answered exactly the requests that are its common case: a cached key, a JSON body that validates,
a visible workspace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from caseboard.api import create_app
from caseboard.api.embedded import serve_in_thread
from caseboard.app import build_app
from caseboard.coordinator.parse import MAX_BODY_BYTES
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.settings import Settings
from tests.http_server import RunningServer, observation, open_body, running_server

AT = "2026-03-02T14:10:00Z"


@dataclass(frozen=True)
class Call:
    name: str
    fast: bool  # answered on the fast path
    who: str = "specialist"  # a key name of KEYS, or "none" / "unknown"
    body: Any = None  # JSON, or bytes sent as they are
    path: str = "/workspaces/ws-d/contributions"
    headers: tuple[tuple[str, str], ...] = ()
    loop: bool = False  # on PostgreSQL, committed (or replayed) on the event loop rather than a thread


KEYS = {
    "specialist": ("log-specialist", ("specialist",), "tenant-a"),
    "planner": ("planner-1", ("planner",), "tenant-a"),
    "operator": ("oncall-operator", ("operator",), "tenant-a"),
    "both": ("lead-1", ("planner", "specialist"), "tenant-a"),
    "other-tenant": ("intruder", ("specialist",), "tenant-b"),
}


def obs(obs_id: str, **envelope: Any) -> dict[str, Any]:
    return {"at": AT, "items": [observation(obs_id)], **envelope}


CALLS = [
    Call("an observation", True, body=obs("obs-1"), loop=True),
    Call(
        "a forged author is ignored",
        True,
        body={**obs("obs-2"), "author": {"principal": "x", "role": "operator"}},
        loop=True,
    ),
    Call("an idempotency key", True, body=obs("obs-3", idempotency_key="k-1"), loop=True),
    Call("the same key again is replayed", True, body=obs("obs-3", idempotency_key="k-1"), loop=True),
    Call("the same key for other content", True, body=obs("obs-4", idempotency_key="k-1")),
    Call("a stale expected_version", True, body=obs("obs-5", expected_version=1)),
    Call("a role the coordinator refuses", True, who="planner", body=obs("obs-6")),
    Call(
        "an unknown reference",
        True,
        who="planner",
        body={
            "at": AT,
            "items": [{"type": "hypothesis", "id": "h-1", "statement": "x", "supporting_evidence": ["nope"]}],
        },
    ),
    Call("a reused id", True, body=obs("obs-1")),
    Call(
        "a key of several roles with its role header",
        True,
        who="both",
        body=obs("obs-7"),
        headers=(("X-Caseboard-Role", "specialist"),),
        loop=True,
    ),
    Call(
        "a charset in the content type",
        True,
        body=obs("obs-8"),
        headers=(("Content-Type", "application/json; charset=utf-8"),),
        loop=True,
    ),
    Call(
        "a JSON type of its own",
        True,
        body=obs("obs-21"),
        headers=(("Content-Type", "application/vnd.caseboard+json"),),
        loop=True,
    ),
    Call(
        "a JSON suffix on a type the route does not read",
        False,
        body=obs("obs-22"),
        headers=(("Content-Type", "text/x+json"),),
    ),
    Call("a key of several roles without a role header", False, who="both", body=obs("obs-9")),
    Call("a role the key does not hold", False, body=obs("obs-10"), headers=(("X-Caseboard-Role", "operator"),)),
    Call("no key", False, who="none", body=obs("obs-11")),
    Call("an unknown key", False, who="unknown", body=obs("obs-12")),
    Call("another scheme", False, body=obs("obs-13"), headers=(("Authorization", "Basic dXNlcjpwYXNz"),)),
    Call("malformed JSON", False, body=b'{"items": [}'),
    Call("an unknown item type", False, body={"at": AT, "items": [{"type": "rumour", "id": "r-1"}]}),
    Call("an extra field", False, body={**obs("obs-14"), "priority": "high"}),
    Call("a body naming another workspace", False, body={**obs("obs-15"), "workspace_id": "ws-other"}),
    Call("another tenant's workspace", False, who="other-tenant", body=obs("obs-16")),
    Call("an unknown workspace", False, body=obs("obs-17"), path="/workspaces/ws-missing/contributions"),
    Call("an invalid workspace id", False, body=obs("obs-18"), path="/workspaces/-bad/contributions"),
    Call(
        "constraints moving the tenant",
        False,
        who="operator",
        body={
            "at": AT,
            "items": [{"type": "constraints", "scope": {"tenant_id": "tenant-b", "environment": "e", "service": "s"}}],
        },
    ),
    Call("not JSON", False, body=obs("obs-19"), headers=(("Content-Type", "text/plain"),)),
    Call("a body over the limit", False, body=b'{"items": ["' + b"x" * MAX_BODY_BYTES + b'"]}'),
    Call("an empty body", False, body=b""),
    Call("JSON nested too deep to parse", False, body=b"[" * 100_000 + b"]" * 100_000),
    Call("after all that, an observation", True, body=obs("obs-20"), loop=True),
]


@pytest.fixture(params=["sqlite", "postgres"])
def servers(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[RunningServer, RunningServer]]:
    """On PostgreSQL, the fast path commits its common case on the event loop (ADR 0035)."""
    if request.param == "sqlite":
        urls = f"sqlite:///{tmp_path}/fast.db", f"sqlite:///{tmp_path}/routed.db"
    else:
        url = str(request.getfixturevalue("postgres_url"))
        urls = url, f"{url}_routed"
        request.addfinalizer(lambda: drop_schema(urls[1]))
    # Keys stay cached for the whole test: which requests take the fast path must not depend on its pace.
    with (
        running_server(urls[0], trust_timestamps=True, key_cache_s=600) as fast,
        running_server(urls[1], trust_timestamps=True, key_cache_s=600) as routed,
    ):
        routed.api.fast_submit = False
        for server in (fast, routed):
            operator = server.as_("opener", "operator")
            assert operator.post("/workspaces", json=open_body("ws-d", at=AT)).status_code == 201
            assert operator.post("/workspaces", json=open_body("ws-other", at=AT)).status_code == 201
        yield fast, routed


def clients(server: RunningServer) -> dict[str, httpx.Client]:
    made = {"none": httpx.Client(base_url=server.base_url), "unknown": server.client("cb_unknown_token")}
    for name, (principal, roles, tenant) in KEYS.items():
        made[name] = server.client(server.token(principal, *roles, tenant=tenant))
        assert made[name].get("/whoami", headers={"X-Caseboard-Role": roles[0]}).status_code == 200  # cached
    server.clients.append(made["none"])
    return made


def send(client: httpx.Client, call: Call) -> dict[str, Any]:
    headers = dict(call.headers)
    if isinstance(call.body, bytes):
        headers.setdefault("Content-Type", "application/json")
        response = client.post(call.path, content=call.body, headers=headers)
    else:
        content = json.dumps(call.body).encode()
        headers.setdefault("Content-Type", "application/json")
        response = client.post(call.path, content=content, headers=headers)
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    return {
        "status": response.status_code,
        "body": body,
        "content-type": response.headers.get("content-type"),
        "www-authenticate": response.headers.get("www-authenticate"),
    }


def drop_schema(url: str) -> None:
    schema = url.rsplit("schema=", 1)[1]
    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def counter(server: RunningServer, name: str) -> int:
    metrics = httpx.get(f"{server.base_url}/metrics").text
    return int(next(x for x in metrics.splitlines() if x.startswith(f"{name} ")).split()[1])


def fast_answers(server: RunningServer) -> int:
    return counter(server, "caseboard_http_submit_fast_path_total")


def loop_answers(server: RunningServer) -> int:
    return counter(server, "caseboard_http_submit_on_loop_total")


def test_the_fast_path_answers_its_common_case_exactly_as_the_route_and_hands_on_the_rest(
    servers: tuple[RunningServer, RunningServer],
) -> None:
    fast, routed = servers
    fast_clients, routed_clients = clients(fast), clients(routed)
    on_loop = fast.app.ledger.appends_on_loop
    for call in CALLS:
        before, before_loop = fast_answers(fast), loop_answers(fast)
        answer = send(fast_clients[call.who], call)
        assert answer == send(routed_clients[call.who], call), call.name
        assert fast_answers(fast) - before == (1 if call.fast else 0), call.name
        assert loop_answers(fast) - before_loop == (1 if call.loop and on_loop else 0), call.name
    assert fast_answers(routed) == 0
    assert fast.app.ledger.read("ws-d") == routed.app.ledger.read("ws-d")
    assert loop_answers(fast) == (sum(call.loop for call in CALLS) if on_loop else 0)


def test_a_chunked_body_is_read_whole_on_the_fast_path(servers: tuple[RunningServer, RunningServer]) -> None:
    fast, _ = servers
    client = clients(fast)["specialist"]
    content = json.dumps(obs("obs-chunked")).encode()
    before = fast_answers(fast)
    response = client.post(
        "/workspaces/ws-d/contributions",
        content=iter([content[:10], content[10:]]),
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert fast_answers(fast) == before + 1


class Broken:
    submits_on_loop = True

    def submit(self, contribution: object) -> dict[str, Any]:
        raise RuntimeError("a bug in the coordinator")

    async def submit_on_loop(self, contribution: object) -> dict[str, Any]:
        raise RuntimeError("a bug in the coordinator")


def test_an_unexpected_error_is_a_500_on_both_paths_and_counted(
    servers: tuple[RunningServer, RunningServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    for server in servers:
        client = clients(server)["specialist"]
        monkeypatch.setattr(server.app, "coordinator", lambda **_: Broken())
        response = client.post("/workspaces/ws-d/contributions", json=obs("obs-broken"))
        assert response.status_code == 500
        metrics = httpx.get(f"{server.base_url}/metrics").text
        route = 'method="POST",route="/workspaces/{workspace_id}/contributions",status="500"'
        assert f"caseboard_http_requests_total{{{route}}} 1" in metrics


def test_server_shutdown_waits_for_the_submit_threads_and_closes_what_the_server_owns(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/ledger.db"
    app, keys = build_app(Settings(), database_url=url), open_key_store(url)
    operator = keys.create("op", (Role.OPERATOR,), "tenant-a").token
    specialist = keys.create("spec", (Role.SPECIALIST,), "tenant-a").token
    closed: list[str] = []
    keys_close, app_close = keys.close, app.close
    keys.close = lambda: (closed.append("keys"), keys_close())[-1]  # type: ignore[method-assign]
    app.close = lambda: (closed.append("app"), app_close())[-1]  # type: ignore[method-assign]

    def submit_threads() -> list[threading.Thread]:
        return [t for t in threading.enumerate() if t.name.startswith("caseboard-submit")]

    with serve_in_thread(create_app(app, keys, close_on_shutdown=True)) as base_url:
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {operator}"}) as client:
            assert client.post("/workspaces", json=open_body("ws-shutdown")).status_code == 201
        with httpx.Client(base_url=base_url, headers={"Authorization": f"Bearer {specialist}"}) as client:
            for number in range(2):  # the first caches the key; the second takes the fast path
                answer = client.post(
                    "/workspaces/ws-shutdown/contributions", json={"items": [observation(f"o-{number}")]}
                )
                assert answer.status_code == 201, answer.text
        assert submit_threads()
        assert closed == []
    assert submit_threads() == []
    assert closed == ["keys", "app"]
