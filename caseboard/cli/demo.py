"""``caseboard demo``: play incident-042 into a fresh embedded ledger and tell the story version by version."""

from __future__ import annotations

import argparse
import json
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
    out.write("\nThe workspace at version 20 (caseboard show incident-042 --at-version 20 --format yaml):\n\n")
    emit_document(final if args.full else {k: final[k] for k in CONTRACT_KEYS}, "yaml")
    return 0


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
