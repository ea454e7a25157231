"""Writing results: JSON lines, JSON documents or YAML, always to stdout; errors go to stderr."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

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


def discard_partial(path: Path) -> None:
    """Remove what a failed write left at ``path``, so that no part of a file passes for the whole: only a
    regular file the command wrote, never what a link points at nor a device (``--out /dev/stdout``)."""
    if path.is_file() and not path.is_symlink():
        path.unlink()
