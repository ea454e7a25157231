"""The outbox is the ledger's notification log: every commit, in an order no later commit can jump behind.

A position is ``(tx, notification_id)``. On PostgreSQL ``tx`` is the inserting transaction id and only
final rows are read (``LedgerRecorder.select_outbox``); on SQLite and in memory commits are appended one at
a time, so ``rowid`` order is commit order and ``tx`` is always 0. ``EventsourcingLedger.outbox`` gives the
one that fits the ledger; the dispatcher and the MCP catalog read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from eventsourcing.persistence import ApplicationRecorder, StoredEvent

from caseboard.domain.commit import Commit
from caseboard.ledger.base import NativeRecorder, Position, decode_commit

START: Position = (0, 0)


@dataclass(frozen=True)
class OutboxEntry:
    position: Position
    commit: Commit


class Outbox(Protocol):
    live: bool
    """True when commits announce themselves (LISTEN/NOTIFY); otherwise the follower polls."""

    def read(self, after: Position, limit: int) -> list[OutboxEntry]: ...
    def head(self) -> int: ...
    def pending(self, after: Position) -> int: ...


class FinalRowsOutbox:
    """PostgreSQL: rows read in (tx, notification_id) order, only once no transaction can commit behind them."""

    live = True

    def __init__(self, recorder: NativeRecorder) -> None:
        self.recorder = recorder

    def read(self, after: Position, limit: int) -> list[OutboxEntry]:
        return [
            OutboxEntry((tx, nid), decode_commit(stored))
            for tx, nid, stored in self.recorder.select_outbox(after, limit)
        ]

    def head(self) -> int:
        return int(self.recorder.max_notification_id() or 0)

    def pending(self, after: Position) -> int:
        return self.recorder.count_outbox_after(after)


class SequentialOutbox:
    """SQLite and in-memory recorders: the notification id is the commit order."""

    live = False

    def __init__(self, recorder: ApplicationRecorder) -> None:
        self.recorder = recorder

    def read(self, after: Position, limit: int) -> list[OutboxEntry]:
        rows = self.recorder.select_notifications(after[1], limit, inclusive_of_start=False)
        return [
            OutboxEntry(
                (0, row.id),
                decode_commit(StoredEvent(row.originator_id, row.originator_version, row.topic, row.state)),
            )
            for row in rows
        ]

    def head(self) -> int:
        return int(self.recorder.max_notification_id() or 0)

    def pending(self, after: Position) -> int:
        return max(0, self.head() - after[1])
