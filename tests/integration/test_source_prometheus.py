"""The Prometheus source against a real Prometheus (Debian's package) scraping a target this test runs."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from caseboard.pilot.servers import have_prometheus, prometheus
from caseboard.sources.base import Deadline, SourceFailed
from caseboard.sources.config import SourceConfig
from caseboard.sources.http import ReadOnlyHttp
from caseboard.sources.prometheus import READ_PATHS
from tests.conftest import service_missing
from tests.sources.board import embedded, excerpt, request_and_answer, specialist, whole
from tests.sources.servers import RecordingProxy, metrics_target

RULES = """
groups:
  - name: auth
    rules:
      - alert: AuthFailures
        expr: auth_failures_total > 0
"""
INSTANCES = ["payments-api-1", "payments-api-2", "payments-api-3"]


def answers(url: str, query: str) -> bool:
    return bool(httpx.get(url + "/api/v1/query", params={"query": query}).json()["data"]["result"])


def until(check: Callable[[], bool], timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "Prometheus did not get there in time"
        time.sleep(0.3)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, RecordingProxy]]:
    if not have_prometheus():
        service_missing("prometheus", FileNotFoundError("Debian's prometheus is not installed"))
    change = tmp_path_factory.mktemp("change") / "made"
    with metrics_target(change) as target, prometheus([target], RULES) as url:
        until(lambda: answers(url, 'count_over_time(auth_failures_total{instance="payments-api-2"}[1m]) > 2'))
        change.touch()  # the change: payments-api-3 fails from now on
        until(lambda: answers(url, 'auth_failures_total{instance="payments-api-3"} > 0'))
        until(lambda: bool(httpx.get(url + "/api/v1/alerts").json()["data"]["alerts"]))
        proxy = RecordingProxy(url)
        try:
            yield url, proxy
        finally:
            proxy.close()


def config(url: str, **guardrails: object) -> SourceConfig:
    return SourceConfig.model_validate(
        {"type": "prometheus", "endpoint": url, "clock_trusted": True, "guardrails": guardrails}
    )


def test_a_range_query_records_its_response_coverage_and_an_observation_per_series(
    served: tuple[str, RecordingProxy], tmp_path: Path
) -> None:
    _, proxy = served
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(proxy.url))
        target = {
            "query": "auth_failures_total",
            "since_s": 120,
            "step_s": 1,
            "targets": [*INSTANCES, "payments-api-4"],
        }
        commits = request_and_answer(app, who, "metrics-001", "metrics_query", target)
        claim, report = commits
        assert claim.items[0].type == "work_claim"
        result = report.items[0]
        assert result.type == "work_result" and result.status == "completed"
        query = result.query
        assert query.operation == "range_query"
        assert query.parameters == {"query": "auth_failures_total", "step_s": "1.0"}
        assert query.targets == (*INSTANCES, "payments-api-4")
        assert query.answered == tuple(INSTANCES)
        assert query.completed is False and query.incomplete == ("missing_target: payments-api-4",)
        assert (query.time_range[1] - query.time_range[0]).total_seconds() == 120
        assert query.elapsed_ms is not None and query.elapsed_ms > 0
        raw = whole(app, query.response)
        assert json.loads(raw)["status"] == "success"  # the response as Prometheus sent it
        observations = [result.observation, *(item for item in report.items[1:])]
        assert len(observations) == 3
        by_instance = {o.source.instance: o for o in observations}
        assert set(by_instance) == set(INSTANCES)
        for instance, observation in by_instance.items():
            assert observation.source.system == "prometheus"
            assert observation.event_time_quality == "verified"
            cited = json.loads(excerpt(app, observation.evidence_ref))  # exactly one series' object
            assert cited["metric"]["instance"] == instance
            assert cited["metric"]["__name__"] == "auth_failures_total"
        assert "never non-zero" in by_instance["payments-api-1"].statement
        before, after = by_instance["payments-api-2"].event_time, by_instance["payments-api-3"].event_time
        assert before < after  # failures before the change, and failures that began with it
        work = next(w for w in app.workspaces.show("incident-042")["work"] if w["request_id"] == "metrics-001")
        assert work["status"] == "incomplete"  # a missing target is never shown as a clean result


def test_an_empty_result_is_an_observation_of_absence_with_its_coverage(
    served: tuple[str, RecordingProxy], tmp_path: Path
) -> None:
    url, _ = served
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(url))
        commits = request_and_answer(
            app, who, "metrics-002", "metrics_query", 'auth_failures_total{instance="nowhere"}'
        )
        result = commits[-1].items[0]
        assert result.status == "completed" and result.query.completed is True
        assert len(commits[-1].items) == 1
        absence = result.observation
        assert "found nothing" in absence.statement and "every target" in absence.statement
        assert absence.event_time == result.query.time_range[1]
        assert json.loads(excerpt(app, absence.evidence_ref))["data"]["result"] == []


def test_instant_series_alerts_and_rules_and_nothing_but_declared_reads_reach_prometheus(
    served: tuple[str, RecordingProxy], tmp_path: Path
) -> None:
    _, proxy = served
    proxy.received.clear()
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", config(proxy.url))
        asked = {
            "q-instant": {"operation": "instant_query", "query": "auth_failures_total"},
            "q-series": {"operation": "series", "match": ["auth_failures_total"], "since_s": 60},
            "q-alerts": {"operation": "alerts"},
            "q-rules": {"operation": "rules"},
        }
        results = {rid: request_and_answer(app, who, rid, "metrics_query", t)[-1].items for rid, t in asked.items()}
    assert all(items[0].status == "completed" for items in results.values())
    assert len(results["q-instant"]) == 3 and len(results["q-series"]) == 3
    assert results["q-alerts"][0].observation.statement.startswith("alert AuthFailures firing")
    assert results["q-rules"][0].observation.statement.startswith("rule group auth: AuthFailures (alerting, ok")
    assert isinstance(results["q-alerts"][0].observation.event_time, datetime)
    received = {(method, urlsplit(path).path) for method, path in proxy.received}
    assert received == {("GET", p) for p in ("/api/v1/query", "/api/v1/series", "/api/v1/alerts", "/api/v1/rules")}
    assert {p for _, p in received} <= set(READ_PATHS)


def test_the_client_refuses_a_path_it_did_not_declare_before_sending_anything(
    served: tuple[str, RecordingProxy],
) -> None:
    _, proxy = served
    proxy.received.clear()
    client = ReadOnlyHttp(config(proxy.url), READ_PATHS)
    with pytest.raises(SourceFailed, match="not a declared read path"):
        client.get("/api/v1/admin/tsdb/delete_series", [("match[]", "up")], Deadline(5))
    assert proxy.received == []
    assert not hasattr(client, "post")
