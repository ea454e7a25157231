"""Reading recorded commits: from an exported JSONL file or from a stored ledger, a batch at a time.

A recorded incident file holds one commit per line, exactly as ``Commit.model_dump_json(exclude_none=True)``
writes it (docs/adr/0020-recorded-incident-format.md); there is no header line. A line is exactly that and its
``\n``: a blank line, or a ``\r`` before the ``\n``, is a line that is not a sealed commit, which ``verify`` and
``import`` refuse (docs/adr/0142). Every line passes through
the upcaster, so a file or a row of an older schema version still reads as a current ``Commit``.

Decoding is the cost of replay: each row is validated straight from its bytes by pydantic's JSON parser;
only a row that fails (an older schema version) falls back to ``json.loads`` + upcast.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, NamedTuple

from pydantic import ValidationError

from caseboard.domain.commit import COMMIT_TOPIC, MAX_COMMIT_BYTES, Commit
from caseboard.domain.errors import CaseboardError
from caseboard.ledger.base import EventsourcingLedger
from caseboard.ledger.upcast import upcast_commit

BATCH = 5000


class UnreadableRecord(CaseboardError):
    """A line or row that is not a commit of any known schema version."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"{where}: not a readable commit ({problem})")
        self.where = where


class RawRecord(NamedTuple):
    """One stored commit before decoding: where it sits (line or row version) and its bytes. A named tuple: a
    file's lines are read into one each, and a tuple is made in a third of a frozen dataclass's time."""

    position: int
    data: bytes
    source: str
    keyed: bool = False
    """True for a stored row, whose ``position`` is its version key in the store."""
    too_long: bool = False
    """True for a line longer than any commit (``MAX_COMMIT_BYTES``), which was not read: ``data`` is empty."""

    @property
    def where(self) -> str:
        return f"{self.source} row {self.position}" if self.keyed else f"{self.source}:{self.position}"


def decode_one(record: RawRecord) -> Commit:
    if record.too_long:
        raise UnreadableRecord(record.where, f"longer than {MAX_COMMIT_BYTES} bytes, more than any commit; not read")
    try:
        data = json.loads(record.data)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Commit.model_validate(upcast_commit(data))
    except (ValueError, ValidationError) as error:
        raise UnreadableRecord(record.where, _short(error)) from None


def decode_batch(records: Sequence[RawRecord]) -> list[Commit]:
    """Commits of a batch: each parsed and validated by pydantic's JSON parser in one step (no ``json.loads``
    and no intermediate dicts); only a record of an older shape goes through ``json.loads`` and upcasting."""
    out = []
    validate = Commit.model_validate_json
    for record in records:
        try:
            out.append(validate(record.data))
        except ValidationError:
            out.append(decode_one(record))
    return out


def file_records(path: Path, start: int = 0, end: int | None = None) -> Iterator[RawRecord]:
    """The lines of ``path`` as records (``file_lines``), numbered from 1 at ``start``; a line longer than any
    commit is a ``too_long`` record."""
    source = str(path)
    for number, line in enumerate(file_lines(path, start, end), 1):
        yield RawRecord(number, b"", source, too_long=True) if line is None else RawRecord(number, line, source)


READ_CHUNK = 1 << 20
"""The bytes ``file_line_batches`` reads at a time (at most ``MAX_COMMIT_BYTES``)."""


def file_lines(path: Path, start: int = 0, end: int | None = None) -> Iterator[bytes | None]:
    """The lines of ``path`` without their ``\n``, one at a time (``file_line_batches``)."""
    for batch in file_line_batches(path, start, end):
        yield from batch


def file_line_batches(path: Path, start: int = 0, end: int | None = None) -> Iterator[list[bytes | None]]:
    """The lines of ``path`` without their ``\n``, a chunk of the file at a time; from ``start``, a byte where a
    line begins, to the line that reaches ``end`` (for a segment of a file, ``verify``). A line longer than any
    commit is None, and is not held in memory: a hostile file costs no more than one commit's bytes a line (ADR
    0193). A device or a pipe is refused: a recorded incident is read more than once (``verify``'s second pass,
    its segments), and a device such as ``/dev/zero`` never ends."""
    if path.exists() and not path.is_file() and not path.is_dir():  # a folder: open says "Is a directory"
        raise CaseboardError(
            f"cannot read {path}: not a regular file (a device or a pipe); save the recorded incident to a file first"
        )
    chunk = max(1, min(READ_CHUNK, MAX_COMMIT_BYTES))  # a line that ends in the chunk it began in is not too long
    try:
        with path.open("rb") as handle:
            handle.seek(start)
            at = start  # where the next chunk begins
            held: list[bytes] = []  # a line begun in an earlier chunk: its pieces, none once it is too long
            size = 0  # and its length so far
            while block := handle.read(chunk):
                pieces = block.split(b"\n")
                rest = pieces.pop()  # after the chunk's last \n: goes on in the next chunk
                if pieces:
                    first: bytes | None = pieces[0]
                    if size:  # the end of a line begun in an earlier chunk
                        size += len(pieces[0])
                        first = b"".join((*held, pieces[0])) if size <= MAX_COMMIT_BYTES else None
                        held, size = [], 0
                    lines = [first, *pieces[1:]]
                    if end is not None:  # the lines that begin before ``end``: the first, and one after each \n
                        begun = 1 + block.count(b"\n", 0, max(0, end - at - 1))
                        if begun <= len(lines):
                            yield lines[:begun]
                            return
                    yield lines
                at += len(block)
                if rest:
                    size += len(rest)
                    held = [*held, rest] if size <= MAX_COMMIT_BYTES else []
            if size:  # the last line, without its \n
                yield [b"".join(held) if size <= MAX_COMMIT_BYTES else None]
    except OSError as error:
        raise CaseboardError(f"cannot read {path}: {error.strerror or error}") from None


def skip_line(handle: IO[bytes], chunk: int = 1 << 20) -> int:
    """Read ``handle`` past the end of the line it is in, a chunk at a time; the bytes read."""
    skipped = 0
    while piece := handle.readline(chunk):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def ledger_records(
    ledger: EventsourcingLedger, workspace_id: str, upto: int | None = None, batch: int = BATCH, *, after: int = 0
) -> Iterator[list[RawRecord]]:
    """The stored rows of a workspace after version ``after`` in version order, a batch at a time, undecoded."""
    for rows in ledger.raw_rows(workspace_id, after, upto, batch):
        out = []
        for version, topic, state in rows:
            if topic != COMMIT_TOPIC:
                raise UnreadableRecord(f"{workspace_id} row {version}", f"topic {topic!r}")
            out.append(RawRecord(version, state, workspace_id, keyed=True))
        yield out


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
    validate = Commit.model_validate_json
    for batch in ledger_records(ledger, workspace_id, upto):
        for record in batch:
            try:
                yield validate(record.data)
            except ValidationError:
                yield decode_one(record)


def _short(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}" if where else first["msg"]
    return str(error).splitlines()[0]
