"""Prometheus through its HTTP API, read only: instant and range queries, series, alerts, rules.

Each operation is one GET on its declared path. Targets are the series' ``instance`` labels: the instances a
request names that no series answered for make the result incomplete, as do Prometheus's ``warnings``, more
series than ``max_series`` and a response cut at ``max_bytes``. Each series (alert, rule group) is a finding
citing the exact bytes of its JSON object in the stored response.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from pydantic import Field

from caseboard.sources.base import Answer, Deadline, Finding, Operation, Parameters, Query, SourceFailed, SourcePlugin
from caseboard.sources.config import SourceConfig
from caseboard.sources.http import ReadOnlyHttp, plain_error
from caseboard.sources.record import json_spans


class Expr(Parameters):
    query: str = Field(min_length=1, max_length=4096)
    """A PromQL expression."""


class Range(Expr):
    step_s: float = Field(default=15.0, gt=0)
    """Seconds between the points of a range query."""


class Match(Parameters):
    match: list[str] = Field(min_length=1, max_length=20)
    """Series selectors (``match[]``)."""


class Nothing(Parameters):
    pass


OPERATIONS = {
    "range_query": (Operation("range_query", "a PromQL expression over the time range", Range), "/api/v1/query_range"),
    "instant_query": (Operation("instant_query", "a PromQL expression at the range's end", Expr), "/api/v1/query"),
    "series": (Operation("series", "the series matching selectors in the time range", Match), "/api/v1/series"),
    "alerts": (Operation("alerts", "the alerts firing or pending now", Nothing, ranged=False), "/api/v1/alerts"),
    "rules": (
        Operation("rules", "the alerting and recording rules and their state", Nothing, ranged=False),
        "/api/v1/rules",
    ),
}
READ_PATHS = tuple(path for _, path in OPERATIONS.values())


def _labels(metric: dict[str, str]) -> str:
    name = metric.get("__name__", "")
    rest = ",".join(f'{k}="{v}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{rest}}}"


def _at(seconds: Any) -> datetime:
    return datetime.fromtimestamp(float(seconds), UTC)


def _stamp(text: str | None, default: datetime) -> datetime:
    if not text or text.startswith("0001-"):
        return default
    return datetime.fromisoformat(text.replace("Z", "+00:00")[:26] + ("+00:00" if text.endswith("Z") else ""))


class Prometheus:
    kinds: tuple[str, ...] = ("metrics_query",)
    default_operation = "range_query"
    operations: Mapping[str, Operation] = MappingProxyType({name: op for name, (op, _) in OPERATIONS.items()})

    def __init__(self, name: str, config: SourceConfig) -> None:
        self.name = name
        self.config = config
        self.kinds = config.kinds or Prometheus.kinds
        self.http = ReadOnlyHttp(config, READ_PATHS)

    def close(self) -> None:
        self.http.close()

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "range_query", "query": text}

    def run(self, query: Query, deadline: Deadline) -> Answer:
        p: Any = query.parameters
        _, path = OPERATIONS[query.operation]
        params: list[tuple[str, str | int | float | bool | None]] = []
        if query.time_range is not None:
            start, end = (t.timestamp() for t in query.time_range)
            if query.operation == "range_query":
                params = [("query", p.query), ("start", start), ("end", end), ("step", p.step_s)]
            elif query.operation == "instant_query":
                params = [("query", p.query), ("time", end)]
            else:
                params = [*(("match[]", m) for m in p.match), ("start", start), ("end", end)]
        reply = self.http.get(path, params, deadline)
        answer = Answer(reply.raw, reply.media_type or "application/json")
        if reply.truncated:
            answer.incomplete.append(f"truncated: response over {self.config.guardrails.max_bytes} bytes")
            answer.targets = query.targets or None
            answer.unread = True
            return answer  # its JSON is cut: nothing is read from it, and nothing said to be absent
        try:
            body = json.loads(reply.raw)
        except ValueError:
            raise SourceFailed(f"HTTP {reply.status}: {plain_error(reply.raw)}", raw=reply.raw) from None
        if reply.status != 200 or body.get("status") != "success":
            raise SourceFailed(
                f"HTTP {reply.status}: {body.get('errorType', '')} {body.get('error', '')}".strip(), raw=reply.raw
            )
        for warning in body.get("warnings") or ():
            answer.incomplete.append(f"source_warning: {warning}")
        if any("partial" in str(w).lower() for w in body.get("warnings") or ()):
            answer.incomplete.append("partial_response")
        data = body.get("data")
        now = query.time_range[1] if query.time_range else datetime.now(UTC)
        if query.operation in ("range_query", "instant_query"):
            self._series(answer, query, data.get("result") or [], json_spans(reply.raw, "result"))
        elif query.operation == "series":
            self._series(answer, query, [{"metric": m} for m in data or []], json_spans(reply.raw, "data"), now)
        elif query.operation == "alerts":
            spans = json_spans(reply.raw, "alerts")
            for alert, span in zip(data.get("alerts") or [], spans, strict=False):
                labels = alert.get("labels", {})
                answer.findings.append(
                    Finding(
                        f"alert {labels.get('alertname', '?')} {alert.get('state')} since {alert.get('activeAt')}: "
                        f"{_labels(labels)}",
                        labels.get("instance", self.name),
                        _stamp(alert.get("activeAt"), now),
                        bytes=span,
                    )
                )
        else:
            spans = json_spans(reply.raw, "groups")
            for group, span in zip(data.get("groups") or [], spans, strict=False):
                rules = [
                    f"{r.get('name')} ({r.get('type')}, {r.get('health')}, {r.get('state', '-')})"
                    for r in group.get("rules", [])
                ]
                answer.findings.append(
                    Finding(
                        f"rule group {group.get('name')}: {'; '.join(rules) or 'no rules'}",
                        self.name,
                        _stamp(group.get("lastEvaluation"), now),
                        bytes=span,
                    )
                )
        most = self.config.guardrails.max_series
        if len(answer.findings) > most:
            answer.incomplete.append(f"truncated: {len(answer.findings)} series, read the first {most}")
            del answer.findings[most:]
        return answer

    def _series(
        self,
        answer: Answer,
        query: Query,
        result: list[dict[str, Any]],
        spans: list[tuple[int, int]],
        default: datetime | None = None,
    ) -> None:
        seen: list[str] = []
        for series, span in zip(result, spans, strict=False):
            metric = series.get("metric", {})
            instance = metric.get("instance", "")
            if instance and instance not in seen:
                seen.append(instance)
            points = series.get("values") or ([series["value"]] if "value" in series else [])
            if points:
                values = [float(v) for _, v in points]
                nonzero = next((t for t, v in points if float(v) != 0.0), None)
                when = _at(nonzero if nonzero is not None else points[-1][0])
                statement = (
                    f"{_labels(metric)}: {len(points)} sample(s) {_at(points[0][0]).isoformat()} to "
                    f"{_at(points[-1][0]).isoformat()}, first {points[0][1]}, last {points[-1][1]}, "
                    f"min {min(values):g}, max {max(values):g}"
                    + (f", first non-zero at {when.isoformat()}" if nonzero is not None else ", never non-zero")
                )
            else:
                when = default or datetime.now(UTC)
                statement = f"series {_labels(metric)} exists"
            answer.findings.append(Finding(statement, instance or self.name, when, bytes=span))
        answer.answered = tuple(t for t in (query.targets or seen) if t in seen)
        answer.targets = query.targets or tuple(seen)


PLUGIN = SourcePlugin("prometheus", lambda name, config, _options: Prometheus(name, config))
