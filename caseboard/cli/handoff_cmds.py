"""``caseboard handoffs WORKSPACE``: each handoff of a workspace and every attempt to deliver it (docs/pilot.md)."""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from caseboard.app import App
from caseboard.domain.errors import UnknownWorkspace


def register(commands: Any) -> None:
    listing = commands.add_parser("handoffs", help="a workspace's handoffs to people, and every delivery attempt")
    listing.add_argument("workspace", help="TENANT/ID, or an id one tenant has")
    listing.add_argument("--format", choices=["text", "json"], default="text")
    listing.set_defaults(handler=cmd_handoffs, reads=True, locate=True)


def cmd_handoffs(app: App, args: argparse.Namespace) -> int:
    key = args.workspace
    if app.ledger.head(key) == 0:
        raise UnknownWorkspace(key)
    found = app.handoffs(key)
    if args.format == "json":
        for entry in found:
            sys.stdout.write(json.dumps(entry) + "\n")
        return 0
    if not found:
        sys.stdout.write("no handoff: this workspace has not been handed to a person\n")
    for entry in found:
        sys.stdout.write(f"{entry['handoff_id']}  {entry['trigger']}  {entry['state']}\n")
        for attempt in entry["attempts"]:
            at = datetime.fromtimestamp(attempt["at"], UTC).isoformat(timespec="seconds")
            sys.stdout.write(
                f"  attempt {attempt['attempt']} to {attempt['webhook']} at {at}: {attempt['outcome']} "
                f"({attempt['detail']})\n"
            )
    return 0
