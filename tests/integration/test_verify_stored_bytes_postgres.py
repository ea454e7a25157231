"""verify checks the stored bytes of every commit, and names a version that exists (issue 10, item 12; ADR 0047)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import psycopg
import pytest

from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.replay.transfer import import_file
from caseboard.replay.verify import stored_hash, verify_file, verify_ledger

pytestmark = pytest.mark.postgres
INCIDENT = Path(__file__).resolve().parents[2] / "corpus" / "incident-042.jsonl"


@pytest.fixture
def ledger(postgres_url: str) -> Iterator[EventsourcingLedger]:
    ledger = open_ledger(postgres_url)
    import_file(ledger, INCIDENT)
    yield ledger
    ledger.close()


def connect(postgres_url: str) -> psycopg.Connection[tuple[object, ...]]:
    schema = parse_qs(urlparse(postgres_url).query)["schema"][0]
    conn = psycopg.connect(postgres_url.split("?")[0], autocommit=True)
    conn.execute(f'SET search_path TO "{schema}"')
    return conn


def stored(postgres_url: str, version: int) -> bytes:
    with connect(postgres_url) as conn:
        row = conn.execute(
            "SELECT state FROM caseboard_commits WHERE originator_id = 'incident-042' AND originator_version = %s",
            (version,),
        ).fetchone()
    assert row is not None
    return bytes(row[0])  # type: ignore[arg-type]


def store(postgres_url: str, version: int, data: bytes) -> None:
    with connect(postgres_url) as conn:
        conn.execute(
            "UPDATE caseboard_commits SET state = %s WHERE originator_id = 'incident-042' AND originator_version = %s",
            (data, version),
        )


def resealed(data: bytes, **changes: object) -> bytes:
    """A commit edited and sealed again, as someone who knows the format would: a new, consistent hash."""
    record = json.loads(data)
    record.update(changes)
    del record["hash"]
    body = json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode()
    return body[:-1] + b',"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'"}'


def test_a_whitespace_only_edit_of_a_stored_row_is_reported_altered(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    original = stored(postgres_url, 7)
    assert stored_hash(original) == json.loads(original)["hash"]
    store(postgres_url, 7, original.replace(b",", b", ", 1))
    report = verify_ledger(ledger, "incident-042")
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (7, "altered")
    store(postgres_url, 7, original + b" ")
    assert verify_ledger(ledger, "incident-042").problem is not None
    store(postgres_url, 7, original)
    assert verify_ledger(ledger, "incident-042").intact


def test_a_whitespace_only_edit_of_a_line_is_reported_altered(tmp_path: Path) -> None:
    lines = INCIDENT.read_bytes().splitlines()
    lines[4] = lines[4].replace(b":", b": ", 1)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(b"\n".join(lines) + b"\n")
    report = verify_file(edited)
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (5, "altered")


def test_a_head_resealed_after_an_edit_is_reported_at_the_head_with_an_anchor(
    ledger: EventsourcingLedger, postgres_url: str
) -> None:
    head = verify_ledger(ledger, "incident-042").head_hash
    store(postgres_url, 20, resealed(stored(postgres_url, 20), idempotency_key="forged"))
    assert verify_ledger(ledger, "incident-042").intact  # a re-sealed head is consistent on its own
    report = verify_ledger(ledger, "incident-042", anchor=head)
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind, report.commits) == (20, "anchor_missing", 20)
