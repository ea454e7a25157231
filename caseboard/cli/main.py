"""``caseboard`` / ``python -m caseboard``: parse, wire, run; a user's mistake is one line on stderr."""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import re
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from caseboard.app import App
    from caseboard.domain.errors import CaseboardError

Handler = Callable[["App", argparse.Namespace], int]

COMMANDS: dict[str, tuple[str, str]] = {
    # name: (the module that registers and runs it, its line in --help); imported only when the command runs,
    # so that parsing and --help import nothing heavy (tests/unit/test_cli_imports.py keeps this in step)
    "submit": ("ledger_cmds", "submit contributions, one JSON object per line"),
    "show": ("ledger_cmds", "the projection of a workspace, at its head or any past version"),
    "log": ("ledger_cmds", "the ledger, one JSON object per commit"),
    "timeline": ("ledger_cmds", "observations in source event-time order"),
    "export": ("replay_cmds", "a workspace's ledger as a recorded incident (JSONL, hash chained)"),
    "import": ("replay_cmds", "load a recorded incident after verifying its chain"),
    "verify": ("replay_cmds", "re-compute the hash chain of a workspace or a recorded incident file"),
    "replay": ("replay_cmds", "the projection at version N, rebuilt from the record alone"),
    "compare": ("replay_cmds", "where two reducers disagree over recorded incidents (exit 1 if any)"),
    "demo": ("demo", "play the incident-042 scenario and narrate it"),
    "dispatch": ("dispatch_cmds", "follow the ledger's outbox and hand notifications to dramatiq"),
    "worker": (
        "dispatch_cmds",
        "run the consumers, the controller and the lease sweeper (participants only with --participant)",
    ),
    "outbox": ("dispatch_cmds", "the outbox and its dispatcher"),
    "keys": ("keys_cmds", "API keys for the HTTP API (create, list, revoke)"),
    "serve": ("serve_cmds", "serve the HTTP API (OpenAPI at /docs)"),
    "mcp": ("mcp_cmd", "serve MCP on standard input and output (key from CASEBOARD_API_KEY)"),
    "artifacts": ("artifacts_cmds", "stored evidence: put, get, list, excerpt, remove"),
    "agent": ("agent_cmds", "run a model-backed participant for one role (docs/participants.md)"),
    "judgments": ("agent_cmds", "every recorded model call of a workspace"),
}
COMMANDS["report"] = ("report_cmds", "one self-contained HTML page of a recorded investigation")  # docs/auditor.md
COMMANDS["diff"] = ("report_cmds", "what changed between two versions, and why each status changed")
COMMANDS["explain"] = ("report_cmds", "the history of one item's status, with the commits that changed it")
COMMANDS["evaluate"] = (  # the workspace against a single agent (docs/evaluation.md)
    "evaluate_cmds",
    "run evaluation incidents through the workspace and a single bounded agent; report",
)
COMMANDS["health"] = (  # docs/health.md
    "health_cmds",
    "coordination health: invalidations, stale evidence, outstanding work, budgets, outcomes",
)
COMMANDS["knowledge"] = ("knowledge_cmds", "the store of promoted findings: search, audit, rebuild")  # knowledge.md
COMMANDS["handoffs"] = ("handoff_cmds", "a workspace's handoffs to people, and every delivery attempt")  # docs/pilot.md
COMMANDS["pilot"] = (  # the quickstart (docs/pilot.md)
    "pilot_cmd",
    "the quickstart: an alert opens a workspace, checks run on real sources, a person gets the handoff",
)
COMMANDS["specialist"] = (  # a diagnostic source as a specialist (docs/sources.md)
    "specialist_cmds",
    "answer work requests from a read-only diagnostic source (docs/sources.md)",
)


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"caseboard.cli.{name}")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"caseboard: {message} (see --help)\n")
        raise SystemExit(2)


def named_command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names: its first word that is neither an option nor ``--database-url``'s value."""
    words = iter(argv)
    for word in words:
        if word == "--database-url":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser. Given ``argv``, only the module of the command it names is imported (and its commands
    registered in full); every other command is listed by name and help alone, so ``--help`` and a mistake in
    the arguments import no command's dependencies. Without ``argv``, every command in full."""
    parser = Parser(prog="caseboard", description="Event-sourced incident investigation workspaces.")
    parser.add_argument("--database-url", help="ledger URL (default: $CASEBOARD_DATABASE_URL or the embedded SQLite)")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    named = None if argv is None else named_command(argv)
    wanted = {module for module, _ in COMMANDS.values()} if argv is None else set()
    if named in COMMANDS:
        wanted.add(COMMANDS[named][0])
    for name, (module, help_line) in COMMANDS.items():
        if module in wanted:
            wanted.discard(module)
            command_module(module).register(commands)
        elif name not in commands.choices:
            commands.add_parser(name, help=help_line)
    return parser


def main(argv: Sequence[str] | None = None, *, cache_loggers: bool = False) -> int:
    """The command line. ``cache_loggers`` when this process runs nothing else (``run``, the entry point):
    see ``configure_logging``."""
    words = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(words).parse_args(words)
    from caseboard.app import build_app
    from caseboard.cli.reading import ledger_exists, raise_no_ledger
    from caseboard.domain.errors import CaseboardError
    from caseboard.logs import configure_logging
    from caseboard.replay.audit import ChainBroken
    from caseboard.settings import Settings

    try:
        settings = Settings.from_env()
        configure_logging(settings.log_level, settings.log_format, cache=cache_loggers)
        if getattr(args, "reducer", ()) is None:  # a command's --reducer not given: the current one, a setting
            args.reducer = settings.reducer
        handler: Handler = args.handler
        if getattr(args, "no_app", False):
            status = handler(None, args)  # type: ignore[arg-type]
            sys.stdout.flush()
            return status
        url = args.database_url or settings.database_url
        if getattr(args, "reads", False) and not ledger_exists(url):
            raise_no_ledger(args.workspace, url)
        app = build_app(settings, database_url=args.database_url)
        try:
            if getattr(args, "locate", False):  # WORKSPACE: TENANT/ID, or an id one tenant has (docs/adr/0130)
                args.workspace = app.workspaces.locate(args.workspace)
            status = handler(app, args)
            sys.stdout.flush()  # a write that fails fails here, where it is reported, not at the exit
            return status
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
    except OSError as error:
        if error.errno not in WRITE_FAILURES:
            raise
        where = "its output" if error.filename is None else error.filename
        sys.stderr.write(f"caseboard: cannot write {where}: {error.strerror}; what was written is incomplete\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("caseboard: interrupted\n")
        return 130


WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""A write that the disk refused: the output is incomplete, which the user is told in one line."""
MISSING_DATABASE = re.compile(r'database "([^"]+)" does not exist')


def explain(error: CaseboardError, url: str) -> str:
    """The message of an error, with what to do where a driver's words alone would mislead."""
    from caseboard.domain.errors import LedgerUnavailable

    text = str(error)
    missing = MISSING_DATABASE.search(text)
    if isinstance(error, LedgerUnavailable) and missing:
        return missing_database(missing.group(1), url)
    return text


def missing_database(name: str, url: str) -> str:
    from caseboard.database_url import DatabaseUrl
    from caseboard.domain.errors import ConfigurationError

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
