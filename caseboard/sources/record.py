"""What every query records, whatever the source: caseboard's code, not the plugin's and never a model's.

    ask      the request's target -> a ``Query`` (the operation and its validated parameters, the time range cut
             to the guardrail), run on a thread of its own against the deadline: a source that hangs past it is
             a ``timeout``, whatever the plugin does
    record   the raw response into the artifact store (its id is the SHA-256 of the bytes); a ``work_result``
             whose ``query`` record says what was asked, what answered, why it is incomplete and how long it
             took; an observation per finding (at most ``MAX_OBSERVATIONS``), citing the exact lines or bytes
             it rests on; an empty answer is an observation of absence with its coverage; a source error is a
             ``failed`` result with the source's message, secrets removed

Event times are ``verified`` only when the configuration declares the source's clock trusted.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from pydantic import ValidationError

from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import MAX_REFS, MAX_TEXT
from caseboard.sources.base import Answer, Deadline, Finding, Query, Source, SourceFailed, cause, parameters_of
from caseboard.sources.config import Credential, SourceConfig

MAX_OBSERVATIONS = 10
"""Observations one result records; the response artifact holds every finding, the summary counts them."""
MAX_EXCERPT = 1024 * 1024
"""A citation's excerpt is at most 1 MiB (docs/evidence.md)."""
TIME_FIELDS = ("start", "end", "since_s", "targets", "filters", "operation")


class BadRequest(CaseboardError):
    """A work request this source cannot run as asked (an unknown operation, a wrong parameter)."""


@dataclass
class Ran:
    """One query's run: the query (None when the request could not be read), the answer or the failure, the
    reasons it is incomplete known before it was sent, how long it took."""

    query: Query | None
    answer: Answer | None
    failure: str | None
    timeout: bool
    elapsed_ms: float
    incomplete: list[str] = field(default_factory=list)
    raw: bytes = b""


def _time(value: Any, name: str) -> datetime:
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"{name} {value!r} is not an ISO 8601 time or a Unix time") from None
    if parsed.tzinfo is None:
        raise BadRequest(f"{name} {value!r} has no time zone")
    return parsed


def query_of(
    source: Source, target: str, config: SourceConfig, now: datetime, default_range_s: int = 3600
) -> tuple[Query, list[str]]:
    """The query a work request's ``target`` asks for: a JSON object (``operation``, ``start``/``end`` or
    ``since_s``, ``targets``, ``filters`` and the operation's parameters) or plain text, which the source's
    default operation reads its own way (``Source.plain``). Returns the reasons it is incomplete already (the
    time range cut to the guardrail)."""
    text = target.strip()
    asked: dict[str, Any]
    if text.startswith("{"):
        try:
            asked = json.loads(text)
        except json.JSONDecodeError as error:
            raise BadRequest(f"the target is not valid JSON: {error}") from None
        if not isinstance(asked, dict):
            raise BadRequest("the target must be a JSON object")
    else:
        asked = source.plain(text)
    name = str(asked.get("operation") or source.default_operation)
    operation = source.operations.get(name)
    if operation is None:
        raise BadRequest(f"{name!r} is not an operation of this source (it has {', '.join(source.operations)})")
    try:
        parameters = parameters_of(operation, {k: v for k, v in asked.items() if k not in TIME_FIELDS})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise BadRequest(f"{name}: {where}: {first['msg']}") from None
    incomplete: list[str] = []
    time_range: tuple[datetime, datetime] | None = None
    if getattr(operation, "ranged", True):
        end = _time(asked["end"], "end") if "end" in asked else now
        if "start" in asked:
            start = _time(asked["start"], "start")
        else:
            start = end - timedelta(seconds=float(asked.get("since_s", default_range_s)))
        if start > end:
            raise BadRequest(f"start {start.isoformat()} is after end {end.isoformat()}")
        longest = timedelta(seconds=config.guardrails.max_range_s)
        if end - start > longest:
            start = end - longest
            incomplete.append(f"truncated: time range cut to the last {config.guardrails.max_range_s} s")
        time_range = (start, end)
    targets = asked.get("targets", ())
    filters = asked.get("filters", {})
    if not isinstance(targets, list | tuple) or not all(isinstance(t, str) for t in targets):
        raise BadRequest("targets must be a list of strings")
    if not isinstance(filters, dict) or not all(isinstance(v, str) for v in filters.values()):
        raise BadRequest("filters must be an object of strings")
    if len(filters) > MAX_REFS or any(len(k) > 256 or not 0 < len(v) <= 256 for k, v in filters.items()):
        raise BadRequest(f"filters: at most {MAX_REFS}, each name and value 1 to 256 characters")
    if len(targets) > MAX_REFS or any(not 0 < len(t) <= 256 for t in targets):
        raise BadRequest(f"targets: at most {MAX_REFS}, each 1 to 256 characters")
    return Query(name, parameters, time_range, tuple(targets), dict(filters)), incomplete


