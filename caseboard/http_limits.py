"""The limits on the HTTP server's connections (``caseboard serve`` flags; enforced by
``caseboard/api/http_protocol.py``, ADR 0041). Plain values, importable without the web stack."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HttpLimits:
    header_timeout_s: float = 10.0
    """From a connection's opening (or a keep-alive request's first byte) until its headers are complete."""
    body_timeout_s: float = 30.0
    """From a request's headers until its whole body has arrived."""
    keep_alive_s: int = 5
    """How long an idle keep-alive connection stays open after a response (uvicorn's own timeout)."""
    max_connections: int = 512
    """Connections one server process holds at once; one more gets a 503 and is closed."""
    max_connections_per_client: int = 64
    """Connections one client address may hold at once in one server process; one more gets a 503 and is
    closed (ADR 0146). Behind a proxy every client has the proxy's address: raise it to ``max_connections``."""
