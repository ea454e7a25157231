"""What every benchmark section gets: where PostgreSQL and Redis are, how many rounds, and a fresh schema."""

from __future__ import annotations

import statistics
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psycopg


@dataclass(frozen=True)
class BenchContext:
    postgres_url: str
    redis_url: str
    rounds: int
    quick: bool

    @contextmanager
    def fresh_schema(self) -> Iterator[str]:
        """A ledger URL in a new schema, dropped afterwards."""
        schema = f"bench_{uuid.uuid4().hex[:10]}"
        try:
            yield f"{self.postgres_url}?schema={schema}"
        finally:
            with psycopg.connect(self.postgres_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def median(values: list[float]) -> float:
    return statistics.median(values)


def p99_of(values: list[float]) -> float:
    """The 99th percentile of ``values`` (the value below which 99 % of them lie, nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
