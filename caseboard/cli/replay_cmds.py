"""``export``, ``import``, ``verify``, ``replay``, ``compare``: recorded incidents for auditors and engineers.

``replay``, ``verify`` and ``compare`` of a file open no ledger and no connection: a path that exists is a
recorded incident file; anything else is a workspace of the configured ledger.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError

from caseboard.app import App, build_app
from caseboard.cli.arguments import whole_number
from caseboard.cli.output import emit_document, emit_line, out_file
from caseboard.cli.reading import ledger_exists, raise_no_ledger
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import Sha256
from caseboard.reducers import GROUP, RELEASED, get_reducer
from caseboard.replay import excerpts
from caseboard.replay.compare import compare, table
from caseboard.replay.progress import ProgressBar
from caseboard.replay.rebuild import replay_file, replay_ledger
from caseboard.replay.records import read_file, read_ledger
from caseboard.replay.transfer import export, import_file
from caseboard.replay.verify import MAX_JOBS, verify_file, verify_ledger
from caseboard.settings import Settings

SHA256: TypeAdapter[str] = TypeAdapter(Sha256)

REDUCER_HELP = (
    f"a registered reducer's name ({GROUP} entry points: {', '.join(RELEASED)}, and any installed; "
    "default: $CASEBOARD_REDUCER, else workspace-rules-v4)"
)


def register(commands: Any) -> None:
    exp = commands.add_parser("export", help="a workspace's ledger as a recorded incident (JSONL, hash chained)")
    exp.add_argument("workspace")
    exp.add_argument("--out", metavar="FILE", help="write to FILE instead of standard output")
    exp.add_argument(
        "--with-excerpts", action="store_true", help="also write the cited excerpts to FILE.excerpts.jsonl"
    )
    exp.set_defaults(handler=cmd_export, reads=True, locate=True)

    imp = commands.add_parser("import", help="load a recorded incident after verifying its chain")
    imp.add_argument("file")
    imp.add_argument("--as", dest="as_workspace", metavar="WORKSPACE", help="import under another workspace id")
    imp.add_argument(
        "--anchor", metavar="HASH", type=anchor_hash, help="a head hash kept elsewhere: the file must hold that commit"
    )
    imp.set_defaults(handler=cmd_import)

    ver = commands.add_parser("verify", help="re-compute the hash chain of a workspace or a recorded incident file")
    ver.add_argument("target", metavar="WORKSPACE|FILE")
    ver.add_argument("--format", choices=["text", "json"], default="text")
    ver.add_argument(
        "--anchor",
        metavar="HASH",
        type=anchor_hash,
        help="a head hash kept elsewhere: the chain must hold that commit (detects a cut-off or re-sealed end)",
    )
    ver.add_argument(
        "--jobs",
        type=process_count,
        metavar="N",
        help="processes that check a large file's segments at once (default: this machine's cores; 1: one pass)",
    )
    ver.set_defaults(handler=cmd_verify, no_app=True)

    rep = commands.add_parser("replay", help="the projection at version N, rebuilt from the record alone")
    rep.add_argument("target", metavar="WORKSPACE|FILE")
    rep.add_argument("--to", type=int, metavar="N", help="the version to rebuild (default: the last)")
    rep.add_argument("--reducer", metavar="V", help=REDUCER_HELP)
    rep.add_argument("--format", choices=["json", "yaml"], default="json")
    rep.add_argument(
        "--no-verify",
        dest="verify",
        action="store_false",
        help="fold without checking the hash chain (a warning says so); by default a broken chain is refused",
    )
    rep.set_defaults(handler=cmd_replay, no_app=True)

    cmp = commands.add_parser("compare", help="where two reducers disagree over recorded incidents (exit 1 if any)")
    cmp.add_argument("paths", nargs="+", metavar="PATH", help="recorded incident files or directories of them")
    cmp.add_argument(
        "--reducer",
        action="append",
        required=True,
        metavar="V",
        help=f"give it twice: A then B ({REDUCER_HELP})",
    )
    cmp.add_argument("--format", choices=["table", "json"], default="table")
    cmp.set_defaults(handler=cmd_compare, no_app=True)


def cmd_export(app: App, args: argparse.Namespace) -> int:
    if args.out is None:
        if args.with_excerpts:
            raise CaseboardError("--with-excerpts writes FILE.excerpts.jsonl beside the export: give --out FILE")
        export(app.ledger, args.workspace, sys.stdout)
        return 0
    out = Path(args.out)
    try:
        with out_file(out) as handle:
            count = export(app.ledger, args.workspace, handle)
    except OSError as error:
        raise CaseboardError(f"cannot write {out}: {error.strerror or error}") from None
    sys.stderr.write(f"caseboard: exported {count} commits of {args.workspace} to {out}\n")
    if args.with_excerpts:  # docs/adr/0082
        sidecar = excerpts.sidecar_of(out)
        try:
            with out_file(sidecar) as handle:
                excerpts.write_excerpts(list(read_ledger(app.ledger, args.workspace)), app.artifacts, handle)
        except OSError as error:
            raise CaseboardError(f"cannot write {sidecar}: {error.strerror or error}") from None
    return 0


def cmd_import(app: App, args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.exists():
        raise CaseboardError(f"cannot read {args.file}: no such file")
    done = import_file(app.ledger, path, args.as_workspace, args.anchor)  # a folder: "cannot read X: Is a directory"
    emit_line(
        {
            "ok": True,
            "workspace_id": done.workspace_id,
            "commits": done.commits,
            "head_hash": done.head_hash,
            "source_head_hash": done.source_head_hash,
            "resealed": done.resealed,
            "record": True,  # nothing is recorded on it until an operator reopens it (docs/adr/0158)
        }
    )
    return 0


def anchor_hash(text: str) -> str:
    """A head hash as the contract spells every SHA-256 (``items.Sha256``)."""
    try:
        return SHA256.validate_python(text)
    except ValidationError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a head hash (64 lower-case hexadecimal digits)") from None


process_count = whole_number("processes", MAX_JOBS)


def cmd_verify(_: None, args: argparse.Namespace) -> int:
    path = Path(args.target)
    if path.exists():
        report = verify_file(path, args.anchor, args.jobs)
        if excerpts.sidecar_of(path).exists():  # docs/adr/0082
            report = excerpts.check_excerpts(report, read_file(path), sidecar=excerpts.sidecar_of(path))
    else:
        with _workspace_app(args) as app:
            key = _workspace_or_missing_file(app, args.target)
            report = verify_ledger(app.ledger, key, args.anchor)
            report = excerpts.check_excerpts(report, read_ledger(app.ledger, key), store=app.artifacts)
    if args.format == "json":
        emit_line(report.to_dict())
    else:
        sys.stdout.write(report.line() + "\n")
    return 0 if report.intact else 1


def cmd_replay(_: None, args: argparse.Namespace) -> int:
    get_reducer(args.reducer)  # an unknown name is refused before anything is read
    path = Path(args.target)
    if path.exists():
        if path.is_dir():
            raise CaseboardError(f"{path} is a directory; replay takes one recorded incident file")
        if not args.verify:
            _unverified(str(path))
        projection = replay_file(path, args.to, args.reducer, verify=args.verify)
    else:
        with _workspace_app(args) as app:
            key = _workspace_or_missing_file(app, args.target)
            if not args.verify:
                _unverified(f"ledger {key}")
            projection = replay_ledger(app.ledger, key, args.to, args.reducer, verify=args.verify)
    emit_document(projection, args.format)
    return 0


def _unverified(source: str) -> None:
    sys.stderr.write(
        f"caseboard: warning: --no-verify: the hash chain of {source} is not checked; "
        "what follows may hold altered commits ('caseboard verify' checks it)\n"
    )


PATH_SUFFIXES = (".jsonl", ".json", ".ndjson", ".txt", ".gz", ".log")


def looks_like_path(target: str) -> bool:
    """A name a user means as a file: with a folder, relative to one, or with a file's suffix."""
    return "/" in target or target.startswith(("./", "../", "~")) or target.lower().endswith(PATH_SUFFIXES)


