"""Checked reads: replay and projection reads fold only commits whose chain holds (docs/adr/0050).

``verify`` (caseboard.replay.verify) is the auditor's explicit check; this module applies the same check to
the commits a read folds, so that an altered record is never shown as if it were sound:

- ``checked_file_commits`` / ``checked_ledger_commits``: the commits of a replay, each accepted by a
  ``ChainChecker`` (which decodes it once) before it is folded; the first bad one stops the replay with
  ``ChainBroken``, which names the version and the kind exactly as ``verify`` reports them.
- ``ReadGuard``: the projection reads (``caseboard show``, ``GET /workspaces/{id}``). A read at a past
  version or with another reducer is folded from the stored rows, so every row up to that version is checked
  at each such read. The head served from a process's cache is checked incrementally: the guard remembers,
  per workspace and cached state, the last version whose chain it checked and its hash, and checks only the
  rows after it (a state loaded again, after an eviction, is checked again from version 1).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import structlog

from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError
from caseboard.ledger.base import EventsourcingLedger
from caseboard.replay.records import RawRecord, decode_one, file_records, ledger_records
from caseboard.replay.verify import ChainChecker, ChainReport, Problem, verify_records

log = structlog.get_logger("caseboard.replay")

REASON = "tampered"
"""The reason token of a read refused because a commit does not match its hash (HTTP and ``--format json``)."""


class ChainBroken(CaseboardError):
    """A commit a read would fold fails the chain check: altered, missing, out of order, unsealed, foreign.

    Not a user's mistake: the command line exits 1 (as ``verify`` does for a broken chain), HTTP answers 409
    with reason ``tampered``."""

    def __init__(self, report: ChainReport, action: str) -> None:
        problem = report.problem
        assert problem is not None
        super().__init__(
            f"{report.source} is not intact at version {problem.version} ({problem.kind}): {problem.detail}; "
            f"{action}. 'caseboard verify' reports the chain"
        )
        self.report = report
        self.version = problem.version
        self.kind = problem.kind

    def to_body(self) -> dict[str, Any]:
        """The refusal's body, in the one shape every error has (``ok``, ``reason``, ``message``)."""
        return {
            "ok": False,
            "reason": REASON,
            "message": str(self),
            "first_bad_version": self.version,
            "kind": self.kind,
        }


def checked_file_commits(path: Path, upto: int | None = None) -> Iterator[Commit]:
    """A file's commits in line order, each checked (and decoded once) before it is yielded. With ``upto``,
    the record after it is checked too: its ``previous_hash`` tells whether version ``upto`` was re-sealed
    after an edit."""
    records = list(file_records(path))
    if records and all(pre_chain(record) for record in records):
        yield from _unchecked(records, str(path), upto)
        return
    checker = ChainChecker(str(path))
    for record in records:
        commit = checker.accept(record)
        if commit is None:
            if upto is not None and checker.problem is not None and checker.problem.version > upto:
                return  # only what lies beyond the version asked for is damaged
            # The exact kind (a missing version or a misplaced one) needs the whole file, as verify reads it.
            raise ChainBroken(verify_records(records, str(path)), "nothing was replayed (--no-verify folds it anyway)")
        if upto is not None and commit.version > upto:
            return
        yield commit


def checked_ledger_commits(
    ledger: EventsourcingLedger,
    workspace_id: str,
    upto: int | None = None,
    action: str = "nothing was replayed (--no-verify folds it anyway)",
) -> Iterator[Commit]:
    """A workspace's stored commits in version order, each checked before it is yielded (and the row after
    ``upto``, as for a file)."""
    source = f"ledger {workspace_id}"
    checker = ChainChecker(source, workspace_id)
    before_chain = False
    for batch in ledger_records(ledger, workspace_id, None if upto is None else upto + 1):
        for record in batch:
            if record.position == 1 and pre_chain(record):
                before_chain = True
            if before_chain:
                if not pre_chain(record):  # a sealed commit after unsealed ones: nothing links them
                    report = ChainReport(
                        source, workspace_id, record.position - 1, None, _sealed_after_pre_chain(record)
                    )
                    raise ChainBroken(report, action)
                if upto is None or record.position <= upto:
                    yield from _unchecked([record], source, upto, warn=record.position == 1)
                continue
            commit = checker.accept(record)
            if commit is None:
                if upto is not None and checker.problem is not None and checker.problem.version > upto:
                    return
                raise ChainBroken(checker.report(), action)
            if upto is not None and commit.version > upto:
                return
            yield commit


