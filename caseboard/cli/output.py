"""Writing results: JSON lines, JSON documents or YAML, always to stdout; errors go to stderr."""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import yaml

from caseboard.domain.errors import CaseboardError


def emit_line(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def emit_document(obj: Any, fmt: str) -> None:
    if fmt == "yaml":
        sys.stdout.write(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True, width=110))
    else:
        sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()


@contextmanager
def out_file(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """``path`` opened for writing (``mode`` "w" for UTF-8 text, "wb" for bytes) such that no part of a file
    passes for the whole: it is written to a new file of its own beside it (``<file>.<random>.partial``,
    created exclusively: no other writer's, and no link put there beforehand) and renamed over it once whole,
    so a failed write leaves the file as it was (none where there was none), and of two writers the last
    rename wins whole. A link at ``path`` is followed, and its target replaced, never the link; a device or a
    pipe (``--out /dev/stdout``) is written as it is. A SQLite database there (the ledger itself, mistyped) is
    refused, never replaced."""
    if path.exists() and not path.is_file():  # both follow a link: /dev/stdout is a link to a pipe or a terminal
        with path.open(mode, encoding="utf-8" if mode == "w" else None) as handle:
            yield handle
        return
    target = path.resolve()
    if _is_sqlite(target):
        raise CaseboardError(f"{path} is a SQLite database (a ledger?): it is not written over; give another file")
    descriptor, name = tempfile.mkstemp(dir=target.parent, prefix=f"{target.name}.", suffix=".partial")
    temp = Path(name)
    try:
        os.fchmod(descriptor, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask())
        with open(descriptor, mode, encoding="utf-8" if mode == "w" else None) as handle:
            yield handle
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


SQLITE_MAGIC = (b"SQLite format 3\x00", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")
"""How a SQLite database and its write-ahead log begin (the file format's header, and the WAL's in either byte
order): a ledger, a key store or a knowledge store that a mistyped --out would replace."""


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(16)
    except OSError:  # none there, or not readable: nothing is lost by writing it
        return False
    return head.startswith(SQLITE_MAGIC)


def _umask() -> int:
    """The process's file mode mask (read by setting it, then setting it back: the command line runs no threads)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
