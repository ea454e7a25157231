"""``caseboard`` / ``python -m caseboard``: parse, wire, run; a user's mistake is one line on stderr."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from caseboard.app import App, build_app
from caseboard.cli import demo, dispatch_cmds, keys_cmds, ledger_cmds, replay_cmds, serve_cmds
from caseboard.domain.errors import CaseboardError
from caseboard.logs import configure_logging
from caseboard.settings import Settings

Handler = Callable[[App, argparse.Namespace], int]
MODULES = [ledger_cmds, replay_cmds, demo, dispatch_cmds, keys_cmds, serve_cmds]


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"caseboard: {message} (see --help)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="caseboard", description="Event-sourced incident investigation workspaces.")
    parser.add_argument("--database-url", help="ledger URL (default: $CASEBOARD_DATABASE_URL or the embedded SQLite)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for module in MODULES:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None, *, cache_loggers: bool = False) -> int:
    """The command line. ``cache_loggers`` when this process runs nothing else (``run``, the entry point):
    see ``configure_logging``."""
    args = build_parser().parse_args(argv)
    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, settings.log_format, cache=cache_loggers)
        handler: Handler = args.handler
        if getattr(args, "no_app", False):
            return handler(None, args)  # type: ignore[arg-type]
        app = build_app(settings, database_url=args.database_url)
        try:
            return handler(app, args)
        finally:
            app.close()
    except CaseboardError as error:
        sys.stderr.write(f"caseboard: {' '.join(str(error).split())}\n")  # one line, even a driver's message
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("caseboard: interrupted\n")
        return 130


def run() -> None:
    raise SystemExit(main(cache_loggers=True))
