"""``submit``, ``show``, ``log`` and ``timeline``: writing to and reading from one workspace's ledger."""

from __future__ import annotations

import argparse
import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import structlog

from caseboard.app import App
from caseboard.cli.output import emit_document, emit_line
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.coordinator.parse import MAX_BODY_BYTES
from caseboard.domain.errors import CaseboardError, Reason, Refusal, UnknownWorkspace
from caseboard.domain.outcome import Outcome, Refused
from caseboard.domain.workspace_key import bare, tenant_part
from caseboard.projections.freshness import stale_now_line
from caseboard.projections.timeline import timeline
from caseboard.reducers import GROUP, RELEASED
from caseboard.replay.audit import check_ledger

logger = structlog.get_logger("caseboard.cli")


def register(commands: Any) -> None:
    submit = commands.add_parser("submit", help="submit contributions, one JSON object per line")
    submit.add_argument("workspace", help="ID, or TENANT/ID for a workspace of that tenant's own namespace")
    submit.add_argument("--file", required=True, help="JSONL file of contributions ('-' for standard input)")
    submit.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="honour each contribution's 'at' (importing recorded incidents, running scenarios)",
    )
    submit.set_defaults(handler=cmd_submit)

    show = commands.add_parser("show", help="the projection of a workspace, at its head or any past version")
    show.add_argument("workspace")
    show.add_argument("--at-version", type=int, metavar="N")
    show.add_argument(
        "--reducer", metavar="V", help=f"a registered reducer's name ({GROUP} entry points: {', '.join(RELEASED)}, ...)"
    )
    show.add_argument("--format", choices=["json", "yaml"], default="json")
    show.set_defaults(handler=cmd_show, reads=True, locate=True)

    log = commands.add_parser("log", help="the ledger, one JSON object per commit")
    log.add_argument("workspace")
    log.add_argument("--after", type=int, default=0, metavar="N", help="only commits after version N")
    log.set_defaults(handler=cmd_log, reads=True, locate=True)

    timeline = commands.add_parser("timeline", help="observations in source event-time order")
    timeline.add_argument("workspace")
    timeline.add_argument("--at-version", type=int, metavar="N")
    timeline.set_defaults(handler=cmd_timeline, reads=True, locate=True)


@contextmanager
def open_input(name: str) -> Iterator[IO[str]]:
    """The lines of a file or of stdin; bytes that are not UTF-8 are kept so that their line is refused."""
    if name == "-":
        if sys.stdin.isatty():  # a person at a terminal, who would otherwise see nothing happen
            sys.stderr.write("caseboard: reading contributions from the terminal, a JSON object a line; Ctrl-D ends\n")
        stream = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape")
        try:
            yield stream
        finally:
            stream.detach()
        return
    path = Path(name)
    if not path.exists():
        raise CaseboardError(f"cannot read {name}: no such file")
    try:  # a folder: "Is a directory"
        handle = path.open(encoding="utf-8", errors="surrogateescape")
    except OSError as error:
        raise CaseboardError(f"cannot read {name}: {error.strerror}") from None
    with handle:
        yield handle


def cmd_submit(app: App, args: argparse.Namespace) -> int:
    coordinator = app.coordinator(trust_timestamps=args.trust_timestamps)
    all_accepted = True
    with open_input(args.file) as lines:
        for number, line in enumerate(bounded(lines, MAX_BODY_BYTES), 1):
            if line is not None and not line.strip():
                continue
            outcome = over_the_limit(args.workspace) if line is None else submit_line(coordinator, args.workspace, line)
            body = outcome.as_json()
            if isinstance(outcome, Refused):
                body["line"] = number
                all_accepted = False
            emit_line(body)
    return 0 if all_accepted else 1


def bounded(lines: IO[str], limit: int) -> Iterator[str | None]:
    """Each line of ``lines``, or None for one over ``limit`` bytes, which is read no further than that: the
    rest of it is skipped, so a file of one huge line costs no more memory than one of a body's size."""
    while line := lines.readline(limit + 1):
        if len(line) > limit and not line.endswith("\n"):
            while (rest := lines.readline(limit)) and not rest.endswith("\n"):
                pass
            yield None
        elif not line.isascii() and len(line.rstrip("\n").encode("utf-8", "surrogateescape")) > limit:
            yield None
        else:
            yield line


