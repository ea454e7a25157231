"""What a query records, whatever the source: the request read into a query, the record and its bounds."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from caseboard.domain.items import WorkResult
from caseboard.sources.base import Answer, Deadline, Finding, Query
from caseboard.sources.config import SourceConfig
from caseboard.sources.record import BadRequest, ask, json_spans, query_of, record
from caseboard.sources.registry import SOURCES

NOW = datetime(2026, 3, 2, 14, 30, tzinfo=UTC)


def prometheus(**guardrails: Any) -> tuple[Any, SourceConfig]:
    config = SourceConfig.model_validate(
        {"type": "prometheus", "endpoint": "http://127.0.0.1:9", "guardrails": guardrails}
    )
    return SOURCES.build("prom", config), config


def test_plain_text_is_the_default_operation_over_the_last_hour() -> None:
    source, config = prometheus()
    query, incomplete = query_of(source, "rate(auth_failures_total[5m])", config, NOW)
    assert (query.operation, query.parameters.model_dump()) == (
        "range_query",
        {"query": "rate(auth_failures_total[5m])", "step_s": 15.0},
    )
    assert query.time_range == (datetime(2026, 3, 2, 13, 30, tzinfo=UTC), NOW) and incomplete == []
    source.close()


def test_a_longer_range_than_the_guardrail_is_cut_to_its_latest_part_and_says_so() -> None:
    source, config = prometheus(max_range_s=600)
    asked = json.dumps({"query": "up", "start": "2026-03-02T00:00:00Z", "end": "2026-03-02T14:00:00Z"})
    query, incomplete = query_of(source, asked, config, NOW)
    assert query.time_range == (datetime(2026, 3, 2, 13, 50, tzinfo=UTC), datetime(2026, 3, 2, 14, tzinfo=UTC))
    assert incomplete == ["truncated: time range cut to the last 600 s"]
    source.close()


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ('{"operation": "delete_series", "query": "up"}', "'delete_series' is not an operation of this source"),
        ('{"query": "up", "colour": "red"}', "range_query: colour: Extra inputs are not permitted"),
        ('{"query": "up", "start": "yesterday"}', "start 'yesterday' is not an ISO 8601 time"),
        ('{"query": "up", "start": "2026-03-02T15:00:00Z", "end": "2026-03-02T14:00:00Z"}', "is after end"),
        ('{"query": "up", "filters": {"a": ""}}', "filters: at most 256, each name and value 1 to 256"),
        ('{"query": "up", "targets": ["' + "x" * 300 + '"]}', "targets: at most 256, each 1 to 256"),
        ('{"query": "up", "targets": "host-1"}', "targets must be a list of strings"),
        ("{not json", "the target is not valid JSON"),
    ],
)
def test_a_request_the_source_cannot_run_is_a_failed_result_saying_why(target: str, message: str) -> None:
    source, config = prometheus()
    with pytest.raises(BadRequest):
        query_of(source, target, config, NOW)
    ran = ask(source, target, config, clock=lambda: NOW)
    recorded = record(ran, name="prom", config=config, request_id="r", generation=1, store=_store, now=NOW)
    [result] = recorded.items
    assert result["status"] == "failed" and message in result["summary"]
    assert result["query"]["completed"] is False
    WorkResult.model_validate({"type": "work_result", **result})  # what the coordinator will be given
    source.close()


def _store(data: bytes, media_type: str) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_more_targets_than_a_record_holds_are_cut_and_the_result_is_incomplete() -> None:
    source, config = prometheus()
    query = Query("instant_query", source.operations["instant_query"].parameters(query="up"), (NOW, NOW))
    names = tuple(f"host-{n}:9100" for n in range(300))
    answer = Answer(
        b'{"a": 1}', answered=names, targets=names, findings=[Finding("up is 1", "host-0:9100", NOW, bytes=(0, 7))]
    )
    from caseboard.sources.record import Ran

    recorded = record(
        Ran(query, answer, None, False, 1.0),
        name="prom",
        config=config,
        request_id="r",
        generation=1,
        store=_store,
        now=NOW,
    )
    result = WorkResult.model_validate({"type": "work_result", **recorded.items[0]})
    assert result.query is not None and len(result.query.targets) == 256 == len(result.query.answered or ())
    assert result.query.incomplete == ("truncated: 300 targets, the first 256 recorded",)
    assert result.query.completed is False
    source.close()


def test_json_spans_are_the_elements_of_the_array_under_the_key_never_a_key_inside_a_string() -> None:
    raw = b'{"note": "\\"result\\": [9]", "data": {"result": [ {"a": "\\u00e9"} , {"b": [1, 2]}]}}'
    spans = json_spans(raw, "result")
    assert [json.loads(raw[a : b + 1]) for a, b in spans] == [{"a": "é"}, {"b": [1, 2]}]
    top = b' [{"x": 1}, 2]'
    assert [json.loads(top[a : b + 1]) for a, b in json_spans(top, None)] == [{"x": 1}, 2]
    assert json_spans(b'{"result": [{"a": 1}, {"b": ', "result") == [(12, 19)]  # cut: the whole ones only
    utf8 = '{"result": [{"a": "é→"}, {"b": 1}]}'.encode()  # offsets are bytes, not characters
    assert [json.loads(utf8[a : b + 1]) for a, b in json_spans(utf8, "result")] == [{"a": "é→"}, {"b": 1}]


def test_the_deadline_reports_what_remains() -> None:
    deadline = Deadline(5)
    assert 4 < deadline.left() <= 5 and not deadline.passed()
    assert Deadline(0).passed() and Deadline(0).left() == 0.001