def ask(source: Source, target: str, config: SourceConfig, *, clock: Callable[[], datetime] | None = None) -> Ran:
    """Reads the request and runs it on a thread of its own; the deadline (``guardrails.timeout_s``) holds
    whatever the source does."""
    now = (clock or (lambda: datetime.now(UTC)))()
    begun = time.perf_counter()
    try:
        query, incomplete = query_of(source, target, config, now)
    except BadRequest as error:
        return Ran(None, None, str(error), False, 0.0)
    deadline = Deadline(config.guardrails.timeout_s)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["answer"] = source.run(query, deadline)
        except SourceFailed as error:
            box["failed"] = error
        except Exception as error:
            box["failed"] = SourceFailed(cause(error))

    worker = threading.Thread(target=run, name="caseboard-source-query", daemon=True)
    worker.start()
    worker.join(config.guardrails.timeout_s + 0.5)  # the plugin's own timeouts get their chance first
    elapsed = (time.perf_counter() - begun) * 1000
    if worker.is_alive():
        message = f"no answer within the deadline of {config.guardrails.timeout_s:g} s"
        return Ran(query, None, message, True, elapsed, [*incomplete, "timeout"])
    if "failed" in box:
        failed: SourceFailed = box["failed"]
        reasons = [*incomplete, "timeout" if failed.timeout else "source_error"]
        return Ran(query, None, str(failed), failed.timeout, elapsed, reasons, failed.raw)
    return Ran(query, box["answer"], None, False, elapsed, incomplete)


SECRET_IN_URL = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)
SECRET_PARAMS = re.compile(r"(?P<name>(?:token|key|password|secret|auth)[a-z_]*=)[^&\s\"']+", re.IGNORECASE)


def _kept_out(credential: Credential | None) -> str:
    """The credential's value as read now, to keep out of what is recorded ('' when there is none to read)."""
    if credential is None:
        return ""
    try:
        return credential.value()
    except ValueError:  # unreadable now: nothing of it was sent, nor can be echoed
        return ""


def redact(message: str, credential: Credential | None) -> str:
    """The message without the credential's value, userinfo in URLs or secret-like query parameters."""
    secret = _kept_out(credential)
    if secret:
        message = message.replace(secret, "[redacted]")
    message = SECRET_IN_URL.sub(r"\g<scheme>[redacted]@", message)
    return SECRET_PARAMS.sub(r"\g<name>[redacted]", message)


def masked(raw: bytes, credential: Credential | None) -> bytes:
    """``raw`` with every occurrence of the credential's value (a server echoing it) masked by as many ``*``,
    so that nothing stored holds it and every offset a finding cites stays where it was."""
    secret = _kept_out(credential).encode()
    return raw.replace(secret, b"*" * len(secret)) if secret else raw


def _short(text: str, limit: int = MAX_TEXT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _value(value: Any) -> str:
    return _short(value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str))


@dataclass
class Recorded:
    """The items of one result (``work_result`` first), and the artifact of its raw response."""

    items: list[dict[str, Any]]
    artifact: str | None


