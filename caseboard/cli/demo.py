"""``caseboard demo``: play incident-042 into a fresh embedded ledger and tell the story version by version.

Before the story the demo stores two small synthetic artifacts of the packaged scenario data (the
payments-api-2 authentication log and change record CHG-5531) in the tenant's artifact store; after version 20
is shown, the log and change specialists cite them by exact excerpt (versions 21 and 22), and the demo prints
each cited excerpt as the model-facing view shows it, with the commands that export and verify it
(docs/evidence.md). Version 20 itself is exactly the recorded story's.
"""

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
from caseboard.cli.arguments import identifier, seconds, whole_number
from caseboard.cli.ledger_cmds import submit_line
from caseboard.cli.live_demo import cmd_live
from caseboard.cli.output import emit_document
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import MAX_COUNT, Role
from caseboard.domain.outcome import Accepted, Refused
from caseboard.evidence.cited import excerpts_for
from caseboard.projections.model_view import build_view
from caseboard.reducers import tenant_of

EVIDENCE = (
    # (file in the scenario data, media type, source system, who stores and cites it, observation cited)
    (
        "incident-042.auth-payments-api-2.log",
        "text/plain",
        "auth-logs",
        "log-specialist",
        "obs-authentication-failures",
    ),
    (
        "incident-042.change-CHG-5531.json",
        "application/json",
        "change-calendar",
        "change-specialist",
        "obs-certificate-change",
    ),
)
CITATIONS = (
    # (observation id, statement, source instance, event time, lines cited, recorded at)
    (
        "obs-authentication-failures-cited",
        "payments-api-2 refuses token-service's certificate (certificate_unknown) from 14:03:00",
        "payments-api-2",
        "2026-03-02T14:03:00Z",
        (5, 8),
        "2026-03-02T14:10:00Z",
    ),
    (
        "obs-certificate-change-cited",
        "CHG-5531 rotated the payments-api server certificate to the 2026 intermediate at 14:00:00-14:00:40",
        "cert-manager",
        "2026-03-02T14:00:00Z",
        (2, 8),
        "2026-03-02T14:10:10Z",
    ),
)
VIEW_BUDGET = 12000
"""The characters of the view the demo builds to show the cited entries (the view's own budget and cut)."""

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
    demo.add_argument(
        "--cycles",
        type=whole_number("cycles", MAX_COUNT),
        default=6,
        help="with --live: the investigation's cycle budget",
    )
    demo.add_argument("--timeout", type=seconds, default=60.0, help="with --live: seconds before giving up")
    demo.add_argument(
        "--workspace",
        type=identifier("workspace id", workspace=True),
        help="with --live: the workspace id (default incident-043)",
    )
    demo.add_argument("--model-url", help="with --live: model-backed participants at this OpenAI-compatible URL")
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
    tenant_id = json.loads(lines[0])["items"][0]["scope"]["tenant_id"]
    stored = store_evidence(app, args.scenarios, tenant_id)
    out.write(f"Playing {workspace_id}: {len(lines)} recorded contributions, with their recorded timestamps.\n\n")
    before = None
    for number, line in enumerate(lines, 1):
        if number == len(lines):
            stale_outcome = submit_line(coordinator, workspace_id, stale)
            if not isinstance(stale_outcome, Refused):
                raise CaseboardError("the stale install of proposal-008 was accepted: the scenario expects a refusal")
            since = stale_outcome.details.get("since", [])
            out.write(
                f"  --  planner-1 tries to install proposal-008 with expected_version 18: "
                f"REFUSED {stale_outcome.reason.value} "
                f"(current_version {stale_outcome.details.get('current_version')}; "
                f"since then: {'; '.join(', '.join(c['items']) for c in since)})\n"
            )
        outcome = submit_line(coordinator, workspace_id, line)
        if isinstance(outcome, Refused):
            raise CaseboardError(f"scenario line {number} was refused: {outcome.message}")
        after = app.workspaces.show(workspace_id)
        out.write(f"  v{outcome.workspace_version:<3}{_story(json.loads(line), outcome, before, after)}\n")
        before = after
    final = app.workspaces.show(workspace_id, 20)
    again = command_line(app.database_url, "show", workspace_id, "--at-version", "20", "--format", "yaml")
    shown = "the whole projection" if args.full else "the fields of the contract; the whole projection"
    out.write(f"\nThe workspace at version 20 ({shown}: {again}):\n\n")
    emit_document(final if args.full else {k: final[k] for k in CONTRACT_KEYS}, "yaml")
    cite_evidence(app, coordinator, workspace_id, stored)
    return 0


