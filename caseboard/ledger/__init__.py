"""The ledger: commits stored through eventsourcing recorders (memory, SQLite, PostgreSQL)."""

from caseboard.ledger.base import EventsourcingLedger, Ledger, Snapshot, VersionTaken
from caseboard.ledger.stores import open_ledger

__all__ = ["EventsourcingLedger", "Ledger", "Snapshot", "VersionTaken", "open_ledger"]
