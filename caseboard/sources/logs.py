"""Log lines, read only: from files (globs under the configured directories) and from a Loki-compatible HTTP API.

``lines``: the files a glob names under ``options.dirs`` (never outside them), each line whose leading ISO 8601
time falls in the range and that matches ``match`` (a regular expression), at most ``max_lines``. The stored
response is a block per file, headed by a ``# file`` line, holding the lines as they are in the file; a
finding per file cites its block's lines.

``loki_range``: a LogQL range query (``GET /loki/api/v1/query_range``, ``limit`` = ``max_lines``); a finding
per stream cites the bytes of its JSON object. Hitting the line limit makes the result incomplete.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pydantic import Field, field_validator

from caseboard.sources.base import Answer, Deadline, Finding, Operation, Parameters, Query, SourceFailed, SourcePlugin
from caseboard.sources.config import SourceConfig
from caseboard.sources.http import ReadOnlyHttp, plain_error
from caseboard.sources.record import json_spans

LEADING_TIME = re.compile(r"^\[?(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)")
LOKI_PATH = "/loki/api/v1/query_range"


class Lines(Parameters):
    glob: str = Field(default="**/*.log", min_length=1, max_length=512)
    """Files under the configured directories (``auth/*.log``)."""
    match: str | None = Field(default=None, max_length=1024)
    """A regular expression a line must match."""

    @field_validator("match")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value


class LogQL(Parameters):
    query: str = Field(min_length=1, max_length=4096)
    """A LogQL log query (``{app="payments-api"} |= "auth"``)."""


class Options(Parameters):
    dirs: list[Path] = Field(default_factory=list)
    """The directories whose files ``lines`` may read."""


OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {
        "lines": Operation("lines", "lines of files under the configured directories, by time and pattern", Lines),
        "loki_range": Operation("loki_range", "a LogQL range query against a Loki-compatible API", LogQL),
    }
)


def line_time(line: str) -> datetime | None:
    found = LEADING_TIME.match(line)
    if found is None:
        return None
    try:
        parsed = datetime.fromisoformat(found.group(1).replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class Logs:
    kinds: tuple[str, ...] = ("log_query",)
    operations = OPERATIONS

    def __init__(self, name: str, config: SourceConfig, options: Options) -> None:
        self.name = name
        self.config = config
        self.kinds = config.kinds or Logs.kinds
        self.dirs = [d.resolve() for d in options.dirs]
        self.default_operation = "lines" if self.dirs or not config.endpoint else "loki_range"
        self.http = ReadOnlyHttp(config, (LOKI_PATH,)) if config.endpoint else None

    def close(self) -> None:
        if self.http is not None:
            self.http.close()

    def plain(self, text: str) -> dict[str, Any]:
        if self.default_operation == "lines":
            return {"operation": "lines", "match": re.escape(text)}
        return {"operation": "loki_range", "query": text}

    def run(self, query: Query, deadline: Deadline) -> Answer:
        if query.operation == "lines":
            return self._lines(query, deadline)
        return self._loki(query, deadline)

    def _files(self, glob: str) -> list[Path]:
        if not self.dirs:
            raise SourceFailed("this source has no directories to read (options.dirs)")
        found: list[Path] = []
        for base in self.dirs:
            for path in sorted(base.glob(glob)):
                real = path.resolve()
                if real.is_file() and real.is_relative_to(base) and real not in found:
                    found.append(real)
        return found

    def _lines(self, query: Query, deadline: Deadline) -> Answer:
        p: Any = query.parameters
        assert query.time_range is not None
        start, end = query.time_range
        pattern = re.compile(p.match) if p.match else None
        budget = self.config.guardrails.max_lines
        out: list[str] = []
        answer = Answer(b"", "text/plain")
        files = self._files(p.glob)
        answer.targets = query.targets or tuple(str(f) for f in files)
        for path in files:
            if deadline.passed():
                answer.incomplete.append("timeout: files left unread")
                break
            kept: list[tuple[datetime, str]] = []
            with path.open(encoding="utf-8", errors="replace") as lines:
                for line in lines:
                    line = line.rstrip("\n")
                    when = line_time(line)
                    if when is None or not start <= when <= end or (pattern and not pattern.search(line)):
                        continue
                    if budget == 0:
                        answer.incomplete.append(f"truncated: more than {self.config.guardrails.max_lines} lines")
                        break
                    kept.append((when, line))
                    budget -= 1
            answer.answered += (str(path),)
            if not kept:
                continue
            first = len(out) + 1
            out.append(f"# file {path}: {len(kept)} line(s)")
            out.extend(line for _, line in kept)
            answer.findings.append(
                Finding(
                    f"{path.name}: {len(kept)} line(s) from {kept[0][0].isoformat()} to {kept[-1][0].isoformat()}; "
                    f"first: {kept[0][1][:300]}",
                    path.name,
                    kept[0][0],
                    lines=(first, len(out)),
                )
            )
            if answer.incomplete:
                break
        answer.raw = ("\n".join(out) + "\n").encode() if out else b""
        return answer

    def _loki(self, query: Query, deadline: Deadline) -> Answer:
        if self.http is None:
            raise SourceFailed("this source has no endpoint for LogQL queries")
        p: Any = query.parameters
        assert query.time_range is not None
        limit = self.config.guardrails.max_lines
        start, end = (str(int(t.timestamp() * 1e9)) for t in query.time_range)
        params: list[tuple[str, str | int | float | bool | None]] = [
            ("query", p.query),
            ("start", start),
            ("end", end),
            ("limit", limit),
            ("direction", "forward"),
        ]
        reply = self.http.get(LOKI_PATH, params, deadline)
        answer = Answer(reply.raw, reply.media_type or "application/json")
        if reply.truncated:
            answer.incomplete.append(f"truncated: response over {self.config.guardrails.max_bytes} bytes")
            answer.unread = True
            return answer
        try:
            body = json.loads(reply.raw)
        except ValueError:
            raise SourceFailed(f"HTTP {reply.status}: {plain_error(reply.raw)}", raw=reply.raw) from None
        if reply.status != 200 or body.get("status") != "success":
            raise SourceFailed(f"HTTP {reply.status}: {body.get('error') or plain_error(reply.raw)}", raw=reply.raw)
        streams = body.get("data", {}).get("result") or []
        seen: list[str] = []
        total = 0
        for stream, span in zip(streams, json_spans(reply.raw, "result"), strict=False):
            labels = stream.get("stream", {})
            values = stream.get("values") or []
            total += len(values)
            instance = labels.get("instance") or labels.get("host") or labels.get("job") or self.name
            if instance not in seen:
                seen.append(instance)
            if not values:
                continue
            first_at = datetime.fromtimestamp(int(values[0][0]) / 1e9, UTC)
            last_at = datetime.fromtimestamp(int(values[-1][0]) / 1e9, UTC)
            described = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
            answer.findings.append(
                Finding(
                    f"{{{described}}}: {len(values)} line(s) from {first_at.isoformat()} to {last_at.isoformat()}; "
                    f"first: {str(values[0][1])[:300]}",
                    instance,
                    first_at,
                    bytes=span,
                )
            )
        if total >= limit:
            answer.incomplete.append(f"truncated: the line limit of {limit} was reached")
        answer.answered = tuple(t for t in (query.targets or seen) if t in seen)
        answer.targets = query.targets or tuple(seen)
        return answer


PLUGIN = SourcePlugin("logs", lambda name, config, options: Logs(name, config, options), Options)
