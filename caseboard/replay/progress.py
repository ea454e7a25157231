"""A one-line progress bar on a terminal's stderr, drawn by rich; silent when stderr is not a terminal."""

from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn


class ProgressBar:
    """Called as ``bar(done, total, label)``; the bar starts at the first call and ends when done == total."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self.enabled or total == 0:
            return
        if self._progress is None:
            console = Console(file=self.stream, force_terminal=True, stderr=self.stream is sys.stderr)
            self._progress = Progress(
                BarColumn(bar_width=30), MofNCompleteColumn(), TextColumn("{task.description}"), console=console
            )
            self._progress.start()
            self._task = self._progress.add_task(label[:40], total=total)
        assert self._task is not None
        self._progress.update(self._task, completed=done, total=total, description=label[:40])
        if done >= total:
            self._progress.stop()
            self._progress = None
