"""MCP over streamable HTTP at /mcp of a running ``caseboard serve``, with the official SDK's client: the same
contract, keys, tenants and refusals as the HTTP API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
import structlog
from mcp import MCPError

from caseboard.cli.main import main
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.mcp_server.refusals import NEXT_STEPS
from tests.conftest import scenario_lines, stale_install
from tests.http_server import LIMITS, observation
from tests.mcp_sessions import (
    ServeProcess,
    call,
    caseboard_serve,
    over_http,
    scenario_with_stale_install,
    submit_arguments,
)

pytestmark = pytest.mark.postgres
TOOLS = {"whoami", "list_workspaces", "read_view", "read_workspace", "changes_since", "list_work", "submit"}
TOOLS |= {"search_knowledge"}  # prior findings from other incidents (docs/knowledge.md)


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture(scope="module")
def served(postgres_available: str) -> Iterator[tuple[ServeProcess, str]]:
    import uuid

    import psycopg

    schema = f"t_{uuid.uuid4().hex[:12]}"
    url = f"{postgres_available}?schema={schema}"
    try:
        with caseboard_serve(url, "--trust-timestamps") as server:
            yield server, url
    finally:
        with psycopg.connect(postgres_available, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def token(url: str, principal: str, *roles: str, tenant: str = "tenant-a") -> str:
    keys = open_key_store(url)
    try:
        return keys.create(principal, tuple(Role(r) for r in roles), tenant).token
    finally:
        keys.close()


def open_arguments(workspace_id: str, tenant: str = "tenant-a") -> dict[str, Any]:
    item = {
        "type": "open",
        "goal": "Find the failure mechanism",
        "scope": {"tenant_id": tenant, "environment": "production", "service": "payments-api"},
        "runtime_limits": LIMITS,
        "execution_mode": "read_only",
    }
    return {"workspace_id": workspace_id, "items": [item]}


def test_the_server_lists_the_contract_tools_and_three_resource_templates(
    served: tuple[ServeProcess, str],
) -> None:
    server, url = served

    async def scenario() -> None:
        async with over_http(server.base_url, token(url, "lister", "reporter")) as client:
            tools = (await client.list_tools()).tools
            assert {tool.name for tool in tools} == TOOLS
            assert all(tool.description and tool.output_schema and tool.input_schema for tool in tools)
            submit = next(tool for tool in tools if tool.name == "submit")
            assert "observation" in json.dumps(submit.input_schema)
            templates = (await client.list_resource_templates()).resource_templates
            assert sorted(t.uri_template for t in templates) == [
                f"caseboard://workspaces/{{workspace_id}}/{name}" for name in ("projection", "timeline", "view")
            ]

    anyio.run(scenario)


def test_incident_042_through_the_submit_tool_gives_the_projection_of_the_command_line(
    served: tuple[ServeProcess, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, url = served
    tokens: dict[str, str] = {}
    outcomes: list[dict[str, Any]] = []

    async def scenario() -> None:
        for line in scenario_with_stale_install():
            author, arguments = submit_arguments(line)
            if author["principal"] not in tokens:
                tokens[author["principal"]] = token(url, author["principal"], author["role"])
            async with over_http(server.base_url, tokens[author["principal"]]) as client:
                outcomes.append(await call(client, "submit", arguments))

    anyio.run(scenario)
    stale = outcomes[-2]
    assert [o.get("workspace_version") for o in outcomes[:-2]] == list(range(1, 20))
    assert outcomes[-1]["workspace_version"] == 20
    assert (stale["ok"], stale["reason"], stale["current_version"], stale["retryable"]) == (
        False,
        "version_conflict",
        19,
        True,
    )
    assert "changes_since" in stale["next_step"] and stale["field"] == "expected_version"
    assert all(
        o["author"]["principal"] == submit_arguments(line)[0]["principal"]
        for o, line in zip([*outcomes[:-2], outcomes[-1]], [*scenario_lines()], strict=True)
    )

    cli_url = f"sqlite:///{tmp_path}/cli.db"
    (tmp_path / "all.jsonl").write_text("\n".join(scenario_lines()) + "\n")
    assert (
        main(
            [
                "--database-url",
                cli_url,
                "submit",
                "incident-042",
                "--file",
                str(tmp_path / "all.jsonl"),
                "--trust-timestamps",
            ]
        )
        == 0
    )
    capsys.readouterr()
    reader = token(url, "auditor", "reporter")

    async def read(version: int) -> dict[str, Any]:
        async with over_http(server.base_url, reader) as client:
            body = await call(client, "read_workspace", {"workspace_id": "incident-042", "version": version})
            return dict(body["projection"])

    for version in (18, 19, 20):
        assert main(["--database-url", cli_url, "show", "incident-042", "--at-version", str(version)]) == 0
        assert anyio.run(read, version) == json.loads(capsys.readouterr().out)
    assert stale_install()  # the stale install was the one refusal


def test_a_zombies_result_is_fenced_with_a_next_step(served: tuple[ServeProcess, str]) -> None:
    server, url = served
    operator = token(url, "op-zombie", "operator")
    planner = token(url, "planner-zombie", "planner")
    zombie = token(url, "zombie", "specialist")
    successor = token(url, "successor", "specialist")
    controller = token(url, "controller-zombie", "controller")
    ws = "ws-zombie"
    request = {"type": "work_request", "request_id": "log-query", "kind": "log_query", "target": "auth logs"}
    result = {
        "type": "work_result",
        "request_id": "log-query",
        "generation": 1,
        "status": "completed",
        "summary": "late",
    }

    async def scenario() -> dict[str, Any]:
        async with over_http(server.base_url, operator) as client:
            assert (await call(client, "submit", open_arguments(ws)))["ok"]
        async with over_http(server.base_url, planner) as client:
            assert (await call(client, "submit", {"workspace_id": ws, "items": [request]}))["ok"]
        async with over_http(server.base_url, zombie) as client:
            work = await call(client, "list_work", {"workspace_id": ws})
            assert [(w["request_id"], w["claimable"]) for w in work["work"]] == [("log-query", True)]
            claim = {"type": "work_claim", "request_id": "log-query", "lease_s": 60}
            assert (await call(client, "submit", {"workspace_id": ws, "items": [claim]}))["ok"]
            held = await call(client, "list_work", {"workspace_id": ws})
            assert [(w["held_by_you"], w["claimable"]) for w in held["work"]] == [(True, False)]
        async with over_http(server.base_url, controller) as client:
            reclaim = {"type": "work_reclaim", "request_id": "log-query", "reason": "no heartbeat"}
            assert (await call(client, "submit", {"workspace_id": ws, "items": [reclaim]}))["ok"]
        async with over_http(server.base_url, successor) as client:
            claim = {"type": "work_claim", "request_id": "log-query", "lease_s": 60}
            claimed = await call(client, "submit", {"workspace_id": ws, "items": [claim]})
            assert claimed["ok"]
        async with over_http(server.base_url, zombie) as client:
            return await call(client, "submit", {"workspace_id": ws, "items": [result]})

    fenced = anyio.run(scenario)
    assert (fenced["ok"], fenced["reason"], fenced["retryable"]) == (False, "fenced", True)
    assert fenced["next_step"] == NEXT_STEPS["fenced"][1]


def test_another_tenants_workspace_is_not_found_through_every_tool_and_resource(
    served: tuple[ServeProcess, str],
) -> None:
    server, url = served
    operator = token(url, "op-tenants", "operator")
    outsider = token(url, "outsider", "operator", tenant="tenant-b")
    ws = "ws-tenant-a-only"

    def probes(workspace_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [
            ("read_view", {"workspace_id": workspace_id}),
            ("read_workspace", {"workspace_id": workspace_id}),
            ("changes_since", {"workspace_id": workspace_id, "after": 0}),
            ("list_work", {"workspace_id": workspace_id}),
            ("submit", {"workspace_id": workspace_id, "items": [observation("obs-outsider")]}),
        ]

    async def answers(workspace_id: str) -> list[Any]:
        found: list[Any] = []
        async with over_http(server.base_url, outsider) as client:
            for tool, arguments in probes(workspace_id):
                found.append(await call(client, tool, arguments))
            for name in ("projection", "timeline", "view"):
                try:
                    await client.read_resource(f"caseboard://workspaces/{workspace_id}/{name}")
                except MCPError as error:
                    found.append(error.error.data)
                else:
                    found.append("read")
            listed = await call(client, "list_workspaces", {})
            found.append([w["workspace_id"] for w in listed["workspaces"]])
        return found

    async def scenario() -> tuple[list[Any], list[Any]]:
        async with over_http(server.base_url, operator) as client:
            assert (await call(client, "submit", open_arguments(ws)))["ok"]
            elsewhere = await call(client, "submit", open_arguments("ws-in-b", tenant="tenant-b"))
            assert (elsewhere["reason"], elsewhere["field"]) == ("forbidden", "items[0].scope.tenant_id")
            mine = await call(client, "list_workspaces", {})
            assert ws in [w["workspace_id"] for w in mine["workspaces"]]
        return await answers(ws), await answers("ws-never-opened")

    other_tenant, missing = anyio.run(scenario)
    assert json.dumps(other_tenant).replace(ws, "X") == json.dumps(missing).replace("ws-never-opened", "X")
    assert all(a["reason"] == "unknown_workspace" for a in other_tenant[:-1]), other_tenant
    assert other_tenant[-1] == []


BAD_ARGUMENTS: list[tuple[str, Any, str]] = [
    ("submit", {}, "workspace_id"),
    ("submit", {"workspace_id": "ws-bad"}, "items"),
    ("submit", {"workspace_id": 42, "items": []}, "workspace_id"),
    ("submit", {"workspace_id": "ws-bad", "items": "not a list"}, "items"),
    ("submit", {"workspace_id": "ws-bad", "items": [{"type": "no-such-item"}]}, "items[0].type"),
    ("submit", {"workspace_id": "ws-bad", "items": [{"type": "observation", "id": "x"}]}, "items[0]"),
    ("submit", {"workspace_id": "ws-bad", "items": [observation("o")], "author": {"principal": "ceo"}}, "author"),
    ("submit", {"workspace_id": "ws-bad", "items": [observation("o")], "expected_version": "3"}, "expected_version"),
    ("submit", {"workspace_id": "../../etc", "items": [observation("o")]}, "workspace_id"),
    ("read_view", {"workspace_id": "ws-bad", "budget_chars": 5}, "budget_chars"),
    ("read_view", {"workspace_id": "ws-bad", "role": "king"}, "role"),
    ("read_workspace", {"workspace_id": "ws-bad", "version": -1}, "version"),
    ("read_workspace", {"workspace_id": "ws-bad", "version": 99}, "version"),
    ("read_workspace", {"workspace_id": "ws-bad", "reducer": "no-such-reducer"}, "reducer"),
    ("changes_since", {"workspace_id": "ws-bad"}, "after"),
    ("changes_since", {"workspace_id": "ws-bad", "after": 10**30}, "after"),
    ("changes_since", {"workspace_id": "ws-bad", "after": 50}, "after"),
    ("list_workspaces", {"limit": 0}, "limit"),
    ("whoami", {"unexpected": True}, "unexpected"),
]


def test_two_tenants_each_open_and_list_their_own_workspace_of_one_id(served: tuple[ServeProcess, str]) -> None:
    """docs/adr/0130: a workspace's identity is (tenant, id), through the tools as over HTTP."""
    server, url = served
    ws = "ws-in-both-tenants"
    keys = {tenant: token(url, f"op-{tenant}", "operator", tenant=tenant) for tenant in ("tenant-a", "tenant-b")}

    async def scenario() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for tenant, key in keys.items():
            async with over_http(server.base_url, key) as client:
                assert (await call(client, "submit", open_arguments(ws, tenant=tenant)))["ok"]
                again = await call(client, "submit", open_arguments(ws, tenant=tenant))
                assert again["reason"] == "workspace_exists"
        for tenant, key in keys.items():
            async with over_http(server.base_url, key) as client:
                listed = await call(client, "list_workspaces", {})
                read = await call(client, "read_workspace", {"workspace_id": ws})
                changes = await call(client, "changes_since", {"workspace_id": ws, "after": 0})
                seen[tenant] = (listed, read, changes)
        return seen

    seen = anyio.run(scenario)
    for tenant, other in (("tenant-a", "tenant-b"), ("tenant-b", "tenant-a")):
        listed, read, changes = seen[tenant]
        mine = [w for w in listed["workspaces"] if w["workspace_id"] == ws]
        assert len(mine) == 1 and mine[0]["scope"]["tenant_id"] == tenant
        assert read["projection"]["scope"]["tenant_id"] == tenant
        assert changes["workspace_id"] == ws and changes["current_version"] == 1
        assert other not in json.dumps([listed, read, changes])


