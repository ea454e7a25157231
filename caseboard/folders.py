"""A folder a command empties before it writes into it (``caseboard pilot --dir``, ``serve --demo --demo-dir``):
only one that a command made, which a mark file names, or an empty one. Anything else is the user's own, and
the command refuses it in one line (``--dir .`` must not empty the folder the user stands in)."""

from __future__ import annotations

import shutil
from pathlib import Path

from caseboard.domain.errors import ConfigurationError

MARK = ".caseboard-made"
"""The file a command puts in a folder it made: only such a folder, or an empty one, is emptied again."""


def check_emptiable(folder: Path, option: str) -> Path:
    """``folder``, resolved, if it may be emptied: absent, empty, or made by a command; else one line naming
    ``option``."""
    folder = folder.resolve()
    if not folder.exists():
        return folder
    if not folder.is_dir():
        raise ConfigurationError(f"{option} {folder}: not a folder")
    if (folder / MARK).is_file() or not any(folder.iterdir()):
        return folder
    raise ConfigurationError(
        f"{option} {folder} holds files caseboard did not make, and it empties that folder first: give a new or "
        f"empty folder (one an older caseboard made has no {MARK}: remove it by hand)"
    )


def refill(folder: Path, command: str) -> None:
    """Empty ``folder`` (``check_emptiable`` said it may be) and mark it as made by ``command``."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / MARK).write_text(f"made by {command}, which empties this folder when it runs again\n")
