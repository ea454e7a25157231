"""The Alertmanager source against a real Alertmanager (Debian's package): alerts and silences, read only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from caseboard.pilot.servers import alertmanager, have_alertmanager
from caseboard.sources.config import SourceConfig
from tests.conftest import service_missing
from tests.sources.board import embedded, excerpt, request_and_answer, specialist
from tests.sources.servers import RecordingProxy


@pytest.fixture(scope="module")
def served() -> Iterator[RecordingProxy]:
    if not have_alertmanager():
        service_missing("prometheus-alertmanager", FileNotFoundError("Debian's prometheus-alertmanager is missing"))
    with alertmanager() as url:
        now = datetime.now(UTC)
        alerts = [
            {
                "labels": {"alertname": "AuthFailures", "instance": f"payments-api-{n}", "service": "payments-api"},
                "startsAt": (now - timedelta(minutes=n)).isoformat(),
            }
            for n in (2, 3)
        ]
        assert httpx.post(url + "/api/v2/alerts", json=alerts).status_code == 200  # the test's setup, not the source
        silence = {
            "matchers": [{"name": "instance", "value": "payments-api-3", "isRegex": False, "isEqual": True}],
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
            "createdBy": "oncall",
            "comment": "certificate rotation",
        }
        assert httpx.post(url + "/api/v2/silences", json=silence).status_code == 200
        proxy = RecordingProxy(url)
        try:
            yield proxy
        finally:
            proxy.close()


def config(url: str) -> SourceConfig:
    return SourceConfig.model_validate({"type": "alertmanager", "endpoint": url})


def test_alerts_and_silences_are_cited_and_only_their_reads_reach_alertmanager(
    served: RecordingProxy, tmp_path: Path
) -> None:
    served.received.clear()
    with embedded(tmp_path) as app:
        who = specialist(app, "alertmanager", config(served.url))
        alerts = request_and_answer(
            app,
            who,
            "am-1",
            "alert_query",
            {
                "operation": "alerts",
                "filter": ['alertname="AuthFailures"'],
                "targets": ["payments-api-2", "payments-api-3"],
            },
        )[-1].items
        silences = request_and_answer(app, who, "am-2", "alert_query", {"operation": "silences"})[-1].items
        result = alerts[0]
        assert result.status == "completed" and result.query.completed is True
        assert result.query.answered == ("payments-api-2", "payments-api-3")
        by_instance = {o.source.instance: o for o in (result.observation, *alerts[1:])}
        assert "alert AuthFailures active" in by_instance["payments-api-2"].statement
        assert "alert AuthFailures suppressed" in by_instance["payments-api-3"].statement
        for instance, observation in by_instance.items():
            assert json.loads(excerpt(app, observation.evidence_ref))["labels"]["instance"] == instance
        silence = silences[0].observation
        assert "active" in silence.statement and "certificate rotation" in silence.statement
        assert "instance=payments-api-3" in silence.statement
        assert json.loads(excerpt(app, silence.evidence_ref))["createdBy"] == "oncall"
    assert [(m, urlsplit(p).path) for m, p in served.received] == [
        ("GET", "/api/v2/alerts"),
        ("GET", "/api/v2/silences"),
    ]
