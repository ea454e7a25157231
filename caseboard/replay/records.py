"""Reading recorded commits: from an exported JSONL file or from a stored ledger, decoded in bulk.

A recorded incident file holds one commit per line, exactly as ``Commit.model_dump_json(exclude_none=True)``
writes it (docs/adr/0020-recorded-incident-format.md); there is no header line. Every line passes through
the upcaster, so a file or a row of an older schema version still reads as a current ``Commit``.

Decoding is the cost of replay: rows are validated with pydantic's JSON parser, a whole batch at once, and
only a batch that fails (an older schema version) falls back to ``json.loads`` + upcast, line by line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import TypeAdapter, ValidationError

from caseboard.domain.commit import COMMIT_TOPIC, Commit
from caseboard.domain.errors import CaseboardError
from caseboard.ledger.base import EventsourcingLedger
from caseboard.ledger.upcast import upcast_commit

BATCH = 5000
_BATCH_ADAPTER: TypeAdapter[list[Commit]] = TypeAdapter(list[Commit])


class UnreadableRecord(CaseboardError):
    """A line or row that is not a commit of any known schema version."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: not a readable commit ({problem})")
        self.where = where


@dataclass(frozen=True)
class RawRecord:
    """One stored commit before decoding: where it sits (line or row version) and its bytes."""

    position: int
    data: bytes
    where: str
    keyed: bool = False
    """True for a stored row, whose ``position`` is its version key in the store."""


def decode_one(record: RawRecord) -> Commit:
    try:
        data = json.loads(record.data)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Commit.model_validate(upcast_commit(data))
    except (ValueError, ValidationError) as error:
        raise UnreadableRecord(record.where, _short(error)) from None


def decode_batch(records: Sequence[RawRecord]) -> list[Commit]:
    """Commits of a batch, validated in one pass when every record has the current shape."""
    if not records:
        return []
    try:
        return _BATCH_ADAPTER.validate_json(b"[" + b",".join(r.data for r in records) + b"]")
    except ValidationError:
        return [decode_one(record) for record in records]


def file_records(path: Path) -> Iterator[RawRecord]:
    try:
        with path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    yield RawRecord(number, line.rstrip(b"\r\n"), f"{path}:{number}")
    except OSError as error:
        raise CaseboardError(f"cannot read {path}: {error.strerror or error}") from None


def ledger_records(
    ledger: EventsourcingLedger, workspace_id: str, upto: int | None = None, batch: int = BATCH
) -> Iterator[list[RawRecord]]:
    """The stored rows of a workspace in version order, a batch at a time, undecoded."""
    after = 0
    while True:
        rows = ledger.events.select_events(workspace_id, gt=after, lte=upto, limit=batch)
        out = []
        for row in rows:
            if row.topic != COMMIT_TOPIC:
                raise UnreadableRecord(f"{workspace_id} row {row.originator_version}", f"topic {row.topic!r}")
            where = f"{workspace_id} row {row.originator_version}"
            out.append(RawRecord(row.originator_version, bytes(row.state), where, keyed=True))
        if out:
            yield out
        if len(rows) < batch:
            return
        after = rows[-1].originator_version


def read_file(path: Path) -> Iterator[Commit]:
    """The commits of a recorded incident file, in line order (a consumer may stop early)."""
    pending: list[RawRecord] = []
    for record in file_records(path):
        pending.append(record)
        if len(pending) >= BATCH:
            yield from decode_batch(pending)
            pending = []
    yield from decode_batch(pending)


def read_ledger(ledger: EventsourcingLedger, workspace_id: str, upto: int | None = None) -> Iterator[Commit]:
    for batch in ledger_records(ledger, workspace_id, upto):
        yield from decode_batch(batch)


def _short(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(error).splitlines()[0]
