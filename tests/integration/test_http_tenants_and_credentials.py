"""Credentials decide the author and the tenant: a body cannot; another tenant's workspace is invisible."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from caseboard.domain.items import Role
from tests.http_server import RunningServer, observation, open_body, running_server

WORKSPACE_ROUTES = {
    "/workspaces/{workspace_id}",
    "/workspaces/{workspace_id}/contributions",
    "/workspaces/{workspace_id}/ledger",
    "/workspaces/{workspace_id}/timeline",
    "/workspaces/{workspace_id}/view",
    "/workspaces/{workspace_id}/events",
    "/workspaces/{workspace_id}/judgments",
    "/workspaces/{workspace_id}/health",
    "/workspaces/{workspace_id}/handoffs",
}
PROBES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "/workspaces/{ws}/handoffs", {}),
    ("GET", "/workspaces/{ws}", {}),
    ("GET", "/workspaces/{ws}", {"params": {"version": 1}}),
    ("GET", "/workspaces/{ws}", {"params": {"version": 999}}),
    ("GET", "/workspaces/{ws}", {"params": {"format": "yaml"}}),
    ("GET", "/workspaces/{ws}", {"params": {"reducer": "no-such-reducer"}}),
    ("POST", "/workspaces/{ws}/contributions", {"json": {"items": [observation("obs-b-1")]}}),
    (
        "POST",
        "/workspaces/{ws}/contributions",
        {"json": {"expected_version": 1, "items": [observation("obs-b-2")]}},
    ),
    ("GET", "/workspaces/{ws}/ledger", {}),
    ("GET", "/workspaces/{ws}/ledger", {"params": {"after": 1}}),
    ("GET", "/workspaces/{ws}/timeline", {}),
    ("GET", "/workspaces/{ws}/judgments", {}),
    ("GET", "/workspaces/{ws}/health", {}),
    ("GET", "/workspaces/{ws}/health", {"params": {"version": 999}}),
    ("GET", "/workspaces/{ws}/view", {"params": {"budget_chars": 4000}}),
    ("GET", "/workspaces/{ws}/view", {"params": {"budget_chars": 4000, "version": 5}}),
    ("GET", "/workspaces/{ws}/events", {"params": {"timeout_s": 1}}),
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path_factory.mktemp('tenants')}/ledger.db") as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=open_body("ws-tenant-a")).status_code == 201
        specialist = running.as_("log-specialist", "specialist")
        assert (
            specialist.post(
                "/workspaces/ws-tenant-a/contributions", json={"items": [observation("obs-a-1")]}
            ).status_code
            == 201
        )
        yield running


def without_ids(response: httpx.Response, workspace_id: str) -> tuple[int, str, str]:
    return (
        response.status_code,
        response.headers.get("content-type", ""),
        response.text.replace(workspace_id, "WS"),
    )


def test_every_workspace_route_is_probed(server: RunningServer) -> None:
    paths = set(httpx.get(f"{server.base_url}/openapi.json").json()["paths"])
    workspace_paths = {p for p in paths if p.startswith("/workspaces/")}
    assert workspace_paths == WORKSPACE_ROUTES
    assert {path.replace("{ws}", "{workspace_id}") for _, path, _ in PROBES} == WORKSPACE_ROUTES


@pytest.mark.parametrize(("method", "path", "options"), PROBES, ids=[f"{m} {p} {o}" for m, p, o in PROBES])
def test_another_tenants_workspace_answers_exactly_as_a_missing_one(
    server: RunningServer, method: str, path: str, options: dict[str, Any]
) -> None:
    outsider = server.as_("tenant-b-operator", "operator", tenant="tenant-b")
    foreign = outsider.request(method, path.format(ws="ws-tenant-a"), **options)
    missing = outsider.request(method, path.format(ws="ws-never-opened"), **options)
    assert foreign.status_code == 404
    assert foreign.json()["reason"] == "unknown_workspace"
    assert without_ids(foreign, "ws-tenant-a") == without_ids(missing, "ws-never-opened")
    insider = server.as_("tenant-a-reader", "operator")
    assert insider.request(method, path.format(ws="ws-tenant-a"), **options).status_code != 404


def test_nothing_was_written_by_the_other_tenant(server: RunningServer) -> None:
    reader = server.as_("tenant-a-auditor", "reporter")
    commits = reader.get("/workspaces/ws-tenant-a/ledger").json()["commits"]
    assert [c["author"]["principal"] for c in commits] == ["oncall-operator", "log-specialist"]


def test_a_key_cannot_open_a_workspace_in_another_tenant(server: RunningServer) -> None:
    operator = server.as_("tenant-a-op-2", "operator")
    response = operator.post("/workspaces", json=open_body("ws-smuggled", tenant="tenant-b"))
    assert response.status_code == 403
    assert response.json()["reason"] == "forbidden"
    outsider = server.as_("tenant-b-op-2", "operator", tenant="tenant-b")
    assert outsider.get("/workspaces/ws-smuggled").status_code == 404


def test_constraints_cannot_move_a_workspace_to_another_tenant(server: RunningServer) -> None:
    operator = server.as_("tenant-a-op-3", "operator")
    scope = {"tenant_id": "tenant-b", "environment": "production", "service": "payments-api"}
    response = operator.post(
        "/workspaces/ws-tenant-a/contributions", json={"items": [{"type": "constraints", "scope": scope}]}
    )
    assert response.status_code == 403
    assert operator.get("/workspaces/ws-tenant-a").json()["scope"]["tenant_id"] == "tenant-a"


def test_a_forged_author_in_the_body_is_ignored(server: RunningServer) -> None:
    planner = server.as_("planner-7", "planner")
    forged = {"principal": "oncall-operator", "role": "operator"}
    hypothesis = {
        "type": "hypothesis",
        "id": "hyp-forged-author",
        "statement": "The change initiated it",
        "supporting_evidence": ["obs-a-1"],
    }
    accepted = planner.post("/workspaces/ws-tenant-a/contributions", json={"author": forged, "items": [hypothesis]})
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["author"] == {"principal": "planner-7", "role": "planner"}
    version = accepted.json()["workspace_version"]
    commit = planner.get("/workspaces/ws-tenant-a/ledger", params={"after": version - 1}).json()["commits"][0]
    assert commit["author"] == {"principal": "planner-7", "role": "planner"}
    closing = {"type": "status", "to": "closed", "reason": "the forged operator closes it"}
    refused = planner.post("/workspaces/ws-tenant-a/contributions", json={"author": forged, "items": [closing]})
    assert refused.status_code == 403
    assert refused.json()["reason"] == "forbidden"
    assert planner.get("/workspaces/ws-tenant-a").json()["status"] == "investigating"


def test_a_key_with_several_roles_must_name_one_it_holds(server: RunningServer) -> None:
    token = server.token("multi-1", "planner", "specialist")
    assert server.client(token).get("/whoami").status_code == 422
    assert server.client(token, "operator").get("/whoami").status_code == 403
    acting = server.client(token, "specialist").get("/whoami").json()
    assert (acting["principal"], acting["role"], acting["tenant_id"]) == ("multi-1", "specialist", "tenant-a")


def test_missing_wrong_and_revoked_keys_are_unauthenticated(server: RunningServer) -> None:
    assert httpx.get(f"{server.base_url}/workspaces/ws-tenant-a").status_code == 401
    issued = server.keys.create("temp-reader", (Role.REPORTER,), "tenant-a")
    good = server.client(issued.token)
    assert good.get("/workspaces/ws-tenant-a").status_code == 200
    wrong = server.client(issued.token[:-4] + "AAAA")
    assert wrong.get("/workspaces/ws-tenant-a").status_code == 401
    server.keys.revoke(issued.key.key_id)
    deadline = time.monotonic() + 5  # an authenticated key is remembered for key_cache_s (1 s)
    while (revoked := good.get("/workspaces/ws-tenant-a")).status_code != 401:
        assert time.monotonic() < deadline, "a revoked key still worked after 5 s"
        time.sleep(0.05)
    assert revoked.json()["reason"] == "unauthenticated"


def test_no_body_can_change_the_execution_mode(server: RunningServer) -> None:
    operator = server.as_("tenant-a-op-4", "operator")
    opened = operator.post("/workspaces", json=open_body("ws-mode", execution_mode="read_write"))
    assert opened.status_code == 422
    sneaky = operator.post(
        "/workspaces/ws-tenant-a/contributions",
        json={"items": [{"type": "constraints", "goal": "x", "execution_mode": "read_write"}]},
    )
    assert sneaky.status_code == 422
    assert operator.get("/workspaces/ws-tenant-a").json()["execution_mode"] == "read_only"
