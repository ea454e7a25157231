"""A small MCP server over stdio for the MCP source's tests: a read-only tool, a tool that changes something
(not annotated read-only), one that errs and one that never answers. Every tool call it receives is appended to
the file named by its first argument, so a test knows what reached it; given a second, its process id is appended
to that file when it starts, so a test knows how many were started."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.types import ToolAnnotations

LOG = Path(sys.argv[1])
if len(sys.argv) > 2:
    with Path(sys.argv[2]).open("a") as starts:
        starts.write(f"{os.getpid()}\n")
server = MCPServer("incident-tools")


def received(name: str) -> None:
    with LOG.open("a") as log:
        log.write(name + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def certificate_inventory(service: str) -> str:
    """The certificates recorded for a service."""
    received("certificate_inventory")
    return f"{service}: CHG-5531 rotated the leaf certificate at 2026-03-02T14:00:00Z"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def restart_service(service: str) -> str:
    """Restarts a service."""
    received("restart_service")
    return f"{service} restarted"


@server.tool()
def rotate_certificate(service: str) -> str:
    """Rotates a certificate (no annotations at all)."""
    received("rotate_certificate")
    return f"{service} rotated"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def broken(service: str) -> str:
    """Always fails."""
    received("broken")
    raise ValueError(f"no inventory for {service}")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def stall(service: str) -> str:
    """Never answers in time."""
    received("stall")
    time.sleep(600)
    return service


if __name__ == "__main__":
    server.run("stdio")
