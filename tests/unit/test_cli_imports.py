"""``caseboard --help`` and argument parsing import no command's dependencies (the API, MCP, agents, sources,
reports, the ledger's drivers...): a command's module is imported when that command runs. The table of
commands in ``caseboard/cli/main.py`` says what each module registers."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from caseboard.cli import main as cli

ROOT = Path(__file__).resolve().parents[2]

HEAVY = (
    "caseboard.app",
    "caseboard.api",
    "caseboard.mcp_server",
    "caseboard.agent",
    "caseboard.sources",
    "caseboard.report",
    "caseboard.coordinator",
    "caseboard.workers",
    "caseboard.evaluation",
    "caseboard.knowledge",
    "fastapi",
    "uvicorn",
    "mcp",
    "openai",
    "psycopg",
    "eventsourcing",
    "dramatiq",
    "jinja2",
    "pydantic",
)

PARSE = """
import json, sys
from caseboard.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    code = done.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def parsed(*argv: str) -> dict[str, Any]:
    run = subprocess.run(
        [sys.executable, "-c", PARSE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    out: dict[str, Any] = json.loads(run.stdout.splitlines()[-1])
    return out


def heavy(modules: list[str]) -> list[str]:
    return [m for m in modules if m in HEAVY or m.startswith(tuple(f"{h}." for h in HEAVY))]


def test_help_imports_no_command_and_none_of_their_dependencies() -> None:
    done = parsed("--help")
    assert done["code"] == 0
    assert heavy(done["modules"]) == []
    assert [m for m in done["modules"] if m.startswith("caseboard.cli.") and m != "caseboard.cli.main"] == []


def test_a_command_imports_its_own_module_only() -> None:
    done = parsed("--database-url", "sqlite:///nowhere.db", "report")  # a mistake: its arguments are missing
    assert done["code"] == 2
    assert "caseboard.cli.report_cmds" in done["modules"]
    assert not {"caseboard.cli.mcp_cmd", "caseboard.cli.serve_cmds", "caseboard.cli.agent_cmds"} & set(done["modules"])
    assert not [m for m in heavy(done["modules"]) if m.startswith(("caseboard.api", "caseboard.mcp_server", "mcp"))]


class Recorder:
    """The subparsers action, noting each command a module registers and its help."""

    def __init__(self, real: Any) -> None:
        self.real = real
        self.seen: dict[str, str | None] = {}

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        self.seen[name] = kwargs.get("help")
        parser: argparse.ArgumentParser = self.real.add_parser(name, **kwargs)
        return parser


def test_the_table_of_commands_says_what_each_module_registers() -> None:
    registered: dict[str, tuple[str, str | None]] = {}
    subparsers = argparse.ArgumentParser().add_subparsers()
    for module in dict.fromkeys(module for module, _ in cli.COMMANDS.values()):
        recorder = Recorder(subparsers)
        cli.command_module(module).register(recorder)
        registered.update({name: (module, help_line) for name, help_line in recorder.seen.items()})
    assert registered == cli.COMMANDS
    full = cli.build_parser()  # every command in full, as the lazy parser has the one it runs
    argv = ["diff", "f", "--from", "1", "--to", "2"]
    assert full.parse_args(argv).handler.__name__ == "cmd_diff"
    assert cli.build_parser(argv).parse_args(argv).handler.__name__ == "cmd_diff"


def test_serving_the_api_or_mcp_imports_no_model_client() -> None:
    """``openai`` is imported when a model-backed participant makes its client, not by every process that serves
    the API (``caseboard serve``, ``caseboard mcp``, a stdio MCP source's server): it took ~0.5 s of their start."""
    imported = "import sys, caseboard.api.server, caseboard.mcp_server.stdio; print('openai' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", imported], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "False", run.stderr
    made = "import sys; from caseboard.agent.model import OpenAIModel; OpenAIModel('http://127.0.0.1:9', 'm')"
    made += "; print('openai' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", made], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == "True", run.stderr
