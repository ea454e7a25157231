"""A source's raw response is stored without a disk flush of its own, and the commit that cites it flushes it
(docs/adr/0177): PostgreSQL crashes (an immediate stop of a private server) at each point of an answer, and no
committed citation ever names bytes that were lost.

The private server's WAL writer waits 10 s between rounds, so an asynchronous commit stays in the WAL buffers
until a later commit's flush writes it; a crash before that loses it. That is shown first (a response stored
and not yet cited is lost, and its result, submitted after the crash, is refused: nothing cites it), then the
guarantee: once the result that cites it is committed, the response survives the crash, every cited excerpt
still hashes to what the commit recorded. Last, a durable upload of bytes that an answer stored without a flush
makes them durable before it says they are stored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from caseboard.app import App, build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.citations import Cited, Span
from caseboard.domain.outcome import Accepted, Refused
from caseboard.evidence.cited import cited_in, read_excerpt
from caseboard.settings import Settings
from caseboard.sources.base import Answer, Deadline, Finding, Query
from caseboard.sources.config import SourceConfig
from caseboard.sources.prometheus import Prometheus
from caseboard.sources.specialist import SourceSpecialist
from tests.conftest import open_item
from tests.private_services import PrivatePostgres, private_postgres

TENANT = "tenant-a"
WORKSPACE = "incident-042"
TARGET = json.dumps({"query": "up", "since_s": 300})
UNFLUSHED = {"wal_writer_delay": "10s"}
"""The WAL writer's rounds are 10 s apart: what an asynchronous commit wrote stays unflushed meanwhile."""


class Canned:
    """A Prometheus-like source answering from memory: two series, each a finding citing its bytes."""

    kinds = Prometheus.kinds
    operations = Prometheus.operations
    default_operation = Prometheus.default_operation

    def __init__(self) -> None:
        self.runs = 0

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "range_query", "query": text}

    def run(self, query: Query, deadline: Deadline) -> Answer:
        self.runs += 1
        series = [f'{{"metric": {{"instance": "api-{i}"}}, "run": {self.runs}}}' for i in (1, 2)]
        raw = ('{"status": "success", "data": {"result": [' + ", ".join(series) + "]}}").encode()
        answer = Answer(raw, answered=("api-1", "api-2"))
        at = datetime.fromisoformat("2026-03-02T14:00:00+00:00")
        for i, text in enumerate(series, 1):
            first = raw.index(text.encode())
            answer.findings.append(Finding(f"series {text}", f"api-{i}", at, bytes=(first, first + len(text) - 1)))
        return answer

    def close(self) -> None:
        pass


@pytest.fixture
def server() -> Iterator[PrivatePostgres]:
    with private_postgres(UNFLUSHED) as pg:
        yield pg


def url(server: PrivatePostgres) -> str:
    return f"{server.url}?schema=crash"


def submit(app: App, principal: str, role: str, items: list[dict[str, Any]]) -> Accepted | Refused:
    body = {"workspace_id": WORKSPACE, "author": {"principal": principal, "role": role}, "items": items}
    return app.coordinator().submit(parse_contribution(json.dumps(body)))


def asked_and_claimed(app: App, who: SourceSpecialist, request_id: str) -> None:
    request = {"type": "work_request", "request_id": request_id, "kind": "metrics_query", "target": TARGET}
    assert isinstance(submit(app, "planner-1", "planner", [request]), Accepted)
    claim = {"type": "work_claim", "request_id": request_id, "lease_s": 300}
    assert isinstance(submit(app, who.principal, "specialist", [claim]), Accepted)


def specialist(app: App) -> SourceSpecialist:
    config = SourceConfig.model_validate(
        {"type": "prometheus", "endpoint": "http://127.0.0.1:9", "clock_trusted": True}
    )
    return SourceSpecialist(
        "prometheus", Canned(), config, TENANT, lambda: app.artifacts, "prom-specialist", ("metrics_query",)
    )


def cited(items: list[dict[str, Any]]) -> list[Cited]:
    refs = [item.get("observation", item)["evidence_ref"] for item in items]
    return [Cited(ref["artifact"], Span("bytes", *ref["bytes"])) for ref in refs]


def crash(server: PrivatePostgres, app: App) -> App:
    app.close()
    server.restart("immediate")  # every backend killed, nothing written out of the WAL buffers
    return build_app(Settings(database_url=url(server)))


def test_a_cited_response_survives_a_crash_and_one_not_yet_cited_is_never_cited(server: PrivatePostgres) -> None:
    app = build_app(Settings(database_url=url(server)))
    try:
        assert isinstance(submit(app, "operator-1", "operator", [open_item()]), Accepted)
        who = specialist(app)
        asked_and_claimed(app, who, "metrics-1")
        before = who.answer("metrics-1", 1, TARGET)  # stored; its result not yet committed
        assert all(app.artifacts.resolve_all(TENANT, cited(before)))
        app = crash(server, app)
        # the response had no flush of its own and nothing flushed after it: gone, and so never cited
        assert app.artifacts.resolve_all(TENANT, cited(before)) == [None, None]
        refused = submit(app, who.principal, "specialist", before)
        assert isinstance(refused, Refused) and refused.reason.value == "unknown_reference", refused

        who = specialist(app)
        asked_and_claimed(app, who, "metrics-2")
        after = who.answer("metrics-2", 1, TARGET)
        committed = submit(app, who.principal, "specialist", after)
        assert isinstance(committed, Accepted), committed.as_json()
        app = crash(server, app)
        commits = list(app.ledger.read(WORKSPACE, committed.workspace_version - 1))
        excerpts = cited_in(commits)
        assert len(excerpts) == 2
        for excerpt in excerpts:
            data = read_excerpt(app.artifacts, TENANT, excerpt)
            assert data is not None, f"{excerpt.evidence_ref} is cited by a commit and was lost"
            assert hashlib.sha256(data).hexdigest() == excerpt.record["sha256"]
    finally:
        app.close()


def test_a_durable_upload_of_bytes_stored_without_a_flush_makes_them_durable(server: PrivatePostgres) -> None:
    app = build_app(Settings(database_url=url(server)))
    try:
        stored = app.artifacts.put(TENANT, [b"the same response\n"], stored_by="prom-specialist", durable=False)
        again = app.artifacts.put(TENANT, [b"the same response\n"], stored_by="operator-1")
        assert stored.created and not again.created
        app = crash(server, app)
        assert b"".join(app.artifacts.read(TENANT, stored.meta.artifact_id)) == b"the same response\n"
    finally:
        app.close()
