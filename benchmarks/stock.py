"""eventsourcing's own save, measured beside the commit benchmark for context.

The issue that set ``commit_vs_raw_insert >= 0.5`` gave eventsourcing's own single-event save as about
0.34 of a raw INSERT on the machine it was set on. This measures that save on the machine at hand: a stock
``Application`` on PostgreSQL (its recorder takes ``LOCK TABLE ... EXCLUSIVE`` and issues ``NOTIFY`` in every
append), saving one aggregate event of about the size of a stored commit per save.
"""

from __future__ import annotations

from urllib.parse import urlparse

from eventsourcing.application import Application
from eventsourcing.domain import Aggregate, event

from benchmarks.workload import clock


class Note(Aggregate):
    @event("Noted")
    def note(self, text: str) -> None:
        self.text = text


class StockSaver:
    """A stock eventsourcing application in its own tables of the benchmark's schema."""

    def __init__(self, postgres_url: str, schema: str, payload_size: int) -> None:
        parts = urlparse(postgres_url)
        self.app = Application(
            env={
                "PERSISTENCE_MODULE": "eventsourcing.postgres",
                "POSTGRES_DBNAME": parts.path.lstrip("/"),
                "POSTGRES_HOST": parts.hostname or "127.0.0.1",
                "POSTGRES_PORT": str(parts.port or 5432),
                "POSTGRES_USER": parts.username or "postgres",
                "POSTGRES_PASSWORD": parts.password or "",
                "POSTGRES_SCHEMA": schema,
            }
        )
        self.text = "x" * payload_size
        self.note = Note()
        self.app.save(self.note)

    def save(self, count: int) -> float:
        """Saves per second, one event per save."""
        started = clock()
        for _ in range(count):
            self.note.note(self.text)
            self.app.save(self.note)
        return count / (clock() - started)

    def close(self) -> None:
        self.app.close()
