"""MCP over stdio against ``caseboard mcp`` (one process per key, as an agent launches it), with the official
SDK's client: the same contract as over HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
import structlog
from mcp import Client, MCPError

from caseboard.cli.main import main
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from tests.conftest import scenario_lines
from tests.http_server import observation
from tests.integration.test_mcp_http import BAD_ARGUMENTS, open_arguments
from tests.mcp_sessions import call, over_stdio, scenario_with_stale_install, stdio_parameters, submit_arguments


@pytest.fixture(autouse=True)
def logging_restored() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def token(url: str, principal: str, *roles: str, tenant: str = "tenant-a") -> str:
    keys = open_key_store(url)
    try:
        return keys.create(principal, tuple(Role(r) for r in roles), tenant).token
    finally:
        keys.close()


def test_incident_042_through_stdio_gives_the_projection_of_the_command_line_and_refuses_the_stale_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/mcp.db"
    outcomes: list[dict[str, Any]] = []

    async def scenario() -> dict[str, Any]:
        async with AsyncExitStack() as stack:
            clients: dict[str, Client] = {}
            for line in scenario_with_stale_install():
                author, arguments = submit_arguments(line)
                if author["principal"] not in clients:
                    key = token(url, author["principal"], author["role"])
                    clients[author["principal"]] = await stack.enter_async_context(over_stdio(url, key))
                outcomes.append(await call(clients[author["principal"]], "submit", arguments))
            reader = await stack.enter_async_context(over_stdio(url, token(url, "auditor", "reporter")))
            return await call(reader, "read_workspace", {"workspace_id": "incident-042"})

    head = anyio.run(scenario)
    stale = outcomes[-2]
    assert (stale["reason"], stale["current_version"], stale["retryable"]) == ("version_conflict", 19, True)
    assert stale["next_step"]
    assert outcomes[-1]["workspace_version"] == 20
    cli_url = f"sqlite:///{tmp_path}/cli.db"
    (tmp_path / "all.jsonl").write_text("\n".join(scenario_lines()) + "\n")
    command = ["--database-url", cli_url, "submit", "incident-042", "--file", str(tmp_path / "all.jsonl")]
    assert main([*command, "--trust-timestamps"]) == 0
    capsys.readouterr()
    assert main(["--database-url", cli_url, "show", "incident-042"]) == 0
    through_cli = json.loads(capsys.readouterr().out)
    through_cli.pop("as_of", None)
    over_stdio_head = dict(head["projection"])
    over_stdio_head.pop("as_of", None)
    assert over_stdio_head == through_cli


def test_over_stdio_a_zombie_is_fenced_tenants_are_isolated_and_bad_arguments_are_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/mcp.db"
    ws = "ws-stdio"
    request = {"type": "work_request", "request_id": "q", "kind": "log_query", "target": "auth logs"}
    claim = {"type": "work_claim", "request_id": "q", "lease_s": 60}
    reclaim = {"type": "work_reclaim", "request_id": "q", "reason": "silent"}
    result = {"type": "work_result", "request_id": "q", "generation": 1, "status": "completed", "summary": "late"}
    keys = {
        name: token(url, name, *roles, tenant=tenant)
        for name, roles, tenant in [
            ("op", ("operator", "controller"), "tenant-a"),
            ("planner", ("planner",), "tenant-a"),
            ("zombie", ("specialist",), "tenant-a"),
            ("outsider", ("operator",), "tenant-b"),
        ]
    }

    async def scenario() -> tuple[dict[str, Any], list[Any], list[Any], list[dict[str, Any]]]:
        async with over_stdio(url, keys["op"], role="operator") as op:
            assert (await call(op, "submit", open_arguments(ws)))["ok"]
        async with over_stdio(url, keys["planner"]) as planner:
            assert (await call(planner, "submit", {"workspace_id": ws, "items": [request]}))["ok"]
        async with over_stdio(url, keys["zombie"]) as zombie:
            assert (await call(zombie, "submit", {"workspace_id": ws, "items": [claim]}))["ok"]
            async with over_stdio(url, keys["op"], role="controller") as controller:
                assert (await call(controller, "submit", {"workspace_id": ws, "items": [reclaim]}))["ok"]
            fenced = await call(zombie, "submit", {"workspace_id": ws, "items": [result]})
        hidden: list[list[Any]] = []
        async with over_stdio(url, keys["outsider"]) as outsider:
            for workspace_id in (ws, "ws-missing"):
                answers: list[Any] = []
                for tool in ("read_view", "read_workspace", "list_work"):
                    answers.append(await call(outsider, tool, {"workspace_id": workspace_id}))
                answers.append(await call(outsider, "changes_since", {"workspace_id": workspace_id, "after": 0}))
                obs = {"workspace_id": workspace_id, "items": [observation("o")]}
                answers.append(await call(outsider, "submit", obs))
                for name in ("projection", "timeline", "view"):
                    try:
                        await outsider.read_resource(f"caseboard://workspaces/{workspace_id}/{name}")
                    except MCPError as error:
                        answers.append(error.error.data)
                hidden.append(answers)
            listed = await call(outsider, "list_workspaces", {})
            assert listed["workspaces"] == []
            bad = [await call(outsider, tool, arguments) for tool, arguments, _ in BAD_ARGUMENTS]
        return fenced, hidden[0], hidden[1], bad

    fenced, other_tenant, missing, bad = anyio.run(scenario)
    assert (fenced["reason"], fenced["retryable"]) == ("fenced", True) and fenced["next_step"]
    assert len(other_tenant) == 8
    assert json.dumps(other_tenant).replace(ws, "X") == json.dumps(missing).replace("ws-missing", "X")
    assert {a["reason"] for a in other_tenant} == {"unknown_workspace"}
    assert all(b["ok"] is False and b["reason"] in ("invalid", "unknown_workspace") for b in bad), bad


def test_caseboard_mcp_without_a_valid_key_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/mcp.db"
    for key in (None, "cbk_000000000000_unknown"):
        parameters = stdio_parameters(url, key or "")
        env = dict(parameters.env or {})
        if key is None:
            env.pop("CASEBOARD_API_KEY")
        done = subprocess.run(
            [sys.executable, "-m", "caseboard", "mcp"],
            env={**env, "PATH": os.environ.get("PATH", "")},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2 and done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1 and "CASEBOARD_API_KEY" in done.stderr


def piped(url: str, key: str, requests: list[dict[str, Any]], trailing: str = "") -> dict[Any, dict[str, Any]]:
    """The answers, by request id, of ``caseboard mcp`` given ``requests`` on a pipe that is then closed."""
    initialize = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "pipe", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        *requests,
    ]
    parameters = stdio_parameters(url, key)
    done = subprocess.run(
        [parameters.command, *parameters.args],
        env={**(parameters.env or {}), "PATH": os.environ.get("PATH", "")},
        input="\n".join(json.dumps(line) for line in lines) + "\n" + trailing,  # written whole, then closed
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}


def submission(number: int, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": number,
        "method": "tools/call",
        "params": {"name": "submit", "arguments": arguments},
    }


def test_requests_piped_in_are_all_answered_after_standard_input_ends(tmp_path: Path) -> None:
    """A script pipes its requests into ``caseboard mcp`` and closes the pipe: every request read before the end
    of input is answered before the process exits (the SDK's loop would cancel those still running), the
    submissions among them are committed, and a line that is no JSON-RPC message gets an error with a null id."""
    url = f"sqlite:///{tmp_path}/mcp.db"
    opened = piped(url, token(url, "oncall-operator", "operator"), [submission(2, open_arguments("ws-piped"))])
    assert opened[2]["result"]["structuredContent"]["ok"], opened
    numbers = range(2, 10)
    requests = [
        submission(n, {"workspace_id": "ws-piped", "items": [observation(f"obs-{n}", f"piped observation {n}")]})
        for n in numbers
    ]
    answers = piped(url, token(url, "log-specialist", "specialist"), requests, trailing="not json\n")
    assert set(answers) == {None, 1, *numbers}, answers
    assert answers[None]["error"]["code"] == -32700
    outcomes = [answers[n]["result"]["structuredContent"] for n in numbers]
    assert all(outcome["ok"] for outcome in outcomes), outcomes
    assert sorted(outcome["workspace_version"] for outcome in outcomes) == list(range(2, 2 + len(numbers)))


def test_a_request_id_is_told_apart_from_the_same_digits_as_text(tmp_path: Path) -> None:
    """Ids ``3`` and ``"3"`` are two requests (JSON-RPC 2.0 ids are numbers or strings): a quick answer to the
    number does not end the wait for a submission sent under the string."""
    url = f"sqlite:///{tmp_path}/mcp.db"
    opened = piped(url, token(url, "oncall-operator", "operator"), [submission(2, open_arguments("ws-ids"))])
    assert opened[2]["result"]["structuredContent"]["ok"], opened
    numbers = range(2, 26)
    requests: list[dict[str, Any]] = []
    for n in numbers:
        observed = {"workspace_id": "ws-ids", "items": [observation(f"obs-{n}", f"observation under id {n!r}")]}
        requests += [{**submission(n, observed), "id": str(n)}, {"jsonrpc": "2.0", "id": n, "method": "tools/list"}]
    answers = piped(url, token(url, "log-specialist", "specialist"), requests)
    assert set(answers) == {1, *numbers, *map(str, numbers)}, answers
    assert all("tools" in answers[n]["result"] for n in numbers)
    outcomes = [answers[str(n)]["result"]["structuredContent"] for n in numbers]
    assert all(outcome["ok"] for outcome in outcomes), outcomes
