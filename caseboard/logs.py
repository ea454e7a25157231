"""structlog, configured once: contextvars, level, ISO UTC timestamps, JSON (console on a terminal).

Events are snake_case facts with ids and positions as fields, never payloads.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any, TextIO

import orjson
import structlog

LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}


def configure_logging(
    level: str = "info", fmt: str = "auto", stream: TextIO | None = None, *, cache: bool = False
) -> None:
    """``cache``: bind each logger once, at its first event, rather than at every event (structlog's
    ``cache_logger_on_first_use``; a fifth of an event's CPU, and the coordinator logs every commit). For a
    process that configures logging once and for all (the command line's entry point, a server worker, a
    benchmark section): a logger bound before a later call keeps the earlier level and stream."""
    stream = stream or sys.stderr
    console = fmt == "console" or (fmt == "auto" and stream.isatty())
    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer(serializer=_json)
    )
    printer = structlog.WriteLogger(stream)  # one for all: structlog asks the factory at every event, and the
    # bridge writes through it too, so that each event is one write of its line under the printer's lock
    stamp = structlog.processors.TimeStamper(fmt="iso", utc=True)
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            stamp,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(LEVELS[level]),
        logger_factory=lambda *_: printer,
        cache_logger_on_first_use=cache,
    )
    _route_standard_logging(printer, LEVELS[level], stamp, renderer)


LIBRARY_EVENTS = (
    ("Consumer encountered a connection error", "broker_connection_error"),
    ("Restarting consumer in", "broker_consumer_restarting"),
)
"""Libraries' log messages (dramatiq's) that caseboard names as snake_case facts; others are ``library_log``."""


class _Bridge(logging.Handler):
    """Standard-library records (dramatiq, uvicorn, eventsourcing) rendered as caseboard's own events: the
    same JSON lines (or console lines), with the library's message as a field."""

    def __init__(self, printer: structlog.WriteLogger, stamp: Any, renderer: Any) -> None:
        super().__init__()
        self.printer = printer  # structlog's own: a library's line never lands inside one of caseboard's
        self.stamp = stamp
        self.renderer = renderer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
            name = next((event for prefix, event in LIBRARY_EVENTS if message.startswith(prefix)), "library_log")
            event: dict[str, Any] = {"event": name, "logger": record.name, "message": message}
            if record.exc_info and record.exc_info[1] is not None:
                event["error"] = repr(record.exc_info[1])
            event["level"] = record.levelname.lower()
            event = self.stamp(None, event["level"], event)
            self.printer.msg(str(self.renderer(None, event["level"], event)))
        except Exception:
            self.handleError(record)


def _route_standard_logging(printer: structlog.WriteLogger, level: int, stamp: Any, renderer: Any) -> None:
    """One bridge on the root logger, replacing any earlier one: a library never prints plain text past it.
    Libraries' informational chatter is left out unless the level is ``debug``."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, _Bridge)]:
        root.removeHandler(handler)
    root.addHandler(_Bridge(printer, stamp, renderer))
    root.setLevel(level if level <= logging.DEBUG else max(level, logging.WARNING))


_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
"""What ``json.dumps(event, default=repr)`` writes as JSON, orjson writes too (keys that are not strings as
strings); a datetime or a dataclass is its ``repr``, as there."""


def _json(event: dict[str, Any], **_: Any) -> str:
    """An event as one compact JSON line (what cannot be JSON is its ``repr``), by orjson: about a quarter of
    the standard encoder's cost, which the coordinator pays at every commit. What orjson refuses (an integer
    beyond 64 bits, a string that is not valid Unicode) is written by the standard library instead."""
    try:
        return orjson.dumps(event, default=repr, option=_OPTIONS).decode()
    except TypeError:
        return json.dumps(event, default=repr, separators=(",", ":"))
