"""Time and count limits on the server's HTTP connections, which uvicorn alone does not set (ADR 0041).

uvicorn closes a keep-alive connection left idle after a response (``timeout_keep_alive``), but never one
that has sent nothing yet, nor one that sends its headers or body a byte at a time: a thousand idle or slow
clients would hold a thousand connections for good. ``GuardedHttpProtocol`` is uvicorn's httptools protocol
with, per connection:

- a header timeout: from the connection's opening (or a keep-alive request's first byte) until its headers
  are complete, at most ``header_timeout_s``;
- a body timeout: from the headers until the whole body has arrived, at most ``body_timeout_s``;
- a limit on the connections the process holds at once: one over ``max_connections`` gets a 503 and is
  closed at once;
- a limit on the connections one client address holds at once (ADR 0146): one over
  ``max_connections_per_client`` gets a 503 and is closed at once, so that slow or idle clients from one
  address cannot take the connections every other client needs.

A connection that times out in the middle of a request gets a 408, one that sent nothing is closed; both
answers have the contract's error shape. The limits travel on uvicorn's ``Config`` (``caseboard_limits``),
so worker processes started by ``--workers`` apply them too.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from caseboard.http_limits import HttpLimits

log = structlog.get_logger("caseboard.api")
LOG_EVERY_S = 1.0


@dataclass
class _Refusals:
    """Connections refused since the last ``http_connection_refused`` line, and when it was logged."""

    count: int = 0
    logged_at: float = float("-inf")


_REFUSALS = _Refusals()


def _answer(status: str, reason: str, message: str, extra: str = "") -> bytes:
    body = json.dumps({"ok": False, "reason": reason, "message": message}).encode()
    head = (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        f"connection: close\r\n{extra}\r\n"
    )
    return head.encode() + body


class GuardedHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of the module's docstring."""

    def __init__(self, config: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(config, *args, **kwargs)
        self.limits: HttpLimits = getattr(config, "caseboard_limits", None) or HttpLimits()
        self._deadline: asyncio.TimerHandle | None = None
        self._received = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            message = f"the server holds its limit of {self.limits.max_connections} connections"
            self._refuse(transport, message, limit=self.limits.max_connections)
            return
        if self._held_by_client() > self.limits.max_connections_per_client:
            limit = self.limits.max_connections_per_client
            self._refuse(transport, f"this client address holds its limit of {limit} connections", limit=limit)
            return
        self._arm(self.limits.header_timeout_s, "headers")

    def _held_by_client(self) -> int:
        """The connections of this process open from this connection's client address, this one included."""
        if self.client is None:
            return 0
        address = self.client[0]
        return sum(1 for other in self.connections if (getattr(other, "client", None) or ("",))[0] == address)

    def _refuse(self, transport: asyncio.Transport, message: str, *, limit: int) -> None:
        retry = "retry-after: 1\r\n"
        transport.write(_answer("503 Service Unavailable", "unavailable", f"{message}; retry shortly", retry))
        transport.close()
        _REFUSALS.count += 1
        now = self.loop.time()
        if now - _REFUSALS.logged_at >= LOG_EVERY_S:  # at most one line a second under a flood
            log.warning("http_connection_refused", limit=limit, refused=_REFUSALS.count)
            _REFUSALS.logged_at, _REFUSALS.count = now, 0

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._received = True
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._deadline is None:  # a keep-alive connection's next request: its headers are now on their way
            self._arm(self.limits.header_timeout_s, "headers")

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
        self._arm(self.limits.body_timeout_s, "body")

    def on_message_complete(self) -> None:
        self._disarm()
        super().on_message_complete()

    def _arm(self, seconds: float, what: str) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._timed_out, what, seconds)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _timed_out(self, what: str, seconds: float) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        responding = self.cycle is not None and self.cycle.response_started
        if self._received and not responding:
            message = f"the request's {what} did not arrive within {seconds:g} s"
            self.transport.write(_answer("408 Request Timeout", "invalid", message))
        log.info("http_connection_timed_out", waiting_for=what, after_s=seconds)
        self.transport.close()