def test_bad_arguments_of_every_kind_get_a_structured_refusal(served: tuple[ServeProcess, str]) -> None:
    server, url = served
    operator = token(url, "op-bad", "operator")

    async def scenario() -> list[dict[str, Any]]:
        async with over_http(server.base_url, operator) as client:
            assert (await call(client, "submit", open_arguments("ws-bad")))["ok"]
            return [await call(client, tool, arguments) for tool, arguments, _ in BAD_ARGUMENTS]

    for (tool, arguments, field), refusal in zip(BAD_ARGUMENTS, anyio.run(scenario), strict=True):
        assert refusal["ok"] is False and refusal["reason"] == "invalid", (tool, arguments, refusal)
        assert str(refusal["field"]).startswith(field), (tool, arguments, refusal)
        assert refusal["retryable"] is False and refusal["next_step"] and refusal["message"]


def test_a_key_with_several_roles_acts_in_the_role_its_header_names(served: tuple[ServeProcess, str]) -> None:
    server, url = served
    both = token(url, "dual", "planner", "specialist")

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with over_http(server.base_url, both) as client:
            unnamed = await call(client, "whoami", {})
        async with over_http(server.base_url, both, role="specialist") as client:
            named = await call(client, "whoami", {})
        async with over_http(server.base_url, both, role="operator") as client:
            not_held = await call(client, "whoami", {})
        return unnamed, named, not_held

    unnamed, named, not_held = anyio.run(scenario)
    assert unnamed["ok"] is True  # whoami answers who the key is, whatever role it would act in
    assert (unnamed["principal"], unnamed["tenant_id"]) == ("dual", "tenant-a")
    assert (unnamed["role"], unnamed["roles"]) == (None, ["planner", "specialist"])
    assert (named["principal"], named["role"], named["roles"]) == ("dual", "specialist", ["planner", "specialist"])
    assert (not_held["reason"], not_held["retryable"]) == ("forbidden", False)


