"""Writing results: JSON lines, JSON documents or YAML, always to stdout; errors go to stderr."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import yaml


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
    passes for the whole: it is written as ``<file>.partial`` beside the file and renamed over it once whole,
    so a failed write leaves the file as it was (none where there was none). A link is followed, and its
    target replaced, never the link; a device or a pipe (``--out /dev/stdout``) is written as it is."""
    if path.exists() and not path.is_file():  # both follow a link: /dev/stdout is a link to a pipe or a terminal
        with path.open(mode, encoding="utf-8" if mode == "w" else None) as handle:
            yield handle
        return
    target = path.resolve()
    temp = target.with_name(f"{target.name}.partial")
    try:
        with temp.open(mode, encoding="utf-8" if mode == "w" else None) as handle:
            yield handle
        if target.exists():
            shutil.copymode(target, temp)
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
