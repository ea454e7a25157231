"""The MCP source against an MCP server over stdio: read-only tools only, from an allow-list, every call recorded."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import httpx
import pytest

from caseboard.domain.errors import ConfigurationError
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.pilot.servers import have_prometheus, prometheus
from caseboard.sources.base import SourceFailed
from caseboard.sources.config import SourceConfig, load_sources
from caseboard.sources.registry import SOURCES
from tests.conftest import service_missing
from tests.e2e.procs import poll
from tests.mcp_sessions import caseboard_serve
from tests.sources.board import embedded, excerpt, request_and_answer, specialist, whole
from tests.sources.servers import RecordingProxy, counter_target

SERVER = Path(__file__).resolve().parents[1] / "sources" / "mcp_server.py"
TOOLS = ["certificate_inventory", "restart_service", "rotate_certificate", "broken"]


def config(log: Path, **options: object) -> SourceConfig:
    command = [sys.executable, str(SERVER), str(log)]
    return SourceConfig.model_validate({"type": "mcp", "options": {"command": command, "tools": TOOLS, **options}})


def auditor_key(database_url: str) -> str:
    """A reporter's key of tenant-a in the ledger at ``database_url``, for an MCP server of caseboard."""
    keys = open_key_store(database_url)
    try:
        return keys.create("auditor", (Role.REPORTER,), "tenant-a").token
    finally:
        keys.close()


