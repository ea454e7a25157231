"""One log event per commit and per refusal, with ids and positions as fields, never payloads.

The events are read with ``structlog.testing.capture_logs`` on top of the configuration that
``caseboard.logs.configure_logging`` installs, and once through its real JSON renderer.
"""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Iterator, MutableMapping
from typing import Any

import pytest
import structlog
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from caseboard import logs
from caseboard.logs import configure_logging
from tests.unit.board import Board, claim, hyp, link, obs, proposal, work_request

SECRET = "PAYLOAD-7f3a"  # appears in every free text below; must appear in no event


@pytest.fixture(autouse=True)
def configured() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    configure_logging("info", "json", stream)
    yield stream
    structlog.reset_defaults()


def story(board: Board) -> tuple[int, int]:
    """A few commits and refusals, every free text carrying SECRET; (commits, refusals)."""
    board.open()
    board.ok("specialist", [obs("obs-1", statement=f"{SECRET} auth failures")])
    board.ok("planner", [hyp("hyp-1", statement=f"{SECRET} cert", supporting_evidence=["obs-1"])])
    board.submit("planner", [hyp("hyp-1", statement=f"{SECRET} again")])  # duplicate_id
    board.submit("specialist", [link("obs-1", "hyp-9")])  # unknown_reference
    secret_proposal = {**proposal("prop-1", 3, "hyp-1"), "summary": f"{SECRET} roll back"}
    board.ok("planner", [secret_proposal, work_request("r-1")])
    board.submit("planner", [obs("obs-2", statement=f"{SECRET} wrong role")])  # forbidden
    board.ok("specialist", [claim("r-1")])
    board.submit("specialist", [obs("obs-3", statement=SECRET)], expected_version=2)  # version_conflict
    return 5, 4


def events(logs: list[MutableMapping[str, Any]], name: str) -> list[MutableMapping[str, Any]]:
    return [e for e in logs if e["event"] == name]


def test_each_commit_logs_exactly_one_commit_recorded_event_with_its_position() -> None:
    board = Board()
    with capture_logs() as logs:
        commits, _ = story(board)
    recorded = events(logs, "commit_recorded")
    assert len(recorded) == commits == board.head
    assert [e["workspace_version"] for e in recorded] == [1, 2, 3, 4, 5]
    assert all(e["workspace_id"] == "ws-1" for e in recorded)
    authors = ["operator-1", "specialist-1", "planner-1", "planner-1", "specialist-1"]
    assert [e["author"] for e in recorded] == authors
    assert [e["role"] for e in recorded] == ["operator", "specialist", "planner", "planner", "specialist"]
    assert [e["item_types"] for e in recorded] == [
        ["open"],
        ["observation"],
        ["hypothesis"],
        ["proposal", "work_request"],
        ["work_claim"],
    ]
    assert all(e["log_level"] == "info" for e in recorded)


def test_each_refusal_logs_exactly_one_contribution_refused_event_with_its_reason() -> None:
    with capture_logs() as logs:
        _, refusals = story(Board())
    refused = events(logs, "contribution_refused")
    assert len(refused) == refusals
    reasons = ["duplicate_id", "unknown_reference", "forbidden", "version_conflict"]
    assert [e["reason"] for e in refused] == reasons
    fields = ["items[0].id", "items[0].hypothesis[0]", "items[0]", "expected_version"]
    assert [e["field"] for e in refused] == fields
    assert all(e["workspace_id"] == "ws-1" for e in refused)
    assert [e["item_types"] for e in refused] == [["hypothesis"], ["link"], ["observation"], ["observation"]]


def test_an_idempotent_retry_logs_no_second_commit() -> None:
    board = Board()
    board.open()
    with capture_logs() as logs:
        board.ok("specialist", [obs("obs-1")], idempotency_key="k")
        board.ok("specialist", [obs("obs-1")], idempotency_key="k")
    assert len(events(logs, "commit_recorded")) == 1
    assert events(logs, "contribution_refused") == []


def test_an_unparseable_contribution_logs_one_refusal_naming_the_field() -> None:
    board = Board()
    board.open()
    with capture_logs() as logs:
        bad = {**obs("obs-1", statement=SECRET), "x": 1}
        outcome = board.raw(json.dumps(board.envelope("specialist", [bad])))
        board.raw('{"workspace_id": "ws-1", "items": [')
    assert outcome["reason"] == "invalid"
    refused = events(logs, "contribution_refused")
    assert [(e["reason"], e["field"]) for e in refused] == [("invalid", "items[0].x"), ("invalid", "$")]
    assert refused[0]["workspace_id"] == "ws-1"
    assert SECRET not in repr(logs)


def test_no_event_carries_payload_text() -> None:
    with capture_logs() as logs:
        story(Board())
    assert logs
    assert SECRET not in repr(logs)


def test_the_configured_renderer_writes_one_json_line_per_event(configured: io.StringIO) -> None:
    story(Board())
    lines = [json.loads(line) for line in configured.getvalue().splitlines()]
    assert [line["event"] for line in lines].count("commit_recorded") == 5
    assert [line["event"] for line in lines].count("contribution_refused") == 4
    first = lines[0]
    assert first["workspace_version"] == 1
    assert first["level"] == "info"
    assert first["timestamp"].endswith("Z")
    assert SECRET not in configured.getvalue()


def test_the_configured_level_filters_commit_events(configured: io.StringIO) -> None:
    configure_logging("warning", "json", configured)
    story(Board())
    assert configured.getvalue() == ""


def test_loggers_used_before_capturing_are_still_captured() -> None:
    """configure_logging does not cache loggers on first use, so capture_logs sees what follows."""
    board = Board()
    board.open()
    with capture_logs() as logs:
        board.ok("specialist", [obs("obs-1")])
    assert [e["event"] for e in logs] == ["commit_recorded"]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
    | st.datetimes(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=12), json_values, max_size=8))
def test_the_json_renderer_writes_what_json_dumps_writes(event: dict[str, Any]) -> None:
    """The renderer writes orjson's compact line: the same JSON value as ``json.dumps`` writes (what cannot be
    JSON, a datetime here, as its ``repr``), on one line. An infinite float, which JSON cannot hold, is null."""
    line = logs._json(event)
    assert json.loads(line) == json.loads(json.dumps(event, default=repr))
    assert "\n" not in line
    assert json.loads(logs._json({"big": float("inf")})) == {"big": None}


class YieldingStream(io.StringIO):
    """A stream whose every write gives other threads the chance to run, as a pipe or a file may."""

    def write(self, text: str) -> int:
        written = super().write(text)
        time.sleep(0)
        return written


def test_events_of_caseboard_and_of_libraries_written_at_once_stay_one_json_object_a_line() -> None:
    """A worker's threads log at the same moment, its own events and dramatiq's through the bridge: each
    lands as one line, never one inside another (two objects on a line, then an empty one)."""
    stream = YieldingStream()
    configure_logging("info", "json", stream)
    start = threading.Barrier(4)

    def own(index: int) -> None:
        start.wait()
        for number in range(200):
            structlog.get_logger("caseboard.worker").warning("broker_unavailable", thread=index, number=number)

    def library(_: int) -> None:
        start.wait()
        consumer = logging.getLogger("dramatiq.worker.ConsumerThread")
        for number in range(200):
            consumer.critical("Consumer encountered a connection error %d", number)

    threads = [threading.Thread(target=target, args=(n,)) for n, target in enumerate((own, own, library, library))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 800
    parsed = [json.loads(line) for line in lines]  # every line one JSON object, or this fails
    assert sum(event["event"] == "broker_connection_error" for event in parsed) == 400
