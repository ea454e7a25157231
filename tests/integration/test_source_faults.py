"""A source that hangs, answers partially, answers 10 MB or goes away mid-answer: what the result records."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from caseboard.sources.config import SourceConfig
from tests.sources.board import embedded, request_and_answer, specialist, whole
from tests.sources.servers import FaultServer


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    server = FaultServer()
    yield server
    server.close()


def config(url: str, **guardrails: object) -> SourceConfig:
    return SourceConfig.model_validate({"type": "prometheus", "endpoint": url, "guardrails": guardrails})


def test_a_source_that_hangs_is_a_failed_result_with_its_coverage_within_the_deadline(
    fault: FaultServer, tmp_path: Path
) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(fault.url + "/hang", timeout_s=1))
        begun = time.monotonic()
        result = request_and_answer(app, who, "m-hang", "metrics_query", "up")[-1].items[0]
        assert time.monotonic() - begun < 4  # the deadline held (1 s; the rest is the ledger's)
    assert result.status == "failed"
    assert "timed out" in result.summary
    query = result.query
    assert query.completed is False and query.incomplete == ("timeout",)
    assert query.operation == "range_query" and query.parameters["query"] == "up"
    assert (query.time_range[1] - query.time_range[0]).total_seconds() == 3600
    assert 900 < query.elapsed_ms < 2500
    assert result.observation is None


class Replaced:
    """The real Prometheus source's operations and plain reading, with its ``run`` replaced."""

    kinds = ("metrics_query",)
    default_operation = "range_query"

    def __init__(self, real: object, run: Callable[..., None]) -> None:
        self.operations = real.operations  # type: ignore[attr-defined]
        self.plain = real.plain  # type: ignore[attr-defined]
        self.run = run

    def close(self) -> None:
        pass


def test_a_plugin_that_ignores_its_deadline_is_cut_by_caseboard(tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config("http://127.0.0.1:9", timeout_s=0.5))
        who.source = Replaced(who.source, lambda *_: time.sleep(30))  # type: ignore[assignment]
        begun = time.monotonic()
        result = request_and_answer(app, who, "m-stuck", "metrics_query", "up")[-1].items[0]
        assert time.monotonic() - begun < 3
    assert result.status == "failed" and result.query.incomplete == ("timeout",)
    assert "no answer within the deadline of 0.5 s" in result.summary


def test_a_plugin_s_task_group_error_is_recorded_as_the_errors_inside_it(tmp_path: Path) -> None:
    def run(*_: object) -> None:
        refused = ConnectionRefusedError(111, "Connection refused")
        raise ExceptionGroup("unhandled errors in a TaskGroup", [ExceptionGroup("inner", [refused])])

    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config("http://127.0.0.1:9"))
        who.source = Replaced(who.source, run)  # type: ignore[assignment]
        result = request_and_answer(app, who, "m-grouped", "metrics_query", "up")[-1].items[0]
    assert result.status == "failed" and result.query.incomplete == ("source_error",)
    assert result.summary == "prometheus range_query failed: ConnectionRefusedError: [Errno 111] Connection refused"


def test_a_partial_response_is_recorded_incomplete(fault: FaultServer, tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(fault.url + "/warn"))
        items = request_and_answer(app, who, "m-warn", "metrics_query", "auth_failures_total")[-1].items
        work = app.workspaces.show("incident-042")["work"][0]
    result = items[0]
    assert result.status == "completed" and result.query.completed is False
    assert result.query.incomplete == (
        "source_warning: partial response: store eu-1 unavailable",
        "partial_response",
    )
    assert result.observation is not None and result.observation.source.instance == "a:1"
    assert "first non-zero at 2023-11-14T22:13:35+00:00" in result.observation.statement
    assert work["status"] == "incomplete"


def test_a_10_mb_answer_is_cut_at_the_guardrail_and_incomplete(fault: FaultServer, tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(fault.url + "/huge", max_bytes=1_000_000))
        result = request_and_answer(app, who, "m-huge", "metrics_query", "up")[-1].items[0]
        stored = whole(app, result.query.response)
    assert result.status == "completed" and result.query.completed is False
    assert result.query.incomplete == ("truncated: response over 1000000 bytes",)
    assert len(stored) == 1_000_000 and stored.startswith(b'{"status":"success"')
    assert result.observation is None  # a cut answer is not read, and never said to be empty


def test_a_source_that_goes_away_mid_answer_is_a_failed_result_keeping_what_came(
    fault: FaultServer, tmp_path: Path
) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(fault.url + "/drop"))
        result = request_and_answer(app, who, "m-drop", "metrics_query", "up")[-1].items[0]
        stored = whole(app, result.query.response)
    assert result.status == "failed" and result.query.incomplete == ("source_error",)
    assert "the connection dropped mid-response" in result.summary
    assert stored == FaultServer.BODY[: len(FaultServer.BODY) // 2]


def test_only_declared_reads_reached_the_faulty_source(fault: FaultServer, tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(fault.url + "/warn"))
        request_and_answer(app, who, "m-1", "metrics_query", {"operation": "series", "match": ["up"]})
        request_and_answer(app, who, "m-2", "metrics_query", {"operation": "alerts"})
    assert [(m, p.split("?")[0]) for m, p in fault.received] == [
        ("GET", "/warn/api/v1/series"),
        ("GET", "/warn/api/v1/alerts"),
    ]


def test_a_credential_the_source_echoes_reaches_neither_ledger_nor_store_nor_log(
    fault: FaultServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PROM_TOKEN", "tok-s3cret-42")
    credential = {"credential": {"env": "PROM_TOKEN"}}
    with embedded(tmp_path) as app:
        refused = SourceConfig.model_validate({"type": "prometheus", "endpoint": fault.url + "/deny", **credential})
        failed = request_and_answer(app, specialist(app, "prometheus", refused), "m-deny", "metrics_query", "up")
        warned = SourceConfig.model_validate({"type": "prometheus", "endpoint": fault.url + "/deny/ok", **credential})
        answered = request_and_answer(app, specialist(app, "prometheus", warned), "m-ok", "metrics_query", "up")
        stored = [whole(app, c.items[0].query.response) for c in (failed[-1], answered[-1])]
        ledger = b"".join(c.stored_json for c in app.ledger.read("incident-042"))
    assert failed[-1].items[0].status == "failed"
    assert "HTTP 401: unauthorized refused Bearer [redacted]" in failed[-1].items[0].summary
    assert answered[-1].items[0].query.incomplete == ("source_warning: slow for Bearer [redacted]",)
    assert b"*************" in stored[0]  # masked in place, the bytes around it as sent
    for where in (ledger, *stored, capsys.readouterr().out.encode()):
        assert b"tok-s3cret-42" not in where and b"s3cret" not in where
