"""Group commit: appends that arrive while another is being written share the next transaction.

Threads of one process (the HTTP server's, a worker's) that commit to different workspaces at the same
moment would otherwise each pay a round trip and a WAL flush. Here the first caller becomes the leader and
writes its row at once; callers arriving meanwhile queue up, and when the leader is done it hands the
leadership to the oldest of them, who writes the whole queue (up to ``max_batch`` rows) in one statement.
A lone writer never waits for anyone; a busy process writes batches about as large as its concurrency.

Each row succeeds or fails on its own: ``flush`` answers, per row, its notification id or ``None`` when its
(workspace, version) was taken, and each caller gets its own answer. A caller may give ``meanwhile``: when it
writes the batch itself, ``flush`` calls it while the batch is in flight (ADR 0180). An error of the flush itself (the
database went away) is raised to every caller of that batch: none of its rows was committed.

"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

Row = TypeVar("Row")
Meanwhile = Callable[[], None]
"""Work of the writer's own, done while its batch is in flight: it must not raise."""
Flush = Callable[[Sequence[Row], Meanwhile | None], Sequence[int | None]]
"""Writes a batch in one transaction, calling ``meanwhile`` (if any) once the batch is sent and before its
answer is read: per row, its notification id or None when its key was taken."""


class _Pending(Generic[Row]):
    __slots__ = ("done", "error", "lead", "meanwhile", "result", "row")

    def __init__(self, row: Row, meanwhile: Meanwhile | None) -> None:
        self.row = row
        self.meanwhile = meanwhile
        self.done: threading.Event | None = None  # made only for a caller that has to wait
        self.lead = False
        self.result: int | None = None
        self.error: BaseException | None = None


class GroupCommit(Generic[Row]):
    def __init__(self, flush: Flush[Row], *, max_batch: int = 64) -> None:
        self._flush = flush
        self._max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Pending[Row]] = []
        self._writing = False
        self.batches = 0
        self.rows = 0

    def append(self, row: Row, meanwhile: Meanwhile | None = None) -> int | None:
        """Write ``row`` (alone or with others): its notification id, or ``None`` when its key was taken.
        ``meanwhile`` is called while the batch is in flight when this caller writes it, else never."""
        pending = _Pending(row, meanwhile)
        with self._lock:
            self._queue.append(pending)
            leads = not self._writing
            if leads:
                self._writing = True
            else:
                pending.done = done = threading.Event()
        if not leads:
            done.wait()
            if not pending.lead:
                return self._answer(pending)
        self._write(pending)
        return self._answer(pending)

    def _write(self, own: _Pending[Row]) -> None:
        """As the leader: write one batch (which holds the leader's own row, ``own``), then pass the lead on."""
        with self._lock:
            batch = self._queue[: self._max_batch]
            del self._queue[: self._max_batch]
        try:
            results = self._flush([p.row for p in batch], own.meanwhile)
            if len(results) != len(batch):
                raise RuntimeError(f"group commit: {len(results)} results for {len(batch)} rows")
            for pending, result in zip(batch, results, strict=True):
                pending.result = result
        except BaseException as error:
            for pending in batch:
                pending.error = error
        finally:
            self.batches += 1
            self.rows += len(batch)
            with self._lock:
                if self._queue:
                    successor = self._queue[0]
                    successor.lead = True
                    assert successor.done is not None
                    successor.done.set()
                else:
                    self._writing = False
            for pending in batch:
                if pending.done is not None:
                    pending.done.set()

    @staticmethod
    def _answer(pending: _Pending[Row]) -> int | None:
        if pending.error is not None:
            raise pending.error
        return pending.result
