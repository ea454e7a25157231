"""The outbox the dispatcher follows: the ledger's notification log (``caseboard/ledger/outbox.py``).

The ledger says which outbox it has (``EventsourcingLedger.outbox``): its SQL lives with the ledger.
"""

from __future__ import annotations

from caseboard.ledger.base import EventsourcingLedger, Position
from caseboard.ledger.outbox import START, Outbox, OutboxEntry

__all__ = ["START", "Outbox", "OutboxEntry", "Position", "open_outbox"]


def open_outbox(ledger: EventsourcingLedger) -> Outbox:
    return ledger.outbox()
