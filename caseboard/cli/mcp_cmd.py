"""``caseboard mcp``: the MCP server on standard input and output (the key from ``CASEBOARD_API_KEY``, the
role from ``CASEBOARD_ROLE`` when the key holds several). docs/agents.md."""

from __future__ import annotations

import argparse
import os
from typing import Any

from caseboard.app import App
from caseboard.keys import open_key_store
from caseboard.mcp_server.identity import Credentials
from caseboard.mcp_server.stdio import API_KEY, ROLE, serve_stdio


def register(commands: Any) -> None:
    mcp = commands.add_parser("mcp", help="serve MCP on standard input and output (key from CASEBOARD_API_KEY)")
    mcp.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="honour a contribution's 'at' (importing recorded incidents only)",
    )
    mcp.set_defaults(handler=cmd_mcp)


def cmd_mcp(app: App, args: argparse.Namespace) -> int:
    credentials = Credentials(os.environ.get(API_KEY) or None, os.environ.get(ROLE) or None)
    keys = open_key_store(str(args.database_url or app.settings.database_url), pool_size=app.settings.pool_size)
    try:
        serve_stdio(app, keys, credentials, trust_timestamps=args.trust_timestamps)
    finally:
        keys.close()
    return 0
