"""A one-line progress bar on a terminal's stderr; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

WIDTH = 30


class ProgressBar:
    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.enabled or total == 0:
            return
        filled = WIDTH * done // total
        bar = "#" * filled + "." * (WIDTH - filled)
        end = "\n" if done == total else ""
        self.stream.write(f"\r[{bar}] {done}/{total} {label[:40]:<40}{end}")
        self.stream.flush()
