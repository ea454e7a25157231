"""Checked reads: replay and projection reads fold only commits whose chain holds (docs/adr/0050).

``verify`` (caseboard.replay.verify) is the auditor's explicit check; this module applies the same check to
the commits a read folds, so that an altered record is never shown as if it were sound:

- ``checked_file_commits`` / ``checked_ledger_commits``: the commits of a replay, each accepted by a
  ``ChainChecker`` (which decodes it once) before it is folded; the first bad one stops the replay with
  ``ChainBroken``, which names the version and the kind exactly as ``verify`` reports them.
- ``ReadGuard``: the one door of every read that serves ledger content over HTTP and MCP (ADR 0144): the
  projection, the view, the timeline, the ledger's pages, the events, the judgments and the health. A read at
  a past version or with another reducer is folded from the stored rows, so every row up to that version is
  checked at each such read. The head served from a process's cache is checked incrementally: the guard
  remembers, per workspace and cached state, the last version whose chain it checked and its hash, and checks
  only the rows after it (a state loaded again, after an eviction, is checked again from version 1). Rows
  served as they are stored (``commits``) are each checked as they are read, with their links to the rows
  on either side. ``recheck`` re-verifies the chains under the cached heads (the server runs it on a
  schedule): a row altered after its state was cached is found there, and from then on the workspace's reads
  answer ``tampered``.
"""

from __future__ import annotations

import json
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

import structlog

from caseboard.domain.commit import Commit
from caseboard.domain.errors import CaseboardError
from caseboard.ledger.base import EventsourcingLedger
from caseboard.replay.records import RawRecord, decode_one, file_records, ledger_records
from caseboard.replay.verify import ChainChecker, ChainReport, Problem, verify_records

log = structlog.get_logger("caseboard.replay")
T = TypeVar("T")
SHOWN = "nothing was shown"


