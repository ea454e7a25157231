"""``caseboard`` / ``python -m caseboard``: parse, wire, run; a user's mistake is one line on stderr."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence

from caseboard.app import App, build_app
from caseboard.cli import (
    agent_cmds,
    artifacts_cmds,
    demo,
    dispatch_cmds,
    evaluate_cmds,
    handoff_cmds,
    health_cmds,
    keys_cmds,
    knowledge_cmds,
    ledger_cmds,
    mcp_cmd,
    replay_cmds,
    report_cmds,
    serve_cmds,
    specialist_cmds,
)
from caseboard.cli.reading import ledger_exists, raise_no_ledger
from caseboard.database_url import DatabaseUrl
from caseboard.domain.errors import CaseboardError, ConfigurationError, LedgerUnavailable
from caseboard.logs import configure_logging
from caseboard.replay.audit import ChainBroken
from caseboard.settings import Settings

Handler = Callable[[App, argparse.Namespace], int]
MODULES = [ledger_cmds, replay_cmds, demo, dispatch_cmds, keys_cmds, serve_cmds, mcp_cmd, artifacts_cmds, agent_cmds]
MODULES.append(report_cmds)  # report, diff, explain (docs/auditor.md)
MODULES.append(evaluate_cmds)  # evaluate: the workspace against a single agent (docs/evaluation.md)
MODULES.append(health_cmds)  # coordination health (docs/health.md)
MODULES.append(knowledge_cmds)  # the knowledge store: search, audit, rebuild (docs/knowledge.md)
MODULES.append(handoff_cmds)  # handoffs: what a person was sent, and each delivery attempt (docs/pilot.md)
MODULES.append(specialist_cmds)  # a diagnostic source as a specialist (docs/sources.md)


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
        url = args.database_url or settings.database_url
        if getattr(args, "reads", False) and not ledger_exists(url):
            raise_no_ledger(args.workspace, url)
        app = build_app(settings, database_url=args.database_url)
        try:
            if getattr(args, "locate", False):  # WORKSPACE: TENANT/ID, or an id one tenant has (docs/adr/0130)
                args.workspace = app.workspaces.locate(args.workspace)
            return handler(app, args)
        finally:
            app.close()
    except ChainBroken as error:  # not a user's mistake: what verify reports with exit status 1
        sys.stderr.write(f"caseboard: {' '.join(str(error).split())}\n")
        return 1
    except CaseboardError as error:
        message = explain(error, args.database_url or os.environ.get("CASEBOARD_DATABASE_URL", ""))
        sys.stderr.write(f"caseboard: {' '.join(message.split())}\n")  # one line, even a driver's message
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("caseboard: interrupted\n")
        return 130


MISSING_DATABASE = re.compile(r'database "([^"]+)" does not exist')


def explain(error: CaseboardError, url: str) -> str:
    """The message of an error, with what to do where a driver's words alone would mislead."""
    text = str(error)
    missing = MISSING_DATABASE.search(text)
    if isinstance(error, LedgerUnavailable) and missing:
        return missing_database(missing.group(1), url)
    return text


def missing_database(name: str, url: str) -> str:
    try:
        database: DatabaseUrl | None = DatabaseUrl.parse(url)
    except ConfigurationError:
        database = None
    if database is None or database.kind != "postgresql":  # not the URL of this database: PostgreSQL's defaults
        database = DatabaseUrl.parse("postgresql://")
    host, port, user = database.host, database.port, database.user
    return (
        f"the PostgreSQL database {name!r} does not exist on {host}:{port}; create it with "
        f"'createdb -h {host} -p {port} -U {user} {name}', or name another one in CASEBOARD_DATABASE_URL"
    )


def run() -> None:
    raise SystemExit(main(cache_loggers=True))
