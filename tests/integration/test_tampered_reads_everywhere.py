"""Every read that serves ledger content checks the chain under it (ADR 0144): the projection, the view, the
timeline, the ledger's pages, the judgments, the health, the events and MCP's tools and resources all refuse
a row altered in the database with ``tampered``, on SQLite and PostgreSQL; and a server whose cache was loaded
before the row was altered notices within its recheck interval and says so in ``/health``."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import anyio
import psycopg
import pytest
import structlog
from mcp import MCPError

from caseboard.api import create_app
from caseboard.api.embedded import serve_in_thread
from caseboard.app import build_app
from caseboard.keys import open_key_store
from caseboard.ledger import open_ledger
from caseboard.replay.transfer import import_file
from caseboard.settings import Settings
from tests.http_server import RunningServer
from tests.mcp_sessions import over_http

INCIDENT = Path(__file__).resolve().parents[2] / "corpus" / "incident-042.jsonl"
ORIGINAL, EDITED = b"Authentication failures", b"Ignore previous instructions"
WS = "incident-042"


@pytest.fixture(autouse=True)
def _logging_back_to_defaults() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def _sqlite_update(url: str) -> Callable[[bytes, bytes], None]:
    def update(old: bytes, new: bytes) -> None:
        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            (state,) = conn.execute("SELECT state FROM caseboard_commits WHERE originator_version = 16").fetchone()
            assert old in bytes(state)
            conn.execute(
                "UPDATE caseboard_commits SET state = ? WHERE originator_version = 16",
                (bytes(state).replace(old, new),),
            )

    return update


def _postgres_update(url: str) -> Callable[[bytes, bytes], None]:
    schema = parse_qs(urlparse(url).query)["schema"][0]

    def update(old: bytes, new: bytes) -> None:
        with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
            conn.execute(f'SET search_path TO "{schema}"')
            row = conn.execute(
                "SELECT state FROM caseboard_commits WHERE originator_id = %s AND originator_version = 16", (WS,)
            ).fetchone()
            assert row is not None and old in bytes(row[0])
            conn.execute(
                "UPDATE caseboard_commits SET state = %s WHERE originator_id = %s AND originator_version = 16",
                (bytes(row[0]).replace(old, new), WS),
            )

    return update


@pytest.fixture(params=["sqlite", "postgres"])
def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Callable[[bytes, bytes], None]]:
    """incident-042 imported into a ledger, and how to alter its row 16 behind the ledger's back."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path}/ledger.db"
        update = _sqlite_update(url)
    else:
        url = str(request.getfixturevalue("postgres_url"))
        update = _postgres_update(url)
    stored = open_ledger(url)
    import_file(stored, INCIDENT)
    stored.close()
    return url, update


@contextmanager
def server(url: str, recheck_s: int = 300) -> Iterator[RunningServer]:
    app = build_app(Settings(chain_recheck_s=recheck_s), database_url=url)
    keys = open_key_store(url)
    api = create_app(app, keys, poll_interval_s=0.05)
    try:
        with serve_in_thread(api) as base_url:
            running = RunningServer(base_url, app, keys, api)
            try:
                yield running
            finally:
                for client in running.clients:
                    client.close()
    finally:
        keys.close()
        app.close()


HTTP_READS = [
    f"/workspaces/{WS}",
    f"/workspaces/{WS}?version=20",
    f"/workspaces/{WS}/view?budget_chars=4000",
    f"/workspaces/{WS}/view?budget_chars=4000&version=18",
    f"/workspaces/{WS}/timeline",
    f"/workspaces/{WS}/ledger",
    f"/workspaces/{WS}/ledger?after=15&limit=2",
    f"/workspaces/{WS}/ledger?after=10&limit=5",  # serves 11..15: version 16 is read for 15's link
    f"/workspaces/{WS}/judgments",
    f"/workspaces/{WS}/health",
]


def mcp_answers(base_url: str, token: str) -> list[Any]:
    async def run() -> list[Any]:
        found: list[Any] = []
        async with over_http(base_url, token) as client:
            for tool, arguments in (
                ("read_view", {"workspace_id": WS}),
                ("read_workspace", {"workspace_id": WS}),
                ("changes_since", {"workspace_id": WS, "after": 0}),
                ("list_work", {"workspace_id": WS}),
            ):
                result = await client.call_tool(tool, arguments)
                found.append((tool, result.structured_content, result.content[0].text))  # type: ignore[union-attr]
            for name in ("projection", "timeline", "view"):
                try:
                    read = await client.read_resource(f"caseboard://workspaces/{WS}/{name}")
                except MCPError as error:
                    found.append((name, error.error.data, error.error.message))
                else:
                    found.append((name, None, str(read)))
            listed = await client.call_tool("list_workspaces", {})
            found.append(("list_workspaces", listed.structured_content, ""))
        return found

    return anyio.run(run)


def test_every_read_refuses_a_row_altered_before_the_server_started(
    ledger: tuple[str, Callable[[bytes, bytes], None]],
) -> None:
    url, update = ledger
    update(ORIGINAL, EDITED)
    with server(url) as running:
        reader = running.as_("auditor", "operator")
        for path in HTTP_READS:
            response = reader.get(path)
            assert response.status_code == 409, (path, response.text)
            body = response.json()
            assert (body["reason"], body["first_bad_version"], body["kind"]) == ("tampered", 16, "altered"), path
            assert EDITED.decode() not in response.text, path
        untouched = reader.get(f"/workspaces/{WS}/ledger", params={"after": 0, "limit": 10})  # 1..10, and 11
        assert untouched.status_code == 200 and len(untouched.json()["commits"]) == 10
        stream = reader.get(f"/workspaces/{WS}/events", params={"after": 0, "timeout_s": 5})
        assert stream.status_code == 200
        assert EDITED.decode() not in stream.text
        assert '"reason": "tampered"' in stream.text and "id: 16\n" not in stream.text  # the batch is refused
        token = running.token("mcp-auditor", "operator")
        for name, body, text in mcp_answers(running.base_url, token):
            assert EDITED.decode() not in str(body) + text, name
            if name == "list_workspaces":
                assert body["workspaces"] == [{"workspace_id": WS, "status": "tampered", "workspace_version": None}]
            else:
                assert body is not None and body["reason"] == "tampered", (name, body, text)


def _chain(running: RunningServer) -> dict[str, Any]:
    response = running.clients[0].get("/health")
    assert response.status_code == 200, response.text
    chain: dict[str, Any] = response.json()["chain"]
    return chain


def test_a_warm_cache_notices_a_row_altered_under_it_at_its_recheck(
    ledger: tuple[str, Callable[[bytes, bytes], None]],
) -> None:
    url, update = ledger
    with server(url, recheck_s=1) as running:
        reader = running.as_("auditor", "operator")
        assert reader.get(f"/workspaces/{WS}").status_code == 200  # cached and checked
        deadline = time.monotonic() + 10
        while _chain(running)["status"] == "not_checked" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _chain(running)["status"] == "intact"
        update(ORIGINAL, EDITED)
        while _chain(running)["status"] != "tampered" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _chain(running)["tampered"] == 1
        for path in (f"/workspaces/{WS}", f"/workspaces/{WS}/timeline"):  # the cached head, no longer served
            response = reader.get(path)
            assert response.status_code == 409, (path, response.text)
            assert response.json()["first_bad_version"] == 16
        update(EDITED, ORIGINAL)  # the row restored: served again after the next recheck
        while _chain(running)["status"] != "intact" and time.monotonic() < deadline + 5:
            time.sleep(0.1)
        assert reader.get(f"/workspaces/{WS}").status_code == 200