class CachedStates(Protocol):
    """What the guard needs of ``projections.workspaces.Workspaces``."""

    def head_state(self, workspace_id: str, read: Callable[[Any], T]) -> tuple[Any, T]: ...
    def state_at(self, workspace_id: str, version: int | None = None, reducer: str | None = None) -> Any: ...
    def cached_heads(self) -> list[tuple[str, int]]: ...


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
    """Checks the chain under what a read serves (see the module docstring). One per process and ledger; safe
    to share between threads."""

    def __init__(self, ledger: EventsourcingLedger) -> None:
        self.ledger = ledger
        self._checked: dict[str, tuple[int, int, str | None]] = {}  # workspace -> (id(state), version, hash)
        self._broken: dict[str, ChainBroken] = {}  # found by ``recheck`` under a cached head
        self._lock = threading.Lock()
        self.rechecked_at: float | None = None  # time.time() of the last ``recheck`` that ended
        self.rechecked: int = 0  # the workspaces it checked

    def head(self, workspaces: CachedStates, workspace_id: str, read: Callable[[Any], T]) -> T:
        """``read`` of the cached head (``Workspaces.head_state``), its chain checked (``check_head``)."""
        state, answer = workspaces.head_state(workspace_id, read)
        self.check_head(workspace_id, state, state.version)
        return answer

    def state(self, workspaces: CachedStates, workspace_id: str, version: int | None, reducer: str | None) -> Any:
        """The state at ``version`` (the head when None) folded from the stored rows, each row up to it checked."""
        state = workspaces.state_at(workspace_id, version, reducer)
        self.check_version(workspace_id, state.version)
        return state

    def check_version(self, workspace_id: str, version: int) -> None:
        """A read folded from the stored rows up to ``version``: every row up to it (and the next one)."""
        check_ledger(self.ledger, workspace_id, version, SHOWN)

    def commits(self, workspace_id: str, after: int = 0, upto: int | None = None) -> list[Commit]:
        """The stored commits after ``after`` up to ``upto``, each checked as it is read: its bytes against its
        hash, its link to the one before (version ``after`` is read for that) and, when it is served, to the
        one after (version ``upto + 1``, read for that, is not returned). ``ChainBroken`` names the first bad
        one; nothing is returned then."""
        self._refuse_broken(workspace_id)
        start = max(after - 1, 0)
        checker = ChainChecker(f"ledger {workspace_id}", workspace_id)
        checker.expected = start + 1
        out: list[Commit] = []
        for batch in ledger_records(self.ledger, workspace_id, None if upto is None else upto + 1, after=start):
            for record in batch:
                if pre_chain(record):  # a ledger of before the chain: the whole of it, as a projection read does
                    return [
                        c for c in checked_ledger_commits(self.ledger, workspace_id, upto, SHOWN) if c.version > after
                    ]
                if record.position == start + 1 and start > 0:
                    checker.previous_hash = decode_one(record).previous_hash  # its own link lies outside the read
                commit = checker.accept(record)
                if commit is None:
                    raise ChainBroken(checker.report(), SHOWN)
                if commit.version > after and (upto is None or commit.version <= upto):
                    out.append(commit)
        return out

    def check_head(self, workspace_id: str, state: object, version: int) -> None:
        """The head served from ``state``, a process's cached state at ``version``."""
        self._refuse_broken(workspace_id)
        with self._lock:
            known = self._checked.get(workspace_id)
        start, previous = (known[1], known[2]) if known is not None and known[0] == id(state) else (0, None)
        if start >= version:
            return
        if start == 0:  # the whole chain, as a past version's read checks it (commits before the chain too)
            last = check_ledger(self.ledger, workspace_id, version, SHOWN)
            with self._lock:
                self._checked[workspace_id] = (id(state), version, last.hash if last is not None else None)
            return
        checker = ChainChecker(f"ledger {workspace_id}", workspace_id)
        checker.expected, checker.previous_hash = start + 1, previous
        for batch in ledger_records(self.ledger, workspace_id, version, after=start):
            for record in batch:
                if not checker.feed(record):
                    raise ChainBroken(checker.report(), SHOWN)
        with self._lock:
            self._checked[workspace_id] = (id(state), checker.expected - 1, checker.previous_hash)

    def recheck(self, heads: Iterable[tuple[str, int]], pause_s: float = 0.0) -> int:
        """Verify again, from version 1, the chain under each cached head (``Workspaces.cached_heads``): a row
        altered after its state was cached is found here. A workspace found broken answers ``tampered`` to
        every read until a later ``recheck`` finds it intact (its rows restored); the number found broken."""
        found = checked = 0
        for workspace_id, version in heads:
            try:
                check_ledger(self.ledger, workspace_id, version, SHOWN)
            except ChainBroken as error:
                found += 1
                with self._lock:
                    known = workspace_id in self._broken
                    self._broken[workspace_id] = error
                if not known:
                    log.warning(
                        "chain_tampered", workspace_id=workspace_id, first_bad_version=error.version, kind=error.kind
                    )
            else:
                with self._lock:
                    self._broken.pop(workspace_id, None)
            checked += 1
            if pause_s:
                time.sleep(pause_s)  # spread the reads of a sweep, between workspaces
        self.rechecked_at, self.rechecked = time.time(), checked
        return found

    def tampered(self) -> int:
        """How many cached workspaces the last ``recheck`` found broken."""
        with self._lock:
            return len(self._broken)

    def _refuse_broken(self, workspace_id: str) -> None:
        with self._lock:
            error = self._broken.get(workspace_id)
        if error is not None:
            raise error


class ChainWatch:
    """``ReadGuard.recheck`` of a process's cached heads every ``interval_s``, on a thread of its own, until
    ``close`` (ADR 0144). A sweep the ledger cannot answer is logged and tried again at the next one."""

    def __init__(self, guard: ReadGuard, heads: Callable[[], list[tuple[str, int]]], interval_s: float) -> None:
        self.guard = guard
        self.heads = heads
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="caseboard-chain-watch", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.guard.recheck(self.heads())
            except CaseboardError as error:  # the ledger is unreachable: the next sweep tries again
                log.warning("chain_recheck_failed", error=str(error))


_GUARDS: weakref.WeakKeyDictionary[EventsourcingLedger, ReadGuard] = weakref.WeakKeyDictionary()
_GUARDS_LOCK = threading.Lock()


def guard_for(ledger: EventsourcingLedger) -> ReadGuard:
    """The read guard of a ledger, made at its first read and gone with the ledger."""
    with _GUARDS_LOCK:
        guard = _GUARDS.get(ledger)
        if guard is None:
            guard = _GUARDS[ledger] = ReadGuard(ledger)
        return guard