def _workspace_or_missing_file(app: App, target: str) -> str:
    """The key of the workspace a target that is no file names (``Workspaces.locate``: TENANT/ID, or an id
    one tenant has); one that looks like a path and names no workspace is reported as a missing file, not
    as an unknown workspace."""
    key = app.workspaces.locate(target)
    if looks_like_path(target) and app.ledger.head(key) == 0:
        raise CaseboardError(f"cannot read {target}: no such file (and no workspace of that name in the ledger)")
    return key


def cmd_compare(_: None, args: argparse.Namespace) -> int:
    if len(args.reducer) != 2:
        raise CaseboardError(f"compare takes exactly two --reducer options (got {len(args.reducer)})")
    first, second = (get_reducer(name).name for name in args.reducer)  # an unknown name: one line, exit 2
    result = compare(args.paths, first, second, ProgressBar())
    if args.format == "json":
        sys.stdout.write(json.dumps(result.to_dict(), indent=2) + "\n")
    else:
        sys.stdout.write(table(result))
    return 0 if result.agree else 1


@contextmanager
def _workspace_app(args: argparse.Namespace) -> Iterator[App]:
    """The configured ledger, opened only when a workspace (not a file) is named; a SQLite ledger that does
    not exist is not created by a read."""
    settings = Settings.from_env()
    url = args.database_url or settings.database_url
    if not ledger_exists(url):
        if looks_like_path(args.target):
            raise CaseboardError(f"cannot read {args.target}: no such file")
        raise_no_ledger(args.target, url)
    app = build_app(settings, database_url=args.database_url)
    try:
        yield app
    finally:
        app.close()
