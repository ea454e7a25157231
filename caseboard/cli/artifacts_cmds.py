"""``caseboard artifacts put|get|list|excerpt|remove``: the evidence repository of a tenant (docs/evidence.md)."""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from caseboard.app import App
from caseboard.cli.arguments import artifact_id, principal_id, tenant_id, text
from caseboard.cli.output import emit_line, out_file
from caseboard.domain.citations import Span
from caseboard.domain.errors import ConfigurationError
from caseboard.evidence.model import BLOCK, DEFAULT_MEDIA_TYPE, MEDIA_TYPE_MAX, SOURCE_SYSTEM_MAX

DEFAULT_TENANT = "tenant-a"


def register(commands: Any) -> None:
    artifacts = commands.add_parser("artifacts", help="stored evidence: put, get, list, excerpt, remove")
    actions = artifacts.add_subparsers(
        dest="artifacts_action", required=True, metavar="ACTION", parser_class=type(artifacts)
    )

    def action(name: str, text: str, handler: Any) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = actions.add_parser(name, help=text)
        parser.add_argument(
            "--tenant", type=tenant_id, default=DEFAULT_TENANT, help=f"the tenant (default {DEFAULT_TENANT})"
        )
        parser.set_defaults(handler=handler)
        return parser

    put = action("put", "store a file ('-' reads standard input); prints its id and metadata", cmd_put)
    put.add_argument("file")
    put.add_argument("--media-type", type=text("media type", MEDIA_TYPE_MAX), default=DEFAULT_MEDIA_TYPE)
    put.add_argument(
        "--source-system",
        type=text("source system", SOURCE_SYSTEM_MAX),
        help="the system the artifact came from, e.g. auth-logs",
    )
    put.add_argument("--stored-by", type=principal_id, default="operator", help="who stores it (default operator)")
    get = action("get", "write an artifact's bytes to standard output or --out", cmd_get)
    get.add_argument("artifact_id", type=artifact_id)
    get.add_argument("--out", help="a file to write instead of standard output")
    action("list", "the tenant's artifacts, one JSON object per line", cmd_list)
    excerpt = action("excerpt", "write lines A-B (from 1) or bytes A-B (from 0) of an artifact", cmd_excerpt)
    excerpt.add_argument("artifact_id", type=artifact_id)
    span = excerpt.add_mutually_exclusive_group(required=True)
    span.add_argument("--lines", metavar="A-B")
    span.add_argument("--bytes", metavar="A-B")
    remove = action("remove", "retention: remove an artifact's bytes (the ledger and excerpt hashes stay)", cmd_remove)
    remove.add_argument("artifact_id", type=artifact_id)


def _chunks(handle: BinaryIO) -> Iterator[bytes]:
    while data := handle.read(BLOCK):
        yield data


def cmd_put(app: App, args: argparse.Namespace) -> int:
    try:
        handle: BinaryIO = sys.stdin.buffer if args.file == "-" else open(args.file, "rb")  # noqa: SIM115
    except OSError as error:
        raise ConfigurationError(f"cannot read {args.file}: {error.strerror}") from None
    with handle:
        first = handle.read(BLOCK)
        if not first:  # as over HTTP (ADR 0173): nothing is stored
            named = "standard input" if args.file == "-" else args.file
            raise ConfigurationError(f"{named} is empty: an artifact holds at least one byte")
        stored = app.artifacts.put(
            args.tenant,
            itertools.chain([first], _chunks(handle)),
            stored_by=args.stored_by,
            media_type=args.media_type,
            source_system=args.source_system,
        )
    emit_line({**stored.meta.public(), "created": stored.created})
    return 0


def _write(chunks: Iterator[bytes], out: str | None) -> int:
    if out is None:
        for data in chunks:
            sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return 0
    try:
        with out_file(Path(out), "wb") as handle:
            for data in chunks:
                handle.write(data)
    except OSError as error:
        raise ConfigurationError(f"cannot write {out}: {error.strerror}") from None
    return 0


def cmd_get(app: App, args: argparse.Namespace) -> int:
    return _write(app.artifacts.read(args.tenant, args.artifact_id), args.out)


def cmd_list(app: App, args: argparse.Namespace) -> int:
    for meta in app.artifacts.list(args.tenant):
        emit_line(meta.public())
    return 0


def cmd_excerpt(app: App, args: argparse.Namespace) -> int:
    try:
        span = Span.parse("lines", args.lines) if args.lines else Span.parse("bytes", args.bytes)
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    return _write(app.artifacts.excerpt(args.tenant, args.artifact_id, span), None)


def cmd_remove(app: App, args: argparse.Namespace) -> int:
    removed = app.artifacts.remove(args.tenant, args.artifact_id)
    emit_line({"artifact_id": args.artifact_id, "removed": removed})
    return 0 if removed else 1
