"""The MCP server on standard input and output, for agents that launch their tools as processes.

The key and role are the process's (``caseboard mcp`` reads ``CASEBOARD_API_KEY`` and ``CASEBOARD_ROLE`` once
and passes them here); the key is checked before the server starts, so a missing, unknown or revoked key is
the caller's mistake, and it is checked again at every call (within the key cache's second), as over HTTP.
Standard output carries only the protocol; logs go to standard error.
"""

from __future__ import annotations

import anyio
from mcp.server.stdio import stdio_server

from caseboard.api.auth import authorize
from caseboard.api.errors import ApiError
from caseboard.api.services import KeyCache, Services
from caseboard.app import App
from caseboard.domain.errors import ConfigurationError
from caseboard.keys import KeyStore
from caseboard.mcp_server.identity import Credentials
from caseboard.mcp_server.server import build_server

API_KEY = "CASEBOARD_API_KEY"
ROLE = "CASEBOARD_ROLE"


def check(keys: KeyStore, credentials: Credentials) -> None:
    """``ConfigurationError`` (one line for the command line) unless the key is active and may act in the role."""
    if not credentials.token:
        raise ConfigurationError(f"{API_KEY} is not set: put an API key from 'caseboard keys create' in it")
    key = keys.authenticate(credentials.token)
    if key is None:
        raise ConfigurationError(f"the API key in {API_KEY} is unknown or revoked")
    try:
        authorize(key, credentials.role)
    except ApiError as error:
        message = str(error).replace("X-Caseboard-Role", ROLE)
        raise ConfigurationError(message) from None


def serve_stdio(app: App, keys: KeyStore, credentials: Credentials, *, trust_timestamps: bool = False) -> None:
    check(keys, credentials)
    services = Services(app=app, keys=keys, trust_timestamps=trust_timestamps, key_cache=KeyCache(1.0))
    server = build_server(services, credentials=credentials)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(run)
