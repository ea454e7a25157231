"""What every benchmark section gets: where PostgreSQL and Redis are, how many rounds, and a fresh schema."""

from __future__ import annotations

import os
import statistics
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

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


def postgres_cpu_s() -> float | None:
    """CPU seconds (user and system) used so far by this machine's PostgreSQL processes (its backends, WAL
    writer and checkpointer alike), from /proc; None where there is no /proc or no such process (a database
    elsewhere). A cost the machine's other load does not change, unlike a rate."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    ticks, found = 0, False
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:  # a process can end between the listing and the read
            head, _, rest = (entry / "stat").read_text().rpartition(")")
            if not head.partition("(")[2].startswith("postgres"):
                continue
            fields = rest.split()
        except OSError:
            continue
        ticks, found = ticks + int(fields[11]) + int(fields[12]), True
    return ticks / os.sysconf("SC_CLK_TCK") if found else None
