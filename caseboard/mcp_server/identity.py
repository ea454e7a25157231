"""Who calls a tool: the API key and role of the HTTP request, or those the stdio server was started with.

Over streamable HTTP every request carries ``Authorization: Bearer <key>`` (and ``X-Caseboard-Role`` when
the key holds several roles); over stdio the key is ``CASEBOARD_API_KEY`` and the role ``CASEBOARD_ROLE``,
read once by ``caseboard mcp``. Either way the key is authenticated as the HTTP API does it (the same store,
the same cache, so a revocation takes effect within ``key_cache_s``) and the role chosen by ``authorize``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import anyio

from caseboard.api.auth import ROLE_HEADER, Caller, authorize
from caseboard.api.errors import ApiError
from caseboard.api.services import Services
from caseboard.keys import ApiKey


@dataclass(frozen=True)
class Credentials:
    """A token and the role asked for (None: the key's only role)."""

    token: str | None
    role: str | None


def from_headers(headers: Mapping[str, str]) -> Credentials:
    scheme, _, token = headers.get("authorization", "").partition(" ")
    token = token.strip()
    return Credentials(token if scheme.lower() == "bearer" and token else None, headers.get(ROLE_HEADER))


async def authenticate(svc: Services, token: str | None) -> ApiKey:
    """The active key a token names, or ``ApiError`` ``unauthenticated``."""
    if not token:
        raise ApiError("unauthenticated", "an API key is required: Authorization: Bearer <token>")
    key = svc.key_cache.get(token)
    if key is None:
        key = await anyio.to_thread.run_sync(svc.keys.authenticate, token)
        if key is None:
            raise ApiError("unauthenticated", "the API key is unknown or revoked")
        svc.key_cache.put(token, key)
    return key


async def caller(svc: Services, credentials: Credentials) -> Caller:
    return authorize(await authenticate(svc, credentials.token), credentials.role)
