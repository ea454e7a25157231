"""``report``, ``diff``, ``explain``: what an auditor looks at, derived by replay (docs/auditor.md).

A path that exists is a recorded incident file; anything else is a workspace of the configured ledger (as
for ``replay``). ``report`` writes one self-contained HTML page, a broken chain included (it says so at the
top, and exits 1); ``diff`` and ``explain`` fold only a verified chain, as ``replay`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from caseboard.cli.output import out_file
from caseboard.cli.replay_cmds import REDUCER_HELP, _workspace_app, _workspace_or_missing_file
from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError, UnknownWorkspace
from caseboard.reducers import get_reducer
from caseboard.replay import excerpts
from caseboard.replay.audit import checked_file_commits, checked_ledger_commits
from caseboard.replay.history import check_versions, diff, explain, history
from caseboard.report import model, page
from caseboard.report.attached import Holder
from caseboard.report.source import file_record, ledger_record


def register(commands: Any) -> None:
    rep = commands.add_parser("report", help="one self-contained HTML page of a recorded investigation")
    rep.add_argument("target", metavar="FILE_OR_WORKSPACE")
    rep.add_argument("--out", required=True, metavar="FILE", help="the HTML file to write")
    rep.add_argument("--at-version", type=int, metavar="N", help="show version N (default: the last)")
    rep.add_argument("--reducer", metavar="V", help=REDUCER_HELP)
    rep.set_defaults(handler=cmd_report, no_app=True)

    dif = commands.add_parser("diff", help="what changed between two versions, and why each status changed")
    dif.add_argument("target", metavar="WORKSPACE_OR_FILE")
    dif.add_argument("--from", dest="start", type=int, required=True, metavar="A")
    dif.add_argument("--to", dest="end", type=int, required=True, metavar="B")
    dif.add_argument("--reducer", metavar="V", help=REDUCER_HELP)
    dif.add_argument("--format", choices=["text", "json"], default="text")
    dif.set_defaults(handler=cmd_diff, no_app=True)

    exp = commands.add_parser("explain", help="the history of one item's status, with the commits that changed it")
    exp.add_argument("target", metavar="WORKSPACE_OR_FILE")
    exp.add_argument("id", metavar="ID")
    exp.add_argument("--reducer", metavar="V", help=REDUCER_HELP)
    exp.add_argument("--format", choices=["text", "json"], default="text")
    exp.set_defaults(handler=cmd_explain, no_app=True)


def cmd_report(_: None, args: argparse.Namespace) -> int:
    reducer = get_reducer(args.reducer)
    path = Path(args.target)
    if path.exists():
        if path.is_dir():
            raise CaseboardError(f"{path} is a directory; report takes one recorded incident file")
        sidecar = excerpts.sidecar_of(path)
        holder = Holder(sidecar=excerpts.read_sidecar(sidecar) if sidecar.is_file() else None)
        report = model.build_from(file_record(path), reducer, args.at_version, holder)
    else:
        with _workspace_app(args) as app:
            key = _workspace_or_missing_file(app, args.target)
            if app.ledger.head(key) == 0:
                raise UnknownWorkspace(args.target)
            report = model.build_from(ledger_record(app.ledger, key), reducer, args.at_version, Holder(app.artifacts))
    out = Path(args.out)
    try:
        with out_file(out) as handle:
            handle.write(page.render(report))
    except OSError as error:
        raise CaseboardError(f"cannot write {out}: {error.strerror or error}") from None
    state = "intact" if report.intact else f"NOT INTACT at version {report.chain['first_bad_version']}"
    mismatched = report.mismatched
    if mismatched:
        state += f"; altered since recorded: {', '.join(mismatched)}"
    sys.stderr.write(f"caseboard: wrote {out}: {report.workspace_id} at version {report.version}, chain {state}\n")
    return 0 if report.intact and not mismatched else 1  # the page is written either way; fails as verify does


def _commits(args: argparse.Namespace, upto: int | None = None) -> Iterator[Commit]:
    path = Path(args.target)
    if path.exists():
        if path.is_dir():
            raise CaseboardError(f"{path} is a directory; give one recorded incident file")
        yield from checked_file_commits(path, upto)
        return
    with _workspace_app(args) as app:
        key = _workspace_or_missing_file(app, args.target)
        if app.ledger.head(key) == 0:
            raise UnknownWorkspace(args.target)
        yield from checked_ledger_commits(app.ledger, key, upto)


def cmd_diff(_: None, args: argparse.Namespace) -> int:
    reducer = get_reducer(args.reducer)
    if args.start < 1 or args.end < 1:
        raise CaseboardError("--from and --to: versions start at 1")
    if args.start > args.end:
        raise CaseboardError(f"--from {args.start} is after --to {args.end}: give the earlier version first")
    walked = history(_commits(args, args.end), reducer, upto=args.end, keep={args.start, args.end}, source=args.target)
    check_versions(walked.head, from_=args.start, to=args.end)
    result = diff(walked.steps, walked.facets_at, args.start, args.end)
    result = {"source": args.target, "reducer": reducer.name, **result}
    if args.format == "json":
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(diff_text(result))
    return 0


def cmd_explain(_: None, args: argparse.Namespace) -> int:
    reducer = get_reducer(args.reducer)
    walked = history(_commits(args), reducer, source=args.target)
    result = {"source": args.target, "reducer": reducer.name, **explain(walked.steps, args.id)}
    if args.format == "json":
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(explain_text(result))
    return 0


def _value(value: Any) -> str:
    return "-" if value is None else json.dumps(value, ensure_ascii=False)


def _cause(cause: dict[str, Any]) -> str:
    text = f"version {cause['version']} ({cause['author']}): {cause['change']}"
    if "reference" in cause:
        text += f" [{cause['kind']} change on {cause['reference']}: {cause['via']}]"
    return text


def _status_lines(changes: list[dict[str, Any]], indent: str = "  ") -> list[str]:
    lines = []
    for sc in changes:
        became = f"{sc['before']} -> {sc['after']}" if sc["before"] is not None else f"recorded {sc['after']}"
        lines.append(f"{indent}v{sc['version']} {sc['kind']} {sc['item']}: {became}")
        lines.extend(f"{indent}    because {_cause(cause)}" for cause in sc["causes"])
    return lines


def diff_text(result: dict[str, Any]) -> str:
    lines = [f"{result['source']}: version {result['from']} -> {result['to']} ({result['reducer']})", "commits:"]
    for commit in result["commits"]:
        lines.append(f"  v{commit['version']} {commit['at']} {commit['author']} ({commit['role']})")
        lines.extend(f"      {item}" for item in commit["items"])
        lines.extend(f"      decided {json.dumps(d, ensure_ascii=False)}" for d in commit["decisions"])
    lines.append("changes:")
    lines.extend(f"  {c['path']}: {_value(c['before'])} -> {_value(c['after'])}" for c in result["changes"])
    lines.append("status changes:")
    lines.extend(_status_lines(result["status_changes"]))
    return "\n".join(lines) + "\n"


def explain_text(result: dict[str, Any]) -> str:
    kind = result["kind"] or "item"
    lines = [f"{result['id']} ({kind}) in {result['source']} ({result['reducer']}): {result['status'] or '-'}"]
    lines.append("statuses:")
    lines.extend(_status_lines(result["statuses"]))
    lines.append("commits:")
    for commit in result["commits"]:
        lines.append(f"  v{commit['version']} {commit['at']} {commit['author']}")
        lines.extend(f"      {item}" for item in commit["items"])
        lines.extend(f"      {c['path']}: {_value(c['before'])} -> {_value(c['after'])}" for c in commit["changes"])
    return "\n".join(lines) + "\n"
