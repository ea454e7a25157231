"""Signing a handoff: HMAC-SHA256 of ``<timestamp>.<body>`` with the tenant's webhook secret.

Headers of every delivery:

    Caseboard-Delivery    the handoff's stable id: a receiver drops one it has already taken
    Caseboard-Signature   t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>." + body>

A receiver recomputes the HMAC over the exact bytes it received and refuses a timestamp older than its
tolerance (``verify`` below, 300 s by default), so that a captured delivery cannot be replayed later.
"""

from __future__ import annotations

import hashlib
import hmac
import time

DELIVERY_HEADER = "Caseboard-Delivery"
SIGNATURE_HEADER = "Caseboard-Signature"
TOLERANCE_S = 300


def sign(secret: bytes, body: bytes, timestamp: int) -> str:
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def verify(
    secret: bytes, body: bytes, header: str, *, now: float | None = None, tolerance_s: int = TOLERANCE_S
) -> bool:
    """Whether ``header`` signs ``body`` with ``secret`` within ``tolerance_s`` of ``now``."""
    parts = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(parts["t"])
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, body, timestamp), f"t={timestamp},v1={parts.get('v1', '')}")
