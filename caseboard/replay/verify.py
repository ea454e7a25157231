"""Verifying a recorded chain: every commit's hash, every link, and the order of versions.

A chain is intact when, reading in order, the n-th record is version n of one workspace, its ``hash`` is
the SHA-256 of its stored bytes without its final ``,"hash":"<hex>"`` member (``stored_hash``: any change of
the bytes, whitespace included, breaks it), those bytes are the commit's own compact JSON (what
``Commit.content_hash`` hashes), and its ``previous_hash`` is the hash of the record before it
(docs/adr/0047). The first record that fails is reported with what failed:

- ``altered``: the stored bytes no longer match their own hash (an UPDATE of a row, an edited line, spaces
  added);
- ``unsealed``: a record without a hash (written before the chain existed, or stripped);
- ``broken_link``: the record is intact but does not follow the one before (that one was re-sealed
  after an edit, or this one was);
- ``missing``: a version is absent (a deleted row or line); ``out_of_order``: a version is in the wrong place
  (reordered lines, swapped rows); ``foreign``: a record of another workspace; ``unreadable``: not a commit.

``verify_ledger`` also checks every stored snapshot of the workspace (docs/adr/0048): its bytes match its
hash, it names its key, the commit at its version has the hash it was folded from, and folding the chain with
its reducer up to that version dumps exactly its data. The first bad one is reported like a bad commit, at
its version: ``snapshot_altered``, ``snapshot_unbound`` (not bound to this chain) or ``snapshot_diverged``
(intact and bound, but not what the chain folds to).

What a chain cannot prove on its own: that its end was not cut off, or re-sealed after an edit. ``verify``
prints the head hash: keep it elsewhere (a ticket, a log archive). Given such an anchor (``--anchor HASH``),
the chain must hold the commit with that hash, which proves that everything up to it is present and
unchanged; otherwise it is reported as ``anchor_missing`` (docs/adr/0021-verify-and-tamper-evidence.md).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import multiprocessing
import os
from collections.abc import Callable, Container, Iterable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pydantic import TypeAdapter, ValidationError

from caseboard.domain.commit import Commit, SealedChain, stored_hash
from caseboard.domain.errors import CaseboardError, UnknownWorkspace
from caseboard.domain.workspace_key import bare
from caseboard.ledger.base import EventsourcingLedger, SnapshotRejected, StoredSnapshot
from caseboard.reducers import LOAD_ERRORS, REDUCERS, Reducer, WorkspaceState
from caseboard.replay.records import (
    RawRecord,
    UnreadableRecord,
    decode_one,
    file_line_batches,
    file_records,
    ledger_records,
    skip_line,
)

_compact_json = TypeAdapter(Commit).dump_json
"""What ``Commit.stored_json`` makes of a decoded commit, as bytes, without keeping them on the commit."""


@dataclass(frozen=True)
class Problem:
    version: int
    kind: str
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"first_bad_version": self.version, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class ChainReport:
    source: str
    workspace_id: str | None
    commits: int
    head_hash: str | None
    problem: Problem | None
    anchored_version: int | None = None  # the version whose hash is the anchor, when one was given and found
    snapshots: int | None = None  # the snapshots checked (a ledger's, by verify_ledger)

    @property
    def intact(self) -> bool:
        return self.problem is None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source": self.source,
            "workspace_id": self.workspace_id,
            "intact": self.intact,
            "commits": self.commits,
            "head_hash": self.head_hash,
        }
        if self.anchored_version is not None:
            out["anchored_version"] = self.anchored_version
        if self.snapshots is not None:
            out["snapshots"] = self.snapshots
        if self.problem is not None:
            out.update(self.problem.to_dict())
        return out

    def line(self) -> str:
        if self.problem is None:
            intact = f"intact, {self.commits} commits of {self.workspace_id}"
            anchored = "" if self.anchored_version is None else f", anchor found at version {self.anchored_version}"
            return f"{self.source}: {intact}, head hash {self.head_hash}{anchored}"
        problem = self.problem
        return f"{self.source}: NOT INTACT at version {problem.version} ({problem.kind}): {problem.detail}"


def _decoded(record: RawRecord) -> Commit:
    """The commit a record holds, straight from its bytes; a record of an older schema version is parsed and
    upcast (``UnreadableRecord`` when it is no commit)."""
    try:
        return Commit.model_validate_json(record.data)
    except ValidationError:
        return decode_one(record)


class ChainChecker:
    """Takes records in their stored order and stops at the first problem.

    ``accept(record)`` is the check for a reader that folds what it checks (replay): the decoded commit
    when the record holds, None once the chain is broken (``problem`` says why, ``report()`` the rest)."""

    def __init__(self, source: str, workspace_id: str | None = None, anchor: str | None = None) -> None:
        self.source = source
        self.workspace_id = workspace_id
        self.anchor = anchor
        self.anchored_version: int | None = None
        self.expected = 1
        self.previous_hash: str | None = None
        self.problem: Problem | None = None

    def feed(self, record: RawRecord, present: Container[int] | None = None) -> bool:
        """Check the next record; False once the chain is broken. ``present`` (the versions found anywhere in
        a file) tells a missing version from a misplaced one."""
        return self.accept(record, present) is not None

    def accept(self, record: RawRecord, present: Container[int] | None = None) -> Commit | None:
        """``feed``, returning the decoded commit when the record holds (None once the chain is broken)."""
        if self.problem is not None:
            return None
        if record.keyed and record.position != self.expected:
            self._fail("missing", f"version {self.expected} is absent: the next stored row is {record.position}")
            return None
        try:
            commit = _decoded(record)
        except UnreadableRecord as error:
            self._fail("unreadable", str(error))
            return None
        return commit if self._check(commit, record, present) else None

    def report(self) -> ChainReport:
        if self.problem is None and self.anchor is not None and self.anchored_version is None:
            last = self.expected - 1
            self._fail(
                "anchor_missing",
                f"no commit has the anchored hash {self.anchor}: the chain ends at version {last} before "
                f"reaching it (cut off), a commit up to version {last} was re-sealed after an edit, or the anchor "
                "is another workspace's",
                version=last,
            )
        return ChainReport(
            self.source, self.workspace_id, self.expected - 1, self.previous_hash, self.problem, self.anchored_version
        )

    def _check(self, commit: Commit, record: RawRecord, present: Container[int] | None) -> bool:
        where = record.where
        if self.workspace_id is None:
            self.workspace_id = commit.key
        if commit.key != self.workspace_id:  # the key: a tenant's workspace and another's of that id differ
            return self._fail("foreign", f"{where} belongs to {commit.key!r}, not {self.workspace_id!r}")
        if commit.version != self.expected:
            if present is not None and self.expected not in present:
                return self._fail(
                    "missing", f"version {self.expected} is absent; {where} holds version {commit.version}"
                )
            return self._fail("out_of_order", f"{where} holds version {commit.version} where {self.expected} belongs")
        if commit.hash is None:
            return self._fail("unsealed", f"{where} carries no hash (written before the chain, or stripped)")
        if stored_hash(record.data) != commit.hash:
            return self._fail("altered", f"{where}: its stored bytes do not match its recorded hash")
        if _compact_json(commit, exclude_none=True) != record.data:  # the commit's own bytes (``stored_json``)
            return self._fail("altered", f"{where}: its stored bytes are not the JSON of the commit they hold")
        if commit.previous_hash != self.previous_hash:
            return self._fail(
                "broken_link",
                f"{where} does not follow version {self.expected - 1} (previous_hash {commit.previous_hash}, "
                f"expected {self.previous_hash}): version {self.expected - 1} was altered and re-sealed",
                version=self.expected - 1,
            )
        self.previous_hash = commit.hash
        if commit.hash == self.anchor:
            self.anchored_version = commit.version
        self.expected += 1
        return True

    def _fail(self, kind: str, detail: str, version: int | None = None) -> bool:
        self.problem = Problem(max(version if version is not None else self.expected, 1), kind, detail)
        return False


MAX_JOBS = 256
"""The most processes a file is checked with (``caseboard verify --jobs``): more than a machine's cores only adds
processes, and each number up to it costs a seek when the file is cut."""
PARALLEL_MIN_BYTES = 2 * 2**20
"""A file at least this large is checked in segments, one process each (``verify_file``). At 2 MB (~2,700
commits) two processes take 36 ms against 49 in one pass; starting them costs ~10 ms."""
AFTER_ANCHOR_MAX_BYTES = 2 * 2**20
"""With an anchor, the lines after it are checked in one pass when they are fewer bytes than this; when they are
more, the whole file is checked as without the anchored check, in segments (``_anchored``)."""


def verify_file(path: Path, anchor: str | None = None, jobs: int | None = None) -> ChainReport:
    """The chain of a file, read as a stream: each line is decoded once; the file is read a second time only
    when a version is out of place (to tell a missing version from a misplaced one).

    A file of ``PARALLEL_MIN_BYTES`` or more is checked in ``jobs`` segments at once (default: the cores this
    process may run on; 1 checks it in one pass), each in its own process (docs/adr/0182). Every line of a
    segment is checked as the one pass checks it; the first commit of each segment after the first must then
    follow the last of the one before (its version, its ``previous_hash``, its workspace). Only an intact chain
    is reported from the segments: when any check fails, the file is checked again in one pass, so a problem
    is named exactly as that pass names it.

    With an ``anchor``, the lines up to it are first checked by their hashes and links alone (``_anchored``,
    docs/adr/0197): a hash kept elsewhere that they link to shows they are the bytes a commit was sealed from."""
    segments = _segments(path, jobs)
    if anchor is not None:
        anchored = _anchored(path, segments, anchor)
        if anchored is not None:
            return anchored
    if len(segments) > 1:
        joined = _joined(path, segments, anchor)
        if joined is not None:
            return joined
    return _verify(file_records(path), Versions(lambda: file_records(path)), str(path), anchor)


def default_jobs() -> int:
    """The processes ``verify_file`` checks a large file with unless told: the cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Segment:
    """What an intact run of consecutive lines tells about its ends, for joining it to its neighbours."""

    workspace_id: str
    first_version: int
    first_previous_hash: str | None
    last_version: int
    last_hash: str | None
    anchored_version: int | None
    anchor_ends: int | None = None
    """The byte of the file where the line after the anchor's begins (``_linked_segment``)."""


