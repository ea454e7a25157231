"""Alertmanager's API v2, read only: the alerts it holds and its silences.

``alerts`` (``GET /api/v2/alerts``, with ``filter`` label matchers and whether silenced or inhibited ones are
included) and ``silences`` (``GET /api/v2/silences``). A finding per alert or silence cites the bytes of its
JSON object; an alert's targets are its ``instance`` labels, its event time its ``startsAt``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any

from pydantic import Field

from caseboard.sources.base import Answer, Deadline, Finding, Operation, Parameters, Query, SourceFailed, SourcePlugin
from caseboard.sources.config import SourceConfig
from caseboard.sources.http import ReadOnlyHttp, plain_error
from caseboard.sources.record import json_spans

PATHS = {"alerts": "/api/v2/alerts", "silences": "/api/v2/silences"}


class Alerts(Parameters):
    filter: list[str] = Field(default_factory=list, max_length=20)
    """Label matchers (``alertname="AuthFailures"``)."""
    silenced: bool = True
    inhibited: bool = True


class Silences(Parameters):
    filter: list[str] = Field(default_factory=list, max_length=20)


OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {
        "alerts": Operation("alerts", "the alerts Alertmanager holds now", Alerts, ranged=False),
        "silences": Operation("silences", "the silences, active, pending and expired", Silences, ranged=False),
    }
)


def _time(text: str | None, default: datetime) -> datetime:
    if not text:
        return default
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class Alertmanager:
    kinds: tuple[str, ...] = ("alert_query",)
    default_operation = "alerts"
    operations = OPERATIONS

    def __init__(self, name: str, config: SourceConfig) -> None:
        self.name = name
        self.config = config
        self.kinds = config.kinds or Alertmanager.kinds
        self.http = ReadOnlyHttp(config, tuple(PATHS.values()))

    def close(self) -> None:
        self.http.close()

    def plain(self, text: str) -> dict[str, Any]:
        return {"operation": "alerts", "filter": [text] if text else []}

    def run(self, query: Query, deadline: Deadline) -> Answer:
        p: Any = query.parameters
        params: list[tuple[str, str | int | float | bool | None]] = [("filter", f) for f in p.filter]
        if query.operation == "alerts":
            params += [("silenced", str(p.silenced).lower()), ("inhibited", str(p.inhibited).lower())]
        reply = self.http.get(PATHS[query.operation], params, deadline)
        answer = Answer(reply.raw, reply.media_type or "application/json")
        if reply.truncated:
            answer.incomplete.append(f"truncated: response over {self.config.guardrails.max_bytes} bytes")
            answer.unread = True
            return answer
        try:
            body = json.loads(reply.raw)
        except ValueError:
            raise SourceFailed(f"HTTP {reply.status}: {plain_error(reply.raw)}", raw=reply.raw) from None
        if reply.status != 200 or not isinstance(body, list):
            raise SourceFailed(f"HTTP {reply.status}: {plain_error(reply.raw)}", raw=reply.raw)
        now = datetime.now().astimezone()
        seen: list[str] = []
        for entry, span in zip(body, json_spans(reply.raw, None), strict=False):
            if query.operation == "alerts":
                labels = entry.get("labels", {})
                instance = labels.get("instance", self.name)
                if instance not in seen:
                    seen.append(instance)
                state = entry.get("status", {}).get("state", "?")
                described = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
                statement = (
                    f"alert {labels.get('alertname', '?')} {state} since {entry.get('startsAt')}: {{{described}}}"
                )
                answer.findings.append(Finding(statement, instance, _time(entry.get("startsAt"), now), bytes=span))
            else:
                matchers = ", ".join(
                    f"{m.get('name')}{'=' if m.get('isEqual', True) else '!='}{'~' if m.get('isRegex') else ''}"
                    f"{m.get('value')}"
                    for m in entry.get("matchers", [])
                )
                state = entry.get("status", {}).get("state", "?")
                statement = (
                    f"silence {entry.get('id')} {state} from {entry.get('startsAt')}"
                    f" to {entry.get('endsAt')} by {entry.get('createdBy')}: {matchers}; {entry.get('comment', '')}"
                )
                answer.findings.append(Finding(statement, self.name, _time(entry.get("startsAt"), now), bytes=span))
        most = self.config.guardrails.max_series
        if len(answer.findings) > most:
            answer.incomplete.append(f"truncated: {len(answer.findings)} entries, read the first {most}")
            del answer.findings[most:]
        if query.operation == "alerts":
            answer.answered = tuple(t for t in (query.targets or seen) if t in seen)
            answer.targets = query.targets or tuple(seen)
        return answer


PLUGIN = SourcePlugin("alertmanager", lambda name, config, _options: Alertmanager(name, config))
