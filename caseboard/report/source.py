"""A record to show: an exported file or a stored workspace, its chain verified, its commits in order.

The page is made from a broken chain too (it says so at the top, and shows what precedes the first bad
version): the chain is verified as ``caseboard verify`` verifies it, and only the commits before the first
bad version are shown."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from caseboard.domain.commit import Commit
from caseboard.ledger.base import EventsourcingLedger
from caseboard.replay.records import RawRecord, decode_one, file_records, ledger_records, read_ledger
from caseboard.replay.verify import ChainChecker, ChainReport, verify_ledger, verify_records


@dataclass(frozen=True)
class Record:
    source: str
    chain: ChainReport
    commits: Iterator[Commit]


def file_record(path: Path) -> Record:
    """A file checked and decoded in one pass (the checker decodes what it accepts); a broken chain is
    reported exactly as ``verify_file`` reports it."""
    records = list(file_records(path))
    checker = ChainChecker(str(path))
    commits = []
    for record in records:
        commit = checker.accept(record)
        if commit is None:
            break
        commits.append(commit)
    chain = checker.report() if checker.problem is None and records else verify_records(records, str(path))
    return Record(str(path), chain, iter(commits))


def ledger_record(ledger: EventsourcingLedger, workspace_id: str) -> Record:
    chain = verify_ledger(ledger, workspace_id)
    source = f"ledger {workspace_id}"
    if chain.intact:
        return Record(source, chain, read_ledger(ledger, workspace_id))
    last = chain.problem.version - 1 if chain.problem is not None else 0
    batches = ledger_records(ledger, workspace_id, last) if last > 0 else iter(())
    return Record(source, chain, _before((r for batch in batches for r in batch), chain))


def _before(records: Iterator[RawRecord], chain: ChainReport) -> Iterator[Commit]:
    """The records before the first bad version, decoded one by one (a later one may not be a commit)."""
    last = chain.problem.version - 1 if chain.problem is not None else 0
    for expected, record in enumerate(records, 1):
        if expected > last:
            return
        yield decode_one(record)
