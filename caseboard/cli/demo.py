"""``caseboard demo``: play incident-042 into a fresh embedded ledger and tell the story version by version."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any

from caseboard.app import App
from caseboard.cli.ledger_cmds import submit_line
from caseboard.cli.live_demo import cmd_live
from caseboard.cli.output import emit_document
from caseboard.domain.errors import CaseboardError

CONTRACT_KEYS = (
    "schema_version",
    "reducer_version",
    "workspace_id",
    "workspace_version",
    "scope",
    "goal",
    "status",
    "selected_items",
    "proposals",
    "pending_work",
    "runtime_limits",
    "execution_mode",
)


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="play the incident-042 scenario and narrate it")
    demo.add_argument("--scenarios", help="folder holding incident-042.jsonl (default: the packaged copy)")
    demo.add_argument("--full", action="store_true", help="print the whole projection, not only its contract keys")
    demo.add_argument("--live", action="store_true", help="the live loop: dispatcher, controller, workers")
    demo.add_argument("--cycles", type=int, default=6, help="with --live: the investigation's cycle budget")
    demo.add_argument("--timeout", type=float, default=60.0, help="with --live: seconds before giving up")
    demo.add_argument("--workspace", help="with --live: the workspace id (default incident-043)")
    demo.set_defaults(handler=cmd_demo)


def scenario_text(folder: str | None, name: str) -> str:
    if folder:
        path = Path(folder) / name
        if not path.is_file():
            raise CaseboardError(f"scenario file {path} does not exist")
        return path.read_text(encoding="utf-8")
    return resources.files("caseboard.scenarios").joinpath(name).read_text(encoding="utf-8")


def cmd_demo(app: App, args: argparse.Namespace) -> int:
    if args.live:
        return cmd_live(app, args)
    lines = [line for line in scenario_text(args.scenarios, "incident-042.jsonl").splitlines() if line.strip()]
    stale = scenario_text(args.scenarios, "incident-042.stale-install.json")
    workspace_id = json.loads(lines[0])["workspace_id"]
    if app.ledger.head(workspace_id):
        raise CaseboardError(f"{workspace_id} already exists in this ledger; the demo needs a fresh one")
    coordinator = app.coordinator(trust_timestamps=True)
    out = sys.stdout
    out.write(f"Playing {workspace_id}: {len(lines)} recorded contributions, with their recorded timestamps.\n\n")
    before = None
    for number, line in enumerate(lines, 1):
        if number == len(lines):
            outcome = submit_line(coordinator, workspace_id, stale)
            out.write(
                f"  --  planner-1 tries to install proposal-008 with expected_version 18: "
                f"REFUSED {outcome['reason']} (current_version {outcome.get('current_version')}; "
                f"since then: {'; '.join(', '.join(c['items']) for c in outcome.get('since', []))})\n"
            )
        outcome = submit_line(coordinator, workspace_id, line)
        if not outcome["ok"]:
            raise CaseboardError(f"scenario line {number} was refused: {outcome['message']}")
        after = app.workspaces.show(workspace_id)
        out.write(f"  v{outcome['workspace_version']:<3}{_story(json.loads(line), outcome, before, after)}\n")
        before = after
    final = app.workspaces.show(workspace_id, 20)
    again = command_line(app.database_url, "show", workspace_id, "--at-version", "20", "--format", "yaml")
    out.write(f"\nThe workspace at version 20 ({again}):\n\n")
    emit_document(final if args.full else {k: final[k] for k in CONTRACT_KEYS}, "yaml")
    return 0


def command_line(database_url: str, *args: str, argv0: str | None = None, cwd: Path | None = None) -> str:
    """A caseboard command that works when pasted into a shell in the current folder: this very program (by
    name when that is what ``PATH`` finds, else by its path) on this very ledger."""
    return " ".join(shlex.quote(part) for part in [*program(argv0, cwd), "--database-url", database_url, *args])


def program(argv0: str | None = None, cwd: Path | None = None) -> list[str]:
    """How to run this program again: ``caseboard`` when ``PATH`` finds this one, ``.venv/bin/caseboard``
    (relative to ``cwd`` where it lies below it), or ``python -m caseboard``."""
    argv0 = argv0 if argv0 is not None else sys.argv[0]
    here = (cwd or Path.cwd()).resolve()
    path = Path(argv0)
    if path.name != "caseboard" or not (path.is_file() or shutil.which(argv0)):
        return [_relative(Path(sys.executable), here), "-m", "caseboard"]
    found = shutil.which("caseboard")
    if found and Path(found).resolve() == Path(shutil.which(argv0) or argv0).resolve():
        return ["caseboard"]
    return [_relative(Path(shutil.which(argv0) or argv0), here)]


def _relative(path: Path, here: Path) -> str:
    absolute = path if path.is_absolute() else here / path
    try:
        relative = absolute.relative_to(here)
    except ValueError:
        return str(absolute)
    return str(relative) if relative.parts and relative.parts[0] != ".." else str(absolute)


def _story(contribution: dict[str, Any], outcome: dict[str, Any], before: Any, after: dict[str, Any]) -> str:
    who = f"{contribution['author']['principal']} ({contribution['author']['role']})"
    what = ", ".join(item["ref"] for item in outcome["items"])
    notes = []
    old_hyps = {h["id"]: h["status"] for h in before["hypotheses"]} if before else {}
    for hyp in after["hypotheses"]:
        if old_hyps.get(hyp["id"]) != hyp["status"]:
            notes.append(f"hypothesis {hyp['id']} is now {hyp['status']}")
    old_props = {p["id"]: p["status"] for p in before["proposals"]} if before else {}
    for prop in after["proposals"]:
        if old_props.get(prop["id"]) != prop["status"]:
            notes.append(
                f"proposal {prop['id']} (basis v{prop['based_on_workspace_version']}) is recorded as {prop['status']}"
            )
    for item in outcome["items"]:
        for selected in item.get("selected", []):
            notes.append(f"{selected} selected")
        if "generation" in item and item["type"] == "work_claim":
            notes.append(f"claim generation {item['generation']}")
    pending = [w["request_id"] for w in after["pending_work"]]
    if before is None or pending != [w["request_id"] for w in before["pending_work"]]:
        notes.append(f"pending work: {', '.join(pending) or 'none'}")
    return f"{who}: {what}" + (f"  ->  {'; '.join(notes)}" if notes else "")
