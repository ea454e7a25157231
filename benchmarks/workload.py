"""What the commit benchmarks submit and insert: pre-parsed one-observation contributions, and a raw table.

The raw baseline is the cheapest durable write PostgreSQL offers here: one autocommitted, prepared,
single-row ``INSERT`` into a table shaped like the ledger's (text, bigint, text, bytea, primary key on the
first two), with a payload the size of a real stored commit.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlparse

import psycopg

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import COMMIT_TOPIC
from caseboard.domain.contribution import Contribution
from caseboard.ledger import open_ledger
from caseboard.ledger.base import encode_commit
from caseboard.logs import configure_logging

RAW_TABLE = "raw_commits"


def open_workspace(workspace_id: str) -> Contribution:
    return parse_contribution(
        {
            "workspace_id": workspace_id,
            "author": {"principal": "bench-operator", "role": "operator"},
            "items": [
                {
                    "type": "open",
                    "scope": {"tenant_id": "tenant-bench", "environment": "bench", "service": "payments-api"},
                    "goal": "Measure the cost of a commit",
                    "runtime_limits": {
                        "max_selected_items": 20,
                        "max_investigation_cycles": 6,
                        "max_open_questions": 10,
                        "max_proposals": 10,
                        "max_pending_work": 10,
                    },
                    "execution_mode": "read_only",
                }
            ],
        }
    )


def observation(workspace_id: str, number: int) -> Contribution:
    return parse_contribution(
        {
            "workspace_id": workspace_id,
            "author": {"principal": "log-specialist", "role": "specialist"},
            "items": [
                {
                    "type": "observation",
                    "id": f"obs-{number:06d}",
                    "statement": f"Authentication failures are visible on payments-api-2 (sample {number})",
                    "source": {"system": "auth-logs", "instance": "payments-api-2"},
                    "event_time": "2026-03-02T14:03:00Z",
                    "event_time_quality": "verified",
                    "evidence_ref": f"artifact://logs/payments-api/auth-{number:06d}",
                }
            ],
        }
    )


def observations(workspace_id: str, first: int, count: int) -> list[Contribution]:
    return [observation(workspace_id, number) for number in range(first, first + count)]


def submit_all(coordinator: Coordinator, contributions: list[Contribution]) -> None:
    for contribution in contributions:
        accept(coordinator, contribution)


def accept(coordinator: Coordinator, contribution: Contribution) -> None:
    outcome = coordinator.submit(contribution)
    if not outcome.ok:
        raise RuntimeError(f"the benchmark's contribution was refused: {outcome.as_json()}")


def sample_payload() -> bytes:
    """The stored bytes of a typical one-observation commit (built on an in-memory ledger)."""
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    accept(coordinator, open_workspace("ws-sample"))
    accept(coordinator, observation("ws-sample", 1))
    return encode_commit(ledger.read("ws-sample", after=1)[0]).state


def log_to_devnull() -> None:
    """Info level, JSON, to /dev/null, configured once for the process as the command line and the server
    configure it: every commit pays for its log event, nothing is printed."""
    configure_logging("info", fmt="json", stream=open(os.devnull, "w"), cache=True)  # noqa: SIM115 (lives as long as the run)


def schema_of(ledger_url: str) -> str:
    return parse_qs(urlparse(ledger_url).query)["schema"][0]


def create_raw_table(postgres_url: str, schema: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(
            f'CREATE TABLE IF NOT EXISTS "{schema}".{RAW_TABLE} (originator_id text NOT NULL, '
            "originator_version bigint NOT NULL, topic text, state bytea, "
            "PRIMARY KEY (originator_id, originator_version))"
        )


class RawWriter:
    """Single-row autocommit INSERTs on one connection: the baseline a commit is compared with."""

    def __init__(self, conn: psycopg.Connection[Any], postgres_url: str, schema: str, payload: bytes) -> None:
        self.conn = conn
        self.postgres_url = postgres_url
        self.schema = schema
        self.payload = payload
        self.sql = (
            f'INSERT INTO "{schema}".{RAW_TABLE} (originator_id, originator_version, topic, state) '
            "VALUES (%s, %s, %s, %s)"
        )

    def insert(self, originator_id: str, count: int, first: int = 1) -> None:
        for version in range(first, first + count):
            self.conn.execute(self.sql, (originator_id, version, COMMIT_TOPIC, self.payload), prepare=True)


@contextmanager
def raw_writer(postgres_url: str, schema: str, payload: bytes) -> Iterator[RawWriter]:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        yield RawWriter(conn, postgres_url, schema, payload)


def clock() -> float:
    """A monotonic clock shared by every process of the machine (CLOCK_MONOTONIC on Linux)."""
    return time.monotonic()