def _segments(path: Path, jobs: int | None) -> list[tuple[int, int]]:
    """``path``'s bytes cut into up to ``jobs`` ranges at line starts; none for a small or unreadable file."""
    jobs = min(jobs if jobs is not None else default_jobs(), MAX_JOBS)
    try:
        size = path.stat().st_size
        if jobs < 2 or size < PARALLEL_MIN_BYTES or "fork" not in multiprocessing.get_all_start_methods():
            return []
        starts = [0]
        with path.open("rb") as handle:
            for number in range(1, jobs):
                handle.seek(size * number // jobs)
                skip_line(handle)  # to the start of the next line, however long this one
                if starts[-1] < handle.tell() < size:
                    starts.append(handle.tell())
    except OSError:
        return []  # the one pass reports it
    return list(zip(starts, [*starts[1:], size], strict=True))


def _joined(path: Path, segments: list[tuple[int, int]], anchor: str | None) -> ChainReport | None:
    """The report of an intact chain from its segments checked in parallel; None when any check fails."""
    intact = _in_processes(_check_segment, path, segments, anchor)
    if intact is None or not _follow(intact):
        return None
    anchored = next((s.anchored_version for s in intact if s.anchored_version is not None), None)
    if anchor is not None and anchored is None:
        return None  # the one pass says how it is missing
    last = intact[-1]
    return ChainReport(str(path), intact[0].workspace_id, last.last_version, last.last_hash, None, anchored)


def _in_processes(
    check: Callable[[str, int, int, str | None], Segment | None],
    path: Path,
    segments: list[tuple[int, int]],
    anchor: str | None,
) -> list[Segment] | None:
    """``check`` of each segment, each in a process of its own; None when one fails or no process can be had."""
    try:
        with ProcessPoolExecutor(len(segments), mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(check, str(path), start, end, anchor) for start, end in segments]
            checked = [future.result() for future in futures]
    except (OSError, CaseboardError, BrokenProcessPool):
        return None  # no processes to be had, or the file went away: the one pass
    return None if any(segment is None for segment in checked) else cast("list[Segment]", checked)


def _follow(intact: list[Segment]) -> bool:
    """Whether each segment's first commit follows the last of the one before, in the same workspace."""
    for before, segment in itertools.pairwise(intact):
        follows = (intact[0].workspace_id, before.last_version + 1, before.last_hash)
        if (segment.workspace_id, segment.first_version, segment.first_previous_hash) != follows:
            return False
    return True


def _check_segment(path: str, start: int, end: int, anchor: str | None) -> Segment | None:
    """The lines of ``path`` from byte ``start`` to ``end``, checked as one pass checks them; the first line of
    a segment after the first is taken as the chain's next link, which the join checks. None at the first
    line that fails."""
    checker = ChainChecker(path, anchor=anchor)
    first: Commit | None = None
    for record in file_records(Path(path), start, end):
        if first is None:
            try:
                first = _decoded(record)
            except UnreadableRecord:
                return None
            if start > 0:
                checker.expected, checker.previous_hash = first.version, first.previous_hash
        if not checker.feed(record):
            return None
    if first is None or checker.workspace_id is None:
        return None
    return Segment(
        checker.workspace_id,
        first.version,
        first.previous_hash,
        checker.expected - 1,
        checker.previous_hash,
        checker.anchored_version,
    )


def _anchored(path: Path, segments: list[tuple[int, int]], anchor: str) -> ChainReport | None:
    """The report of an intact chain that holds ``anchor``, checked up to it by hashes and links alone; None when
    that check fails, the anchor is not found, or ``AFTER_ANCHOR_MAX_BYTES`` or more follow it (docs/adr/0197).

    Each line must hash to the hash it records and name the line before's as its ``previous_hash``
    (``SealedChain``); the first must be version 1. Then the anchor's line is the bytes it was sealed from, and by
    its link so is the line before it, and so on back to version 1: bytes a commit was sealed from are that commit's
    own compact JSON (``Commit._seal``), which is what the one pass checks by decoding them. A line after the anchor
    has no such proof: the lines after it are checked as the one pass checks them."""
    if len(segments) > 1:
        intact = _in_processes(_linked_segment, path, segments, anchor)
    else:
        one = _linked_segment(str(path), 0, None, anchor)
        intact = None if one is None else [one]
    if intact is None or not _follow(intact):
        return None
    found = next((s for s in intact if s.anchor_ends is not None), None)
    if found is None or found.anchored_version is None or found.anchor_ends is None:
        return None  # the one pass says how it is missing
    version, ends, last = found.anchored_version, found.anchor_ends, intact[-1]
    try:
        after = path.stat().st_size - ends
    except OSError:
        return None  # the file went away: the one pass says so
    if after <= 0:
        return ChainReport(str(path), last.workspace_id, last.last_version, last.last_hash, None, version)
    if after >= AFTER_ANCHOR_MAX_BYTES:
        return None  # many lines after the anchor: checked in segments as without one
    checker = ChainChecker(str(path), last.workspace_id, anchor)
    checker.expected, checker.previous_hash, checker.anchored_version = version + 1, anchor, version
    for record in file_records(path, ends):
        if not checker.feed(record):
            return None
    return checker.report()


def _linked_segment(path: str, start: int, end: int | None, anchor: str | None) -> Segment | None:
    """The lines of ``path`` from byte ``start`` to ``end`` checked by their hashes and links alone
    (``SealedChain``); the first line of a segment after the first is taken as the chain's next link, which the
    join checks. None at the first line that is not the next link."""
    chain: SealedChain | None = None
    first: tuple[int, bytes | None] = (1, None)
    anchored = anchor_ends = None
    sought = None if anchor is None else anchor.encode()
    at = start
    for batch in file_line_batches(Path(path), start, end):
        if chain is None:
            chain = None if batch[0] is None else SealedChain.at(batch[0])
            if chain is None or (start == 0 and (chain.version, chain.previous) != first):
                return None
            first = (chain.version, chain.previous)
        follow = chain.follow
        for line in batch:
            if line is None or (recorded := follow(line)) is None:
                return None
            at += len(line) + 1
            if recorded == sought:
                anchored, anchor_ends = chain.version - 1, at
    if chain is None or chain.previous is None:
        return None
    previous = None if first[1] is None else first[1].decode()
    return Segment(chain.key, first[0], previous, chain.version - 1, chain.previous.decode(), anchored, anchor_ends)


def verify_records(records: list[RawRecord], source: str, anchor: str | None = None) -> ChainReport:
    """The chain of a file's records, read in full."""
    return _verify(records, Versions(lambda: records), source, anchor)


class Versions:
    """The versions a file's records hold, worked out at the first question (a version out of place): tells a
    missing version from a misplaced one without decoding every record twice on an intact chain."""

    def __init__(self, records: Callable[[], Iterable[RawRecord]]) -> None:
        self.records = records
        self.found: set[int] | None = None

    def __contains__(self, version: object) -> bool:
        if self.found is None:
            self.found = set()
            for record in self.records():
                try:
                    self.found.add(decode_one(record).version)
                except UnreadableRecord:
                    continue
        return version in self.found


def _verify(records: Iterable[RawRecord], present: Versions, source: str, anchor: str | None) -> ChainReport:
    checker = ChainChecker(source, anchor=anchor)
    empty = True
    for record in records:
        empty = False
        if not checker.feed(record, present):
            break
    if empty:
        checker.problem = Problem(1, "missing", f"{source} holds no commits")
    return checker.report()


def verify_ledger(ledger: EventsourcingLedger, workspace_id: str, anchor: str | None = None) -> ChainReport:
    """The chain of a stored workspace, then its snapshots (module docstring)."""
    checker = ChainChecker(f"ledger {workspace_id}", workspace_id, anchor)
    snapshots = SnapshotCheck(ledger, workspace_id)
    for batch in ledger_records(ledger, workspace_id):
        for record in batch:
            commit = checker.accept(record)
            if commit is None:
                return checker.report()
            snapshots.fold(commit)
    if checker.expected == 1:
        raise UnknownWorkspace(workspace_id)
    report = checker.report()
    problem = report.problem or snapshots.problem or snapshots.beyond(checker.expected - 1)
    return dataclasses.replace(report, problem=problem, snapshots=snapshots.checked)


class SnapshotCheck:
    """Folds the chain with each reducer that has snapshots, and compares each snapshot at its version."""

    def __init__(self, ledger: EventsourcingLedger, workspace_id: str) -> None:
        self.workspace_id = workspace_id
        self.pending: dict[str, list[StoredSnapshot]] = {}
        for name in REDUCERS:
            stored = ledger.stored_snapshots(workspace_id, name)
            if stored:
                self.pending[name] = sorted(stored, key=lambda snapshot: snapshot.version)
        self.states: dict[str, WorkspaceState] = {
            name: REDUCERS[name].initial(bare(workspace_id)) for name in self.pending
        }
        self.checked = 0
        self.problem: Problem | None = None

    def fold(self, commit: Commit) -> None:
        for name, waiting in self.pending.items():
            if not waiting or self.problem is not None:
                continue
            reducer = REDUCERS[name]
            self.states[name] = state = reducer.evolve(self.states[name], commit)
            while waiting and waiting[0].version == commit.version and self.problem is None:
                self._compare(reducer, waiting.pop(0), state, commit)

    def beyond(self, head: int) -> Problem | None:
        """A snapshot of a version the chain does not hold."""
        for waiting in self.pending.values():
            if waiting:
                version = waiting[0].version
                return Problem(
                    version, "snapshot_unbound", f"a snapshot of version {version}; the chain ends at {head}"
                )
        return None

    def _compare(
        self, reducer: Reducer[WorkspaceState], stored: StoredSnapshot, state: WorkspaceState, commit: Commit
    ) -> None:
        where = f"the {reducer.name} snapshot at version {stored.version}"
        self.checked += 1
        try:
            snapshot = stored.open(self.workspace_id)
        except SnapshotRejected as rejected:
            self.problem = Problem(stored.version, "snapshot_altered", f"{where}: {rejected.problem}")
            return
        if snapshot.head_hash != commit.hash:
            detail = f"{where} was folded from head hash {snapshot.head_hash}, not this chain's {commit.hash}"
            self.problem = Problem(stored.version, "snapshot_unbound", detail)
            return
        if _diverged(reducer, snapshot.data, state):
            detail = f"{where} is sealed and bound, but its data is not what the chain folds to"
            self.problem = Problem(stored.version, "snapshot_diverged", detail)


def _diverged(reducer: Reducer[WorkspaceState], data: dict[str, Any], state: WorkspaceState) -> bool:
    """Whether a snapshot's ``data`` is not what the chain folds to, ``state``: its dump as it would be written
    now, or, for a snapshot in the layout before (docs/adr/0181: records as lists of values), the same state."""
    expected = json.loads(json.dumps(reducer.dump(state)))
    if data == expected:
        return False
    if set(data) != set(expected):
        return True
    try:
        again = json.loads(json.dumps(reducer.dump(reducer.load(data))))
    except LOAD_ERRORS:
        return True
    return bool(again != expected)