def store_evidence(app: App, folder: str | None, tenant_id: str) -> list[tuple[str, str, str]]:
    """Store the scenario's synthetic artifacts; (artifact id, who cites it, file name) for each."""
    out = sys.stdout
    beside = app.database.sqlite_path if app.database is not None else None
    out.write(f"Storing the evidence: {len(EVIDENCE)} small synthetic artifacts in {tenant_id}'s artifact store")
    out.write(f" (beside {beside}):\n" if beside is not None else ":\n")
    stored = []
    for name, media_type, source, who, observation in EVIDENCE:
        data = scenario_text(folder, name).encode("utf-8")
        meta = app.artifacts.put(tenant_id, [data], stored_by=who, media_type=media_type, source_system=source).meta
        out.write(f"  {meta.artifact_id}  {name} ({media_type}, {meta.lines} lines; the evidence of {observation})\n")
        stored.append((meta.artifact_id, who, name))
    out.write("\n")
    return stored


def cite_evidence(app: App, coordinator: Any, workspace_id: str, stored: list[tuple[str, str, str]]) -> None:
    """After version 20: the specialists cite the stored artifacts by exact excerpt; the view shows them."""
    out = sys.stdout
    out.write(
        "\nThen the log and change specialists cite the stored evidence by exact excerpt (after version 20, "
        "so the version above is the story's):\n\n"
    )
    cited = []
    for (artifact_id, who, name), (obs_id, statement, instance, event_time, (first, last), at) in zip(
        stored, CITATIONS, strict=True
    ):
        source = next(e[2] for e in EVIDENCE if e[0] == name)
        item = {
            "type": "observation",
            "id": obs_id,
            "statement": statement,
            "source": {"system": source, "instance": instance},
            "event_time": event_time,
            "event_time_quality": "verified",
            "evidence_ref": {"artifact": artifact_id, "lines": [first, last]},
        }
        body = {"workspace_id": workspace_id, "author": {"principal": who, "role": "specialist"}, "at": at}
        outcome = submit_line(coordinator, workspace_id, json.dumps({**body, "items": [item]}))
        if isinstance(outcome, Refused):
            raise CaseboardError(f"the demo's citation of {name} was refused: {outcome.message}")
        out.write(f"  v{outcome.workspace_version:<3}{who} (specialist): {obs_id} cites {name} lines {first}-{last}\n")
        cited.append(obs_id)
    state = app.workspaces.current(workspace_id)
    commits = app.ledger.read(workspace_id)
    excerpts = excerpts_for(lambda: app.artifacts, tenant_of(state), commits)
    view = build_view(state, commits, Role.SPECIALIST, VIEW_BUDGET, app.workspaces.reducer.name, excerpts=excerpts)
    out.write(f"\nAs the model-facing view of version {state.version} shows them (role specialist):\n\n")
    for entry in view.entries:
        if entry.ref in cited:
            out.write("".join(f"  {line}\n" for line in entry.text.splitlines()) + "\n")
    export = f".caseboard/demo/{workspace_id}.jsonl"
    commands = (
        command_line(app.database_url, "export", workspace_id, "--out", export, "--with-excerpts"),
        command_line(app.database_url, "verify", export),
    )
    out.write(
        "An auditor's copy, with the cited excerpts beside the commits, and its check against the recorded "
        f"hashes:\n\n  {commands[0]}\n  {commands[1]}\n"
    )


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


def _story(contribution: dict[str, Any], outcome: Accepted, before: Any, after: dict[str, Any]) -> str:
    who = f"{contribution['author']['principal']} ({contribution['author']['role']})"
    what = ", ".join(item.ref for item in outcome.decided)
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
    for item in outcome.decided:
        for selected in item.decision.get("selected", []):
            notes.append(f"{selected} selected")
        if "generation" in item.decision and item.type == "work_claim":
            notes.append(f"claim generation {item.decision['generation']}")
    pending = [w["request_id"] for w in after["pending_work"]]
    if before is None or pending != [w["request_id"] for w in before["pending_work"]]:
        notes.append(f"pending work: {', '.join(pending) or 'none'}")
    return f"{who}: {what}" + (f"  ->  {'; '.join(notes)}" if notes else "")
