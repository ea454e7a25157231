"""eventsourcing's own recorder test cases (``eventsourcing.tests.persistence``), run against caseboard's
PostgreSQL recorders: ``LedgerRecorder`` (the group-committed, one-statement append and the ``tx`` column)
and ``SnapshotRecorder`` (the plain one-row INSERT) keep the interface and the guarantees of the recorders
they replace. Each recorder is opened in a fresh schema, as the ledger opens it (``open_ledger``).

The cases' ``test_performance`` only prints a rate: the ledger's rates are ``make bench``'s (docs/benchmarks.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from eventsourcing.persistence import AggregateRecorder, ApplicationRecorder
from eventsourcing.tests.persistence import AggregateRecorderTestCase, ApplicationRecorderTestCase

from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.ledger.postgres import LedgerRecorder, SnapshotRecorder


class _FreshSchemas:
    """A new schema for each recorder a case creates, dropped with the case."""

    base_url: str
    opened: list[tuple[EventsourcingLedger, str]]

    @pytest.fixture(autouse=True)
    def _schemas(self, postgres_available: str) -> Iterator[None]:
        self.base_url = postgres_available
        self.opened = []
        yield
        for ledger, schema in self.opened:
            ledger.close()
            with psycopg.connect(self.base_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')

    def open(self) -> EventsourcingLedger:
        schema = f"es_{uuid.uuid4().hex[:12]}"
        ledger = open_ledger(f"{self.base_url}?schema={schema}", pool_size=4)
        self.opened.append((ledger, schema))
        return ledger

    def new_originator_id(self) -> str:
        return str(uuid.uuid4())  # the ledger's originator ids are text (workspace ids)


class TestLedgerRecorder(_FreshSchemas, ApplicationRecorderTestCase[ApplicationRecorder]):
    def create_recorder(self) -> ApplicationRecorder:
        recorder = self.open().events
        assert isinstance(recorder, LedgerRecorder)
        return recorder

    def test_performance(self) -> None:
        pytest.skip("prints a rate only; the ledger's rates are make bench's")


class TestSnapshotRecorder(_FreshSchemas, AggregateRecorderTestCase):
    def create_recorder(self) -> AggregateRecorder:
        recorder = self.open().snapshots
        assert isinstance(recorder, SnapshotRecorder)
        return recorder

    def test_performance(self) -> None:
        pytest.skip("prints a rate only; the ledger's rates are make bench's")
