"""caseboard as an MCP server: tools and resources over the HTTP API's own services (docs/agents.md).

Named ``mcp_server``, not ``mcp``, so that inside caseboard ``import mcp`` is always the SDK.
"""

from caseboard.mcp_server.http import mount_mcp
from caseboard.mcp_server.server import build_server

__all__ = ["build_server", "mount_mcp"]