def over_the_limit(workspace: str) -> Refused:
    """The refusal of a line over ``MAX_BODY_BYTES``, in the words of the HTTP API's 413."""
    message = f"the line is over the limit of {MAX_BODY_BYTES} bytes: large material lives behind evidence_ref"
    return _refused_here(bare(workspace), Refusal(Reason.INVALID, message, field="$"))


def submit_line(coordinator: Coordinator, workspace: str, line: str) -> Outcome:
    """The outcome of one line of ``caseboard submit``: a contribution, refused before the coordinator when it
    is not UTF-8, not a contribution, or names another workspace. ``workspace``: an id (the operator's
    namespace, or the one tenant's that has it: ``Coordinator.key_of``), or ``TENANT/ID``, a workspace of
    that tenant's namespace, which a line opens or contributes to (docs/adr/0130)."""
    key = workspace if tenant_part(workspace) is not None else None
    workspace_id = bare(workspace)
    if not line.isascii() and not _is_utf8(line):
        return _refused_here(
            workspace_id, Refusal(Reason.INVALID, "not UTF-8 text: each line is one JSON object in UTF-8", field="$")
        )
    try:
        contribution = parse_contribution(_with_workspace(line, workspace_id))
    except Refusal as refusal:  # parse_contribution has logged it
        return refusal.outcome()
    if contribution.workspace_id != workspace_id:
        return _refused_here(
            workspace_id,
            Refusal(
                Reason.INVALID,
                f"workspace_id: the contribution names {contribution.workspace_id!r} "
                f"but is submitted to {workspace_id!r}",
                field="workspace_id",
            ),
        )
    return coordinator.submit(contribution, key)


def _refused_here(workspace_id: str, refusal: Refusal) -> Refused:
    """A line refused before parsing or routing is logged as the coordinator logs its refusals."""
    logger.info("contribution_refused", workspace_id=workspace_id, reason=refusal.reason.value, field=refusal.field)
    return refusal.outcome()


def _is_utf8(line: str) -> bool:
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _with_workspace(line: str, workspace_id: str) -> str | dict[str, Any]:
    """A line without a workspace_id goes to the workspace named on the command line."""
    import json

    try:
        data = json.loads(line)
    except ValueError:
        return line
    if isinstance(data, dict) and "workspace_id" not in data:
        data["workspace_id"] = workspace_id
    return data if isinstance(data, dict) else line


def checked_show(app: App, workspace_id: str, version: int | None = None, reducer: str | None = None) -> dict[str, Any]:
    """The projection, once the chain under it is checked: an altered commit is never shown as sound
    (``ChainBroken``, docs/adr/0050; ``caseboard log`` prints what the ledger holds)."""
    projection = app.workspaces.show(workspace_id, version, reducer)
    check_ledger(app.ledger, workspace_id, projection["workspace_version"], "nothing was shown")
    return projection


def cmd_show(app: App, args: argparse.Namespace) -> int:
    document = checked_show(app, args.workspace, args.at_version, args.reducer)
    emit_document(document, args.format)
    stale_now = stale_now_line(document, datetime.now(UTC))  # evidence expired since (ADR 0060)
    if stale_now:
        print(stale_now, file=sys.stderr)
    return 0


def cmd_log(app: App, args: argparse.Namespace) -> int:
    if args.after < 0:
        raise CaseboardError(f"--after {args.after}: a version, 0 or more (0, the default, for every commit)")
    if app.ledger.head(args.workspace) == 0:
        raise UnknownWorkspace(args.workspace)
    for commit in app.ledger.iter_commits(args.workspace, after=args.after):
        record = commit.model_dump(mode="json", exclude_none=True)
        record["workspace_version"] = record.pop("version")
        emit_line(record)
    return 0


def cmd_timeline(app: App, args: argparse.Namespace) -> int:
    for entry in timeline(checked_show(app, args.workspace, args.at_version)):
        emit_line(entry)
    return 0