def test_a_refusal_for_bad_arguments_names_every_problem_an_unknown_argument_by_its_name(
    served: tuple[ServeProcess, str],
) -> None:
    server, url = served
    reader = token(url, "reader-bad", "planner")

    async def scenario() -> dict[str, Any]:
        async with over_http(server.base_url, reader) as client:
            return await call(client, "read_view", {"budget_chars": "many", "bogus": 1})

    refusal = anyio.run(scenario)
    assert refusal["reason"] == "invalid"
    message = refusal["message"]
    assert "bogus: unknown field" in message and "workspace_id: required field is missing" in message
    assert "budget_chars:" in message and "more problem" not in message


def test_a_request_without_a_valid_key_is_answered_401_unauthenticated(served: tuple[ServeProcess, str]) -> None:
    server, _ = served
    ping = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer cbk_000000000000_nope"}, {"Authorization": "Basic abc"}):
        answer = httpx.post(f"{server.base_url}/mcp", json=ping, headers={**headers, **auth})
        assert answer.status_code == 401
        assert answer.json()["reason"] == "unauthenticated"


def test_a_body_not_sent_as_json_is_refused_in_the_contracts_shape(served: tuple[ServeProcess, str]) -> None:
    """The SDK answers a POST whose type is not ``application/json`` with a line of plain text; caseboard answers
    it as its routes answer such a body (422 ``invalid`` at ``$``, naming the type and the header to send)."""
    server, url = served
    key = token(url, "typed", "reporter")
    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).encode()
    headers = {"Authorization": f"Bearer {key}", "Accept": "application/json, text/event-stream"}
    for content_type, sent_as in (
        ("application/x-www-form-urlencoded", "as 'application/x-www-form-urlencoded'"),
        ("text/plain", "as 'text/plain'"),
        (None, "with no Content-Type"),
    ):
        typed = headers if content_type is None else {**headers, "Content-Type": content_type}
        answer = httpx.post(f"{server.base_url}/mcp", content=ping, headers=typed)
        assert answer.status_code == 422, answer.text
        assert answer.json() == {
            "ok": False,
            "reason": "invalid",
            "message": f"$: the body was sent {sent_as}, which is not read as JSON: "
            "send it with Content-Type: application/json",
            "field": "$",
        }
    listed = httpx.post(f"{server.base_url}/mcp", content=ping, headers={**headers, "Content-Type": "application/json"})
    assert listed.status_code == 200 and listed.json()["result"]["tools"], listed.text