def test_a_read_only_tool_s_call_is_recorded_and_cited(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    with embedded(tmp_path) as app:
        who = specialist(app, "inventory", config(log))
        asked = {"tool": "certificate_inventory", "arguments": {"service": "payments-api"}}
        result = request_and_answer(app, who, "mcp-1", "mcp_query", asked)[-1].items[0]
        stored = json.loads(whole(app, result.query.response))
        cited = json.loads(excerpt(app, result.observation.evidence_ref))
    assert result.status == "completed" and result.query.completed is True
    assert result.query.operation == "call_tool"
    assert result.query.parameters == {"tool": "certificate_inventory", "arguments": '{"service": "payments-api"}'}
    assert "CHG-5531 rotated the leaf certificate" in result.observation.statement
    assert cited == stored["content"][0] and cited["type"] == "text"
    assert log.read_text().split() == ["certificate_inventory"]


@pytest.mark.parametrize("tool", ["restart_service", "rotate_certificate", "not_allowed", "missing_everywhere"])
def test_a_tool_not_annotated_read_only_or_not_allowed_is_refused_and_never_called(tmp_path: Path, tool: str) -> None:
    log = tmp_path / "calls.log"
    with embedded(tmp_path) as app:
        who = specialist(app, "inventory", config(log))
        result = request_and_answer(app, who, "mcp-2", "mcp_query", {"tool": tool})[-1].items[0]
    assert result.status == "failed" and result.query.completed is False
    expected = "not annotated readOnlyHint: true" if tool in TOOLS else "is not on this source's allow-list"
    assert expected in result.summary
    assert not log.exists()  # nothing reached the server's tools


def test_an_explicit_override_allows_a_tool_without_the_hint_and_a_tool_error_is_a_failed_result(
    tmp_path: Path,
) -> None:
    log = tmp_path / "calls.log"
    with embedded(tmp_path) as app:
        who = specialist(app, "inventory", config(log, allow_without_read_only_hint=["rotate_certificate"]))
        rotated = request_and_answer(
            app, who, "mcp-3", "mcp_query", {"tool": "rotate_certificate", "arguments": {"service": "x"}}
        )
        broken = request_and_answer(app, who, "mcp-4", "mcp_query", {"tool": "broken", "arguments": {"service": "x"}})
    assert rotated[-1].items[0].status == "completed"
    failed = broken[-1].items[0]
    assert failed.status == "failed" and "answered an error: Error executing tool broken" in failed.summary
    assert log.read_text().split() == ["rotate_certificate", "broken"]


def test_an_override_for_a_tool_off_the_allow_list_is_a_configuration_mistake(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(
        '[tenants.t.sources.m]\ntype = "mcp"\n'
        'options = { command = ["x"], tools = ["a"], allow_without_read_only_hint = ["b"] }\n'
    )
    with pytest.raises(ConfigurationError, match="allow_without_read_only_hint names tools not in tools: b"):
        load_sources(path)


def test_caseboard_s_own_mcp_server_answers_its_read_only_tools_and_its_submit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A released MCP server (``caseboard mcp``, stdio): ``whoami`` and ``list_workspaces`` are annotated
    read-only and answer; ``submit`` is not, so it is refused before any call and nothing is submitted."""
    served = f"sqlite:///{tmp_path}/served.db"
    token = auditor_key(served)
    monkeypatch.setenv("CASEBOARD_DATABASE_URL", served)
    monkeypatch.setenv("CASEBOARD_API_KEY", token)
    options = {
        "command": [sys.executable, "-m", "caseboard", "mcp"],
        "tools": ["whoami", "list_workspaces", "submit"],
        "env_from": ["CASEBOARD_DATABASE_URL", "CASEBOARD_API_KEY"],
    }
    config = SourceConfig.model_validate({"type": "mcp", "options": options})
    with embedded(tmp_path) as app:
        who = specialist(app, "caseboard", config)
        whoami = request_and_answer(app, who, "mcp-5", "mcp_query", "whoami")[-1].items[0]
        submit = request_and_answer(
            app, who, "mcp-6", "mcp_query", {"tool": "submit", "arguments": {"workspace_id": "x", "items": []}}
        )[-1].items[0]
    assert whoami.status == "completed" and '"principal":"auditor"' in whoami.observation.statement
    assert submit.status == "failed" and "'submit' is not annotated readOnlyHint: true" in submit.summary
    ledger = open_ledger(served)
    try:
        assert ledger.head("x") == 0
    finally:
        ledger.close()


def test_a_read_only_mcp_server_from_pypi_answers_from_a_real_prometheus_and_sends_only_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``prometheus-mcp-server`` (PyPI, its tools annotated readOnlyHint: true) in front of a private Prometheus,
    itself behind a proxy that records every request: the call is recorded and cited, and what reached
    Prometheus is its query API read, nothing else."""
    if not have_prometheus():
        service_missing("prometheus", FileNotFoundError("Debian's prometheus is not installed"))
    program = Path(sys.executable).with_name("prometheus-mcp-server")
    with counter_target() as (target, failures), prometheus([target]) as prom:
        failures.inc(3)
        poll("a sample", lambda: httpx.get(f"{prom}/api/v1/query", params={"query": "auth_failures_total"}).json()
             ["data"]["result"], timeout=30)  # fmt: skip
        proxy = RecordingProxy(prom)
        try:
            monkeypatch.setenv("PROMETHEUS_URL", proxy.url)
            options = {"command": [str(program)], "tools": ["execute_query"], "env_from": ["PROMETHEUS_URL"]}
            with embedded(tmp_path) as app:
                who = specialist(
                    app, "prometheus-mcp", SourceConfig.model_validate({"type": "mcp", "options": options})
                )
                asked = {"tool": "execute_query", "arguments": {"query": "auth_failures_total"}}
                result = request_and_answer(app, who, "mcp-7", "mcp_query", asked)[-1].items[0]
                stored = whole(app, result.query.response).decode()
        finally:
            proxy.close()
    assert result.status == "completed" and result.query.completed is True, result.summary
    assert result.query.parameters == {"tool": "execute_query", "arguments": '{"query": "auth_failures_total"}'}
    assert target in stored and "auth_failures_total" in stored
    assert proxy.received and {method for method, _ in proxy.received} == {"GET"}
    assert {path.split("?")[0] for _, path in proxy.received} <= {"/api/v1/query", "/api/v1/status/buildinfo"}


def test_an_mcp_endpoint_is_sent_the_credential_and_one_stopped_is_a_failed_result_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``caseboard serve``'s own /mcp over streamable HTTP: the source sends its credential as a bearer token, as
    every HTTP source does; without one the server refuses; once the server is stopped, the result says the
    connection was refused (the SDK's task groups had it say only "unhandled errors in a TaskGroup")."""
    served = f"sqlite:///{tmp_path}/served.db"
    token = auditor_key(served)
    monkeypatch.setenv("PEER_TOKEN", token)

    def peer(**fields: object) -> SourceConfig:
        return SourceConfig.model_validate({"type": "mcp", "options": {"tools": ["whoami"]}, **fields})

    with embedded(tmp_path) as app, caseboard_serve(served) as server:
        endpoint = f"{server.base_url}/mcp"
        keyed = specialist(app, "peer", peer(endpoint=endpoint, credential={"env": "PEER_TOKEN"}))
        anonymous = specialist(app, "anonymous", peer(endpoint=endpoint))
        whoami = request_and_answer(app, keyed, "mcp-8", "mcp_query", "whoami")[-1].items[0]
        refused = request_and_answer(app, anonymous, "mcp-9", "mcp_query", "whoami")[-1].items[0]
        server.process.terminate()
        server.process.wait(timeout=20)
        stopped = request_and_answer(app, keyed, "mcp-10", "mcp_query", "whoami")[-1].items[0]
    assert whoami.status == "completed" and '"principal":"auditor"' in whoami.observation.statement, whoami.summary
    assert refused.status == "failed" and "(the endpoint answered HTTP 401 Unauthorized)" in refused.summary
    assert stopped.status == "failed" and "ConnectError: All connection attempts failed" in stopped.summary
    assert not any("TaskGroup" in r.summary or token in r.summary for r in (refused, stopped))


def test_a_stdio_mcp_server_with_a_credential_is_a_configuration_mistake(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("s3cret\n")
    config = SourceConfig.model_validate(
        {"type": "mcp", "credential": {"file": str(tmp_path / "token")}, "options": {"command": ["x"], "tools": ["a"]}}
    )
    with pytest.raises(SourceFailed, match=r"a stdio server gets its secrets through options\.env_from"):
        SOURCES.build("m", config)