def record(
    ran: Ran,
    *,
    name: str,
    config: SourceConfig,
    request_id: str,
    generation: int,
    store: Callable[[bytes, str], str],
    now: datetime,
) -> Recorded:
    """The contribution's items for ``ran``. ``store(bytes, media_type)`` keeps the raw response and returns its
    artifact id (the workspace tenant's artifact store)."""
    system = config.system or name
    quality = "verified" if config.clock_trusted else "unverified"
    query = ran.query
    answer = ran.answer
    raw = masked(answer.raw if answer is not None else ran.raw, config.credential)
    artifact = store(raw, answer.media_type if answer is not None else "application/octet-stream") if raw else None
    asked = tuple(
        answer.targets if answer is not None and answer.targets is not None else query.targets if query else ()
    )
    answered = answer.answered if answer is not None else ()
    if len(asked) > MAX_REFS:  # learned from a response: the record names the first MAX_REFS
        ran.incomplete.append(f"truncated: {len(asked)} targets, the first {MAX_REFS} recorded")
        asked = asked[:MAX_REFS]
        answered = tuple(t for t in answered if t in asked)
    asked = tuple(t[:256] for t in asked)
    answered = tuple(t[:256] for t in answered)
    incomplete = [redact(r, config.credential) for r in (*ran.incomplete, *(answer.incomplete if answer else ()))]
    incomplete += [f"missing_target: {t}" for t in asked if t not in answered and answer is not None]
    start, end = query.time_range if query and query.time_range else (now, now)
    record_: dict[str, Any] = {
        "time_range": [start.isoformat(), end.isoformat()],
        "filters": dict(query.filters) if query else {},
        "targets": list(asked),
        "completed": answer is not None and not incomplete,
        "operation": query.operation if query else "unread",
        "parameters": {
            k: _value(v) for k, v in (query.parameters.model_dump(exclude_none=True) if query else {}).items()
        },
        "answered": list(answered),
        "incomplete": [_short(r, 256) for r in incomplete],
        "elapsed_ms": round(ran.elapsed_ms, 3),
    }
    if artifact is not None:
        record_["response"] = artifact
    result: dict[str, Any] = {
        "type": "work_result",
        "request_id": request_id,
        "generation": generation,
        "query": record_,
    }
    operation = query.operation if query else "request"
    if answer is None:
        result["status"] = "failed"
        result["summary"] = _short(f"{name} {operation} failed: {redact(ran.failure or '', config.credential)}")
        return Recorded([result], artifact)
    findings = answer.findings
    result["status"] = "completed"
    base = f"{request_id[:96]}.g{generation}"

    def observation(
        i: int, statement: str, instance: str, at: datetime, cite: dict[str, Any] | str | None
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"{base}.o{i}",
            "statement": _short(redact(statement, config.credential)),
            "source": {"system": system, "instance": instance[:256] or system},
            "event_time": at.isoformat(),
            "event_time_quality": quality,
            "scope": {"instances": [instance[:256]]} if instance else None,
        }
        if cite is not None:
            out["evidence_ref"] = cite
        return {k: v for k, v in out.items() if v is not None}

    if not findings and answer.unread:
        result["summary"] = _short(f"{name} {operation}: the response was not read ({'; '.join(incomplete)})")
        return Recorded([result], artifact)
    cited = [_cite(artifact, f) for f in findings[:MAX_OBSERVATIONS]]
    if not findings:
        covered = ", ".join(asked) if asked else "every target"
        state = "complete" if not incomplete else "incomplete (" + "; ".join(incomplete) + ")"
        statement = (
            f"{name} {operation} found nothing: {covered}, {start.isoformat()} to {end.isoformat()}"
            + (f", filters {json.dumps(dict(query.filters))}" if query and query.filters else "")
            + f"; the query was {state}"
        )
        whole = {"artifact": artifact, "bytes": [0, min(len(raw), MAX_EXCERPT) - 1]} if artifact else None
        result["observation"] = observation(0, statement, system, end, whole)
        result["summary"] = _short(redact(statement, config.credential))
        return Recorded([result], artifact)
    observations = [
        observation(i, f.statement, f.instance, f.event_time, cite)
        for i, (f, cite) in enumerate(zip(findings, cited, strict=False))
    ]
    result["observation"] = observations[0]
    shown = f"; observations for the first {MAX_OBSERVATIONS}" if len(findings) > MAX_OBSERVATIONS else ""
    state = "" if not incomplete else " (incomplete: " + "; ".join(incomplete) + ")"
    first = redact(findings[0].statement, config.credential)
    result["summary"] = _short(f"{name} {operation}: {len(findings)} finding(s){shown}{state}; first: {first}")
    return Recorded([result, *({"type": "observation", **o} for o in observations[1:])], artifact)


def _cite(artifact: str | None, finding: Finding) -> dict[str, Any] | None:
    if artifact is None:
        return None
    if finding.lines is not None:
        return {"artifact": artifact, "lines": list(finding.lines)}
    if finding.bytes is not None:
        first, last = finding.bytes
        return {"artifact": artifact, "bytes": [first, min(last, first + MAX_EXCERPT - 1)]}
    return None


def json_spans(raw: bytes, key: str | None) -> list[tuple[int, int]]:
    """The byte spans [first, last] of the elements of the first JSON array under ``"key":`` in ``raw`` (the
    top-level array when ``key`` is None), in order: what a finding read from one element cites. A key inside
    a string never matches (its quotes are escaped there)."""
    text = raw.decode("utf-8", errors="replace")
    found = re.match(r"\s*\[", text) if key is None else re.search(rf'"{re.escape(key)}"\s*:\s*\[', text)
    if found is None:
        return []
    decoder = json.JSONDecoder()
    spans: list[tuple[int, int]] = []
    at = found.end()
    offsets = _ByteOffsets(text)
    while True:
        while at < len(text) and text[at] in " \t\r\n,":
            at += 1
        if at >= len(text) or text[at] == "]":
            return spans
        try:
            _, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            return spans  # cut by the byte guardrail: the elements read so far
        spans.append((offsets(at), offsets(end) - 1))
        at = end


class _ByteOffsets:
    """Character index -> byte offset in the UTF-8 text (the same for ASCII, which responses mostly are)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()

    def __call__(self, index: int) -> int:
        return index if self.ascii else len(self.text[:index].encode())


def read_capped(chunks: Iterable[bytes], limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of ``chunks``; True when there were more (the rest is never read)."""
    taken: list[bytes] = []
    size = 0
    for chunk in chunks:
        if size + len(chunk) > limit:
            taken.append(chunk[: limit - size])
            return b"".join(taken), True
        taken.append(chunk)
        size += len(chunk)
    return b"".join(taken), False