def test_an_unknown_tool_or_resource_is_an_invalid_refusal_naming_it(served: tuple[ServeProcess, str]) -> None:
    server, url = served
    reader = token(url, "unknowns", "reporter")

    async def scenario() -> tuple[dict[str, Any], Any]:
        async with over_http(server.base_url, reader) as client:
            unknown_tool = await call(client, "delete_workspace", {"workspace_id": "ws-any"})
            with pytest.raises(MCPError) as unknown_resource:
                await client.read_resource("caseboard://workspaces/ws-any/secrets")
            return unknown_tool, unknown_resource.value.error.data

    tool_refusal, resource_refusal = anyio.run(scenario)
    assert (tool_refusal["reason"], tool_refusal["field"], tool_refusal["retryable"]) == ("invalid", "name", False)
    assert "submit" in tool_refusal["message"]  # it names the tools there are
    assert (resource_refusal["reason"], resource_refusal["field"]) == ("invalid", "uri")
    assert "caseboard://workspaces/{workspace_id}/view" in resource_refusal["message"]


def test_the_sdks_routing_header_checks_still_apply_to_a_tool_call(served: tuple[ServeProcess, str]) -> None:
    """Skipping the ``Mcp-Param-*`` walk for tools that declare no such header leaves the SDK's other checks:
    a ``Mcp-Name`` that is not the body's tool is refused; an ``Mcp-Param-*`` header no tool declares is
    ignored, as the check ignores it, and the call commits."""
    server, url = served
    operator = token(url, "op-headers", "operator")
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {
        "Authorization": f"Bearer {operator}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/call",
    }

    def post(name_header: str, arguments: dict[str, Any], **extra: str) -> httpx.Response:
        message = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "submit", "arguments": arguments, "_meta": meta},
        }
        return httpx.post(f"{server.base_url}/mcp", json=message, headers={**headers, "Mcp-Name": name_header, **extra})

    mismatched = post("whoami", open_arguments("ws-headers"))
    assert mismatched.status_code == 400, mismatched.text
    assert "mcp-name" in mismatched.json()["error"]["message"].lower()
    undeclared = post("submit", open_arguments("ws-headers"), **{"Mcp-Param-Workspace": "somewhere-else"})
    assert undeclared.status_code == 200, undeclared.text
    result = undeclared.json()["result"]
    assert result["isError"] is False and result["structuredContent"]["workspace_version"] == 1