def check_ledger(ledger: EventsourcingLedger, workspace_id: str, upto: int, action: str) -> Commit | None:
    """Check rows 1..``upto`` (and the next); the last commit checked."""
    last = None
    for commit in checked_ledger_commits(ledger, workspace_id, upto, action):
        last = commit
    return last


def pre_chain(record: RawRecord) -> bool:
    """A record of schema version 0, written before commits were hash-chained (docs/adr/0022): it has no
    hash to check."""
    if b'"schema_version":0' not in record.data[:64] and b'"schema_version": 0' not in record.data[:64]:
        return False
    try:
        data = json.loads(record.data)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("schema_version") == 0


def _sealed_after_pre_chain(record: RawRecord) -> Problem:
    return Problem(
        record.position, "unsealed", f"{record.where} is sealed but follows commits written before the chain"
    )


def _unchecked(records: list[RawRecord], source: str, upto: int | None, *, warn: bool = True) -> Iterator[Commit]:
    """Records of before the chain, decoded without a check (there is none to make), with a warning."""
    if warn:
        log.warning("chain_absent", source=source, detail="schema version 0 commits predate the hash chain: unchecked")
    for record in records:
        commit = decode_one(record)
        if upto is not None and commit.version > upto:
            return
        yield commit


class ReadGuard:
    """Checks the chain under what a projection read serves (see the module docstring). One per process and
    ledger; safe to share between threads."""

    def __init__(self, ledger: EventsourcingLedger) -> None:
        self.ledger = ledger
        self._checked: dict[str, tuple[int, int, str | None]] = {}  # workspace -> (id(state), version, hash)
        self._lock = threading.Lock()

    def check_version(self, workspace_id: str, version: int) -> None:
        """A read folded from the stored rows up to ``version``: every row up to it (and the next one)."""
        check_ledger(self.ledger, workspace_id, version, "nothing was shown")

    def check_head(self, workspace_id: str, state: object, version: int) -> None:
        """The head served from ``state``, a process's cached state at ``version``."""
        with self._lock:
            known = self._checked.get(workspace_id)
        start, previous = (known[1], known[2]) if known is not None and known[0] == id(state) else (0, None)
        if start >= version:
            return
        if start == 0:  # the whole chain, as a past version's read checks it (commits before the chain too)
            last = check_ledger(self.ledger, workspace_id, version, "nothing was shown")
            with self._lock:
                self._checked[workspace_id] = (id(state), version, last.hash if last is not None else None)
            return
        checker = ChainChecker(f"ledger {workspace_id}", workspace_id)
        checker.expected, checker.previous_hash = start + 1, previous
        for batch in ledger_records(self.ledger, workspace_id, version, after=start):
            for record in batch:
                if not checker.feed(record):
                    raise ChainBroken(checker.report(), "nothing was shown")
        with self._lock:
            self._checked[workspace_id] = (id(state), checker.expected - 1, checker.previous_hash)


_GUARDS: weakref.WeakKeyDictionary[EventsourcingLedger, ReadGuard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(ledger: EventsourcingLedger) -> ReadGuard:
    """The read guard of a ledger, made at its first read and gone with the ledger."""
    with _GUARDS_LOCK:
        guard = _GUARDS.get(ledger)
        if guard is None:
            guard = _GUARDS[ledger] = ReadGuard(ledger)
        return guard
