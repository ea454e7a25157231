"""The log source: lines of files under configured directories, and a Loki-compatible API's LogQL range queries."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from caseboard.pilot.servers import Serving
from caseboard.sources.config import SourceConfig
from tests.sources.board import embedded, excerpt, request_and_answer, specialist, whole

AUTH_LOG = """2026-03-02T13:55:00Z payments-api-2 auth ok user=a
2026-03-02T13:57:12Z payments-api-2 auth_failure handshake: unknown certificate authority
2026-03-02T13:58:40Z payments-api-2 auth ok user=b
2026-03-02T14:03:00Z payments-api-2 auth_failure handshake: unknown certificate authority
not a timestamped line auth_failure
2026-03-02T15:30:00Z payments-api-2 auth_failure outside the range
"""
WINDOW = {"start": "2026-03-02T13:30:00Z", "end": "2026-03-02T14:30:00Z"}


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    (root / "auth").mkdir(parents=True)
    (root / "auth" / "payments-api-2.log").write_text(AUTH_LOG)
    (root / "auth" / "payments-api-1.log").write_text("2026-03-02T14:01:00Z payments-api-1 auth ok\n")
    secret = tmp_path / "outside.log"
    secret.write_text("2026-03-02T14:00:00Z auth_failure a file outside the directories\n")
    (root / "auth" / "escape.log").symlink_to(secret)
    return root


def config(**fields: object) -> SourceConfig:
    return SourceConfig.model_validate({"type": "logs", **fields})


def test_matching_lines_in_the_range_are_stored_as_in_the_file_and_cited(logs: Path, tmp_path: Path) -> None:
    before = {p: p.read_bytes() for p in logs.rglob("*.log")}
    with embedded(tmp_path) as app:
        who = specialist(app, "auth-logs", config(options={"dirs": [str(logs)]}, clock_trusted=True))
        target = {"operation": "lines", "glob": "auth/*.log", "match": "auth_failure", **WINDOW}
        items = request_and_answer(app, who, "log-query-001", "log_query", target)[-1].items
        result = items[0]
        query = result.query
        assert result.status == "completed" and query.completed is True
        assert query.parameters == {"glob": "auth/*.log", "match": "auth_failure"}
        assert [Path(t).name for t in query.targets] == ["payments-api-1.log", "payments-api-2.log"]
        assert query.answered == query.targets  # the symlink out of the directory is not a target
        stored = whole(app, query.response).decode()
        assert "outside the directories" not in stored and "outside the range" not in stored
        observation = result.observation
        assert len(items) == 1 and observation.source.instance == "payments-api-2.log"
        assert observation.event_time.isoformat() == "2026-03-02T13:57:12+00:00"
        assert observation.event_time_quality == "verified"
        cited = excerpt(app, observation.evidence_ref).decode().splitlines()
        assert cited[1:] == [AUTH_LOG.splitlines()[1], AUTH_LOG.splitlines()[3]]  # the file's lines, unchanged
    assert {p: p.read_bytes() for p in logs.rglob("*.log")} == before


def test_the_line_limit_truncates_and_a_glob_cannot_leave_the_directories(logs: Path, tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "auth-logs", config(options={"dirs": [str(logs)]}, guardrails={"max_lines": 2}))
        result = request_and_answer(app, who, "l-1", "log_query", {"glob": "auth/payments-api-2.log", **WINDOW})
        truncated = result[-1].items[0]
        escaped = request_and_answer(app, who, "l-2", "log_query", {"glob": "../*.log", **WINDOW})[-1].items[0]
    assert truncated.query.completed is False
    assert truncated.query.incomplete == ("truncated: more than 2 lines",)
    assert escaped.query.targets == () and "found nothing" in escaped.observation.statement


class Loki:
    """A Loki-compatible query API: records what it receives and answers two streams."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        loki = self
        body = {
            "status": "success",
            "data": {
                "resultType": "streams",
                "result": [
                    {
                        "stream": {"app": "payments-api", "instance": "payments-api-2"},
                        "values": [["1772459832000000000", "auth_failure unknown ca"]],
                    },
                    {
                        "stream": {"app": "payments-api", "instance": "payments-api-3"},
                        "values": [
                            ["1772460180000000000", "auth_failure unknown ca"],
                            ["1772460190000000000", "auth_failure unknown ca"],
                        ],
                    },
                ],
            },
        }
        self.body = json.dumps(body).encode()

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _any(self) -> None:
                loki.received.append((self.command, self.path))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(loki.body)))
                self.end_headers()
                self.wfile.write(loki.body)

            do_GET = do_POST = do_DELETE = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = Serving(self.server)


@pytest.fixture
def loki() -> Iterator[Loki]:
    server = Loki()
    yield server
    server.serving.stop()


def test_a_logql_range_query_cites_each_stream_and_sends_only_the_declared_read(loki: Loki, tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "loki", config(endpoint=loki.url, guardrails={"max_lines": 3}))
        target = {
            "query": '{app="payments-api"} |= "auth_failure"',
            "targets": ["payments-api-2", "payments-api-3"],
            **WINDOW,
        }
        items = request_and_answer(app, who, "loki-1", "log_query", target)[-1].items
        result = items[0]
        assert result.query.operation == "loki_range"
        assert result.query.answered == ("payments-api-2", "payments-api-3")
        assert result.query.incomplete == ("truncated: the line limit of 3 was reached",)
        cited = [json.loads(excerpt(app, o.evidence_ref)) for o in (result.observation, *items[1:])]
        assert [c["stream"]["instance"] for c in cited] == ["payments-api-2", "payments-api-3"]
    [(method, path)] = loki.received
    asked = parse_qs(urlsplit(path).query)
    assert (method, urlsplit(path).path) == ("GET", "/loki/api/v1/query_range")
    assert asked["limit"] == ["3"] and asked["direction"] == ["forward"]
    assert asked["start"] == ["1772458200000000000"] and asked["end"] == ["1772461800000000000"]
