"""``caseboard pilot``: the pilot loop on this machine, from an alert to a person's handoff (docs/pilot.md)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from caseboard.cli.arguments import seconds
from caseboard.domain.errors import ConfigurationError


def register(commands: Any) -> None:
    pilot = commands.add_parser(
        "pilot",
        help="the quickstart: an alert opens a workspace, checks run on real sources, a person gets the handoff",
    )
    pilot.add_argument("--dir", default=".caseboard/pilot", help="the run folder, emptied first")
    pilot.add_argument(
        "--until-handoff", action="store_true", help="stop everything and exit once the links are printed"
    )
    pilot.add_argument("--timeout", type=seconds, default=300.0, help="seconds the loop may take (default 300)")
    pilot.add_argument(
        "--base-port", type=int, default=0, help="the first of the ports it listens on (default: free ports)"
    )
    pilot.add_argument(
        "--model-url", help="an OpenAI-compatible endpoint (default: $CASEBOARD_MODEL_URL, else the model twin)"
    )
    pilot.set_defaults(handler=cmd_pilot, no_app=True)


def cmd_pilot(_: None, args: argparse.Namespace) -> int:
    from caseboard.pilot.run import Options, run

    if not 0 <= args.base_port <= 65_500:
        raise ConfigurationError(f"--base-port must be 0 (free ports) or between 1 and 65500, not {args.base_port}")
    model_url = args.model_url or os.environ.get("CASEBOARD_MODEL_URL") or None
    options = Options(Path(args.dir), args.until_handoff, args.timeout, args.base_port, model_url)
    return run(options)
