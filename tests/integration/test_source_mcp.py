"""The MCP source against an MCP server over stdio: read-only tools only, from an allow-list, every call recorded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from caseboard.domain.errors import ConfigurationError
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.pilot.servers import have_prometheus, prometheus
from caseboard.sources.base import Deadline, Query, SourceFailed
from caseboard.sources.config import SourceConfig, load_sources
from caseboard.sources.mcp_tools import Call
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


def kept_source(tmp_path: Path, timeout_s: float = 30.0) -> tuple[Any, Path]:
    """The MCP source of the test server, which appends its process id to the returned file when it starts."""
    starts = tmp_path / "starts.log"
    command = [sys.executable, str(SERVER), str(tmp_path / "calls.log"), str(starts)]
    config = SourceConfig.model_validate(
        {
            "type": "mcp",
            "guardrails": {"timeout_s": timeout_s},
            "options": {"command": command, "tools": [*TOOLS, "stall"]},
        }
    )
    return SOURCES.build("inventory", config), starts


def call(source: Any, tool: str, seconds: float = 30.0) -> Any:
    return source.run(Query("call_tool", Call(tool=tool, arguments={"service": "payments-api"})), Deadline(seconds))


def started(starts: Path) -> list[int]:
    return [int(line) for line in starts.read_text().split()] if starts.exists() else []


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()


def test_a_stdio_server_is_started_once_kept_between_calls_and_stopped_with_the_source(tmp_path: Path) -> None:
    source, starts = kept_source(tmp_path)
    try:
        with ThreadPoolExecutor(4) as pool:  # calls from several threads at once share the session
            answers = list(pool.map(lambda _: call(source, "certificate_inventory"), range(8)))
        assert all("CHG-5531" in answer.findings[0].statement for answer in answers)
        assert len(started(starts)) == 1
        [pid] = started(starts)
        assert alive(pid)
    finally:
        source.close()
    poll("the server to stop with the source", lambda: not alive(pid), 10)


def test_a_server_gone_while_idle_is_started_again_for_the_next_call(tmp_path: Path) -> None:
    source, starts = kept_source(tmp_path)
    try:
        call(source, "certificate_inventory")
        [first] = started(starts)
        os.kill(first, signal.SIGKILL)
        poll("the killed server to go", lambda: not alive(first), 10)
        assert "CHG-5531" in call(source, "certificate_inventory").findings[0].statement
        assert len(started(starts)) == 2
    finally:
        source.close()


def test_a_call_that_never_answers_fails_at_its_deadline_and_its_server_is_stopped(tmp_path: Path) -> None:
    source, starts = kept_source(tmp_path, timeout_s=2)
    try:
        call(source, "certificate_inventory", 2)
        [first] = started(starts)
        began = time.monotonic()
        with pytest.raises(SourceFailed, match="did not answer within 2 s") as failed:
            call(source, "stall", 2)
        assert failed.value.timeout is True
        assert time.monotonic() - began < 8  # the deadline, then the server stopped (stdin closed, then a signal)
        poll("the hung server to be stopped", lambda: not alive(first), 10)
        assert "CHG-5531" in call(source, "certificate_inventory", 5).findings[0].statement  # a new server
        assert len(started(starts)) == 2
    finally:
        source.close()


def test_a_server_that_never_starts_fails_every_call_at_its_own_deadline_and_is_stopped(tmp_path: Path) -> None:
    """Calls at once on a server that never answers its initialization: one opens the session, the others wait for
    it no longer than their own deadlines, and none leaves the server running."""
    marker = f"never-starts-{os.getpid()}-{time.monotonic_ns()}"
    command = [sys.executable, "-c", "import time; time.sleep(600)", marker]
    config = SourceConfig.model_validate(
        {"type": "mcp", "guardrails": {"timeout_s": 2}, "options": {"command": command, "tools": TOOLS}}
    )
    source = SOURCES.build("silent", config)
    try:
        began = time.monotonic()
        with ThreadPoolExecutor(3) as pool:
            futures = [pool.submit(call, source, "certificate_inventory", 2) for _ in range(3)]
            failures = [future.exception() for future in futures]
        assert all(isinstance(failure, SourceFailed) for failure in failures), failures
        assert time.monotonic() - began < 10  # not one deadline after another
    finally:
        source.close()
    running = lambda: subprocess.run(["pgrep", "-f", marker], capture_output=True).returncode == 0  # noqa: E731
    poll("the silent server to be stopped", lambda: not running(), 10)
