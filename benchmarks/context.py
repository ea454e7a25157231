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


def postgres_ticks() -> dict[int, int] | None:
    """CPU ticks (user and system) used so far by each of this machine's PostgreSQL processes (its backends, WAL
    writer and checkpointer alike), by process id, from /proc; None where there is no /proc or no such process
    (a database elsewhere). A cost the machine's other load does not change, unlike a rate."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    ticks: dict[int, int] = {}
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
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])
    return ticks or None


def postgres_cpu_s(before: dict[int, int], after: dict[int, int]) -> float:
    """CPU seconds PostgreSQL's processes spent between two ``postgres_ticks()``: each one's own growth (one
    that started meanwhile from nothing), so that a backend of another client ending meanwhile, its ticks gone
    with it, does not take them off the sum (one holding an ended one's id has spent less than it had: all its own)."""
    spent = sum(ticks - before.get(pid, 0) if ticks >= before.get(pid, 0) else ticks for pid, ticks in after.items())
    return spent / os.sysconf("SC_CLK_TCK")
