"""The ledger seam: an append-only record of commits per workspace, and snapshots of derived state.

``EventsourcingLedger`` implements it over any eventsourcing 9.5 application recorder (in memory, SQLite,
PostgreSQL). Each commit is one stored event: originator id = workspace id, originator version = workspace
version, topic = the stable name ``caseboard.commit``. The store's uniqueness on (workspace, version) is
the version authority: a second writer of the same version gets ``VersionTaken``.

A snapshot is derived data bound to the chain it was folded from (docs/adr/0048): its stored bytes are
``{"format": 2, "workspace_id", "reducer", "version", "head_hash", "shape", "data", "hash"}`` (format 2 written
by pydantic's encoder, format 1 by the standard library's: ``SNAPSHOT_FORMAT``, docs/adr/0181), where ``data``
is what the reducer dumped, ``shape`` the fingerprint of the state it was dumped from
(``caseboard/projections/shape.py``; absent from snapshots written before it), ``head_hash`` the hash of
the commit at ``version`` and ``hash`` the SHA-256 of the bytes before it (sealed as a commit is).
``latest_snapshot`` refuses one whose bytes do not match its hash or whose envelope names another
workspace, reducer or version (``SnapshotRejected``); whether it belongs to the chain, and to the
reducer's shape, is for its reader to check.

With a snapshot key (``CASEBOARD_SNAPSHOT_KEY``, ``sign_snapshots``), the envelope also carries ``mac``, the
HMAC-SHA256 under that key of the envelope's bytes without it: a snapshot without it, or whose MAC does not
match, is refused, so that write access to the database without the server's settings cannot forge one
(docs/adr/0142). Without a key the seal is a hash, which anyone who can write the database can recompute.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from eventsourcing.persistence import (
    AggregateRecorder,
    ApplicationRecorder,
    IntegrityError,
    PersistenceError,
    StoredEvent,
)
from pydantic import ValidationError
from pydantic_core import from_json, to_json

from caseboard.domain.commit import COMMIT_TOPIC, Commit, recorded_hash, seal, stored_hash
from caseboard.domain.errors import CaseboardError, LedgerUnavailable
from caseboard.domain.items import WORKSPACE_ID_PATTERN
from caseboard.domain.workspace_key import bare
from caseboard.ledger.group_commit import Meanwhile
from caseboard.ledger.imports import ImportMarks, MemoryMarks
from caseboard.ledger.upcast import upcast_commit

if TYPE_CHECKING:
    from caseboard.ledger.outbox import Outbox

SNAPSHOT_TOPIC = "caseboard.snapshot"
SNAPSHOT_FORMAT = 2
"""Format 2: the envelope written by pydantic's JSON encoder (format 1: the standard library's), which is also
the encoder its MAC is made with. Both are read by pydantic's parser, several times quicker than the standard
library's on a snapshot of megabytes and as exact (docs/adr/0181)."""
_FORMATS = (1, 2)
WORKSPACE_ID = re.compile(WORKSPACE_ID_PATTERN)


class VersionTaken(CaseboardError):
    """Another writer committed this workspace version first."""


class SnapshotRejected(CaseboardError):
    """A stored snapshot that cannot be used: altered, unsealed, or not the one its key names."""

    def __init__(self, version: int, problem: str) -> None:
        super().__init__(f"the snapshot at version {version}: {problem}")
        self.version = version
        self.problem = problem


@dataclass(frozen=True)
class Snapshot:
    version: int
    data: dict[str, Any]
    head_hash: str | None = None
    """The hash of the commit at ``version`` that the state was folded up to (None: not bound, not trusted)."""
    shape: str | None = None
    """The fingerprint of the state's shape ``data`` was dumped from (None: not recorded, not trusted)."""


@dataclass(frozen=True)
class StoredSnapshot:
    """A snapshot row as stored: its key and bytes, before any check."""

    reducer: str
    version: int
    state: bytes

    def open(self, workspace_id: str) -> Snapshot:
        """The snapshot, when its bytes match their hash and its envelope names its key; else
        ``SnapshotRejected``."""
        return open_snapshot(self.state, workspace_id, self.reducer, self.version)


def seal_snapshot(
    workspace_id: str,
    reducer: str,
    version: int,
    head_hash: str | None,
    data: dict[str, Any],
    shape: str | None = None,
    key: bytes | None = None,
) -> bytes:
    """A snapshot's stored bytes: the reducer's ``data`` in an envelope naming what it was folded from, signed
    with ``key`` when there is one, sealed."""
    envelope: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "workspace_id": workspace_id,
        "reducer": reducer,
        "version": version,
        "head_hash": head_hash,
    }
    if shape is not None:
        envelope["shape"] = shape
    envelope["data"] = data
    if key is not None:
        envelope["mac"] = _mac(key, envelope)
    return seal(_dumps(envelope))


def _dumps(envelope: dict[str, Any]) -> bytes:
    """An envelope's compact JSON, by the encoder of its format."""
    if envelope["format"] == 2:
        return to_json(envelope)
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()


def _mac(key: bytes, envelope: dict[str, Any]) -> str:
    """The HMAC-SHA256 under ``key`` of ``envelope``'s bytes without its ``mac`` and ``hash`` members."""
    unsigned = {name: value for name, value in envelope.items() if name not in ("mac", "hash")}
    return hmac.new(key, _dumps(unsigned), hashlib.sha256).hexdigest()


def open_snapshot(state: bytes, workspace_id: str, reducer: str, version: int, key: bytes | None = None) -> Snapshot:
    """The inverse of ``seal_snapshot``, checked: ``SnapshotRejected`` unless the bytes are intact, name
    ``workspace_id``, ``reducer`` and ``version``, and, with ``key``, carry a MAC made with it."""
    recorded = recorded_hash(state)
    if recorded is None:
        raise SnapshotRejected(version, "it carries no hash (written before snapshots were sealed, or stripped)")
    if stored_hash(state) != recorded:
        raise SnapshotRejected(version, "its stored bytes do not match its recorded hash")
    try:
        envelope = from_json(state)
    except ValueError as error:
        raise SnapshotRejected(version, f"not JSON: {error}") from None
    if not isinstance(envelope, dict):
        raise SnapshotRejected(version, "not a JSON object")
    named = (envelope.get("workspace_id"), envelope.get("reducer"), envelope.get("version"))
    if envelope.get("format") not in _FORMATS:
        raise SnapshotRejected(version, f"its format {envelope.get('format')!r} is not one of {_FORMATS}")
    if named != (workspace_id, reducer, version) or not isinstance(envelope.get("data"), dict):
        raise SnapshotRejected(version, f"its envelope names {named!r}, not {(workspace_id, reducer, version)!r}")
    if key is not None:
        mac = envelope.get("mac")
        if not isinstance(mac, str):
            raise SnapshotRejected(version, "it carries no MAC, and this server signs its snapshots")
        if not hmac.compare_digest(mac, _mac(key, envelope)):
            raise SnapshotRejected(version, "its MAC was not made with this server's snapshot key")
    head_hash, shape = envelope.get("head_hash"), envelope.get("shape")
    return Snapshot(
        version,
        envelope["data"],
        head_hash if isinstance(head_hash, str) else None,
        shape if isinstance(shape, str) else None,
    )


Position = tuple[int, int]
"""A place in the notification log: (inserting transaction, notification id) (``outbox.py``)."""

RawRow = tuple[int, str, bytes]
"""A stored commit row, undecoded: version, topic, stored bytes."""

LAST_VERSION = 2**62
"""Past any version a workspace reaches: a read bounded beyond it reads as bounded by it, a bound the databases'
64-bit integers hold (SQLite takes no larger Python int at all)."""


@dataclass(frozen=True)
class Capabilities:
    """What a ledger can do beyond appending and reading, for the layers that choose a path by it."""

    appends_on_loop: bool = False
    """``append_on_loop`` commits from a coroutine with no thread (PostgreSQL, ADR 0035)."""
    live: bool = False
    """Commits announce themselves (``after_append``, LISTEN/NOTIFY) and the outbox reads only final rows."""


class NativeRecorder(Protocol):
    """What caseboard's own recorder (PostgreSQL's ``LedgerRecorder``) offers beyond eventsourcing's
    application recorder: the group-committed append, on threads and on a loop, the final-rows outbox, and
    undecoded rows."""

    after_append: Callable[[], None] | None

    def insert_commit(self, row: tuple[str, int, str, bytes], meanwhile: Meanwhile | None = None) -> int: ...
    async def insert_commit_on_loop(self, row: tuple[str, int, str, bytes]) -> int: ...
    def select_outbox(self, after: Position, limit: int) -> list[tuple[int, int, StoredEvent]]: ...
    def count_outbox_after(self, after: Position) -> int: ...
    def max_notification_id(self) -> int | None: ...
    def select_rows(self, workspace_id: str, after: int, upto: int | None, limit: int) -> list[RawRow]: ...
    def keys_named(self, workspace_id: str) -> list[str]: ...


@runtime_checkable
class NativeSnapshots(Protocol):
    """What caseboard's own snapshot recorder (PostgreSQL's ``SnapshotRecorder``) offers beyond eventsourcing's:
    the latest snapshot's stored bytes, read in binary."""

    def select_latest(self, originator_id: str, upto: int) -> tuple[int, bytes] | None: ...


class Ledger(Protocol):
    def append(self, commit: Commit, meanwhile: Meanwhile | None = None) -> None: ...
    @property
    def appends_on_loop(self) -> bool: ...
    async def append_on_loop(self, commit: Commit) -> None: ...
    def append_many(self, commits: Sequence[Commit]) -> None: ...
    def read(self, workspace_id: str, after: int = 0, upto: int | None = None) -> list[Commit]: ...
    def iter_commits(
        self, workspace_id: str, after: int = 0, upto: int | None = None, batch: int = 5000
    ) -> Iterator[Commit]: ...
    def head(self, workspace_id: str) -> int: ...
    def keys_named(self, workspace_id: str) -> list[str]: ...
    def imported_head(self, key: str) -> int | None: ...
    def save_snapshot(
        self,
        workspace_id: str,
        reducer: str,
        version: int,
        data: dict[str, Any],
        head_hash: str | None = None,
        shape: str | None = None,
    ) -> None: ...
    def latest_snapshot(self, workspace_id: str, reducer: str, upto: int) -> Snapshot | None: ...
    def stored_snapshots(self, workspace_id: str, reducer: str) -> list[StoredSnapshot]: ...
    def close(self) -> None: ...


def commit_row(commit: Commit) -> tuple[str, int, str, bytes]:
    """A commit as the ledger stores it: (workspace key, version, topic, stored JSON)."""
    return (commit.key, commit.version, COMMIT_TOPIC, commit.stored_json)


def _append_error(commit: Commit, error: PersistenceError) -> CaseboardError:
    """A recorder's error of an append as the ledger's: a taken version, or the ledger unavailable."""
    if isinstance(error, IntegrityError):
        return VersionTaken(f"{commit.key} version {commit.version} is taken")
    return LedgerUnavailable(f"the ledger refused the commit: {error}")


def encode_commit(commit: Commit) -> StoredEvent:
    return StoredEvent(*commit_row(commit))


def decode_commit(stored: StoredEvent) -> Commit:
    """The commit a stored record holds; ``LedgerUnavailable`` when it is not one, or not of the workspace
    whose key it is stored under (a commit cannot be moved into another tenant's namespace: its
    ``tenant_id`` is sealed in its hash)."""
    if stored.topic != COMMIT_TOPIC:
        raise LedgerUnavailable(f"unexpected record topic {stored.topic!r} in the ledger")
    try:  # straight from the bytes (pydantic's JSON parser, which shares repeated short strings)
        commit = Commit.model_validate_json(stored.state)
    except ValidationError:  # an older schema version: parsed, upcast, validated
        commit = Commit.model_validate(upcast_commit(json.loads(stored.state)))
    if commit.key != stored.originator_id:
        raise LedgerUnavailable(f"a commit of {commit.key!r} is stored under {stored.originator_id!r}")
    return commit


class EventsourcingLedger:
    def __init__(
        self,
        events: ApplicationRecorder,
        snapshots: AggregateRecorder,
        closer: Any = None,
        *,
        native: NativeRecorder | None = None,
        names: Callable[[str], list[str]] | None = None,
        marks: ImportMarks | MemoryMarks | None = None,
    ) -> None:
        """``native``: caseboard's own recorder behind ``events`` when it is one (``stores.py`` knows);
        ``names``: a query for ``keys_named`` (else the notification log is read through); ``marks``: which
        workspaces were imported as records (``imports.py``; none are without it)."""
        self.events = events
        self._marks = marks if marks is not None else MemoryMarks()
        self._names = names if names is not None else (native.keys_named if native is not None else None)
        self.snapshots = snapshots
        self._closer = closer
        self._native = native
        self.capabilities = Capabilities(appends_on_loop=native is not None, live=native is not None)
        self._snapshot_key: bytes | None = None

    def sign_snapshots(self, key: bytes | None) -> None:
        """Sign the snapshots written from now on with ``key``, and use only those it signed (module docstring);
        None: sealed with a hash only."""
        self._snapshot_key = key

    def after_append(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` after each append has committed, outside its transaction (the dispatcher's wake-up,
        ADR 0012); only a ``live`` ledger can."""
        if self._native is None:
            raise RuntimeError("this ledger's commits do not announce themselves: poll its outbox")
        self._native.after_append = wake

    def outbox(self) -> Outbox:
        """The ledger's notification log, in an order no later commit can jump behind (``outbox.py``)."""
        from caseboard.ledger.outbox import FinalRowsOutbox, SequentialOutbox

        return FinalRowsOutbox(self._native) if self._native is not None else SequentialOutbox(self.events)

    def raw_rows(
        self, workspace_id: str, after: int = 0, upto: int | None = None, batch: int = 5000
    ) -> Iterator[list[RawRow]]:
        """The stored rows of a workspace after version ``after``, in version order, a batch at a time,
        undecoded (for audits that check the stored bytes before anything parses them)."""
        after, upto = min(after, LAST_VERSION), None if upto is None else min(upto, LAST_VERSION)
        while True:
            if self._native is not None:
                rows = self._native.select_rows(workspace_id, after, upto, batch)
            else:
                selected = self._select(workspace_id, gt=after, lte=upto, limit=batch)
                rows = [(row.originator_version, row.topic, bytes(row.state)) for row in selected]
            if rows:
                yield rows
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def append(self, commit: Commit, meanwhile: Meanwhile | None = None) -> None:
        """Append one commit, or raise ``VersionTaken`` when its version is taken. ``meanwhile`` (which must not
        raise) is called while the commit is in flight, when the ledger can and this thread writes it (PostgreSQL;
        ADR 0180); otherwise never: the caller tells by what it did."""
        try:
            if self._native is not None:
                self._native.insert_commit(commit_row(commit), meanwhile)
                return
            self.events.insert_events([encode_commit(commit)])
        except PersistenceError as error:  # IntegrityError included
            raise _append_error(commit, error) from error

    @property
    def appends_on_loop(self) -> bool:
        """``append_on_loop`` needs no thread (PostgreSQL); elsewhere, call ``append`` from a thread."""
        return self.capabilities.appends_on_loop

    async def append_on_loop(self, commit: Commit) -> None:
        """``append`` for a coroutine on the running event loop, when ``appends_on_loop``."""
        if self._native is None:
            raise RuntimeError("this ledger appends from threads only: call append")
        try:
            await self._native.insert_commit_on_loop(commit_row(commit))
        except PersistenceError as error:  # IntegrityError included
            raise _append_error(commit, error) from error

    def append_many(self, commits: Sequence[Commit]) -> None:
        """Several commits in one transaction: all land or none does (imports). A workspace id must be one a
        route can name (``WORKSPACE_ID_PATTERN``, docs/adr/0046), as the coordinator's are."""
        for commit in commits[:1]:
            if not WORKSPACE_ID.fullmatch(commit.workspace_id):
                raise CaseboardError(
                    f"workspace id {commit.workspace_id!r}: use letters, digits and . _ : @ - (no '/'), at most 128"
                )
        try:
            self.events.insert_events([encode_commit(commit) for commit in commits])
        except IntegrityError as error:
            raise VersionTaken(f"{commits[0].key}: a version of the import is taken") from error
        except PersistenceError as error:
            raise LedgerUnavailable(f"the ledger refused the commits: {error}") from error

    def mark_imported(self, key: str, head_version: int, source_head_hash: str | None) -> None:
        """Record that ``key`` is being imported as a record ending at ``head_version`` (before its commits)."""
        self._marks.mark(key, head_version, source_head_hash)

    def unmark_imported(self, key: str) -> None:
        """Forget an import whose commits did not land."""
        self._marks.unmark(key)

    def imported_head(self, key: str) -> int | None:
        """The version the imported record ``key`` ends at, None when it was never imported: while its head is
        that version the workspace is a record (docs/adr/0158)."""
        return self._marks.head(key)

    def read(self, workspace_id: str, after: int = 0, upto: int | None = None) -> list[Commit]:
        return list(self.iter_commits(workspace_id, after, upto))

    def iter_commits(
        self, workspace_id: str, after: int = 0, upto: int | None = None, batch: int = 5000
    ) -> Iterator[Commit]:
        for rows in self.raw_rows(workspace_id, after, upto, batch):
            for version, topic, state in rows:
                yield decode_commit(StoredEvent(workspace_id, version, topic, state))

    def head(self, workspace_id: str) -> int:
        rows = self._select(workspace_id, desc=True, limit=1)
        return rows[0].originator_version if rows else 0

    def keys_named(self, workspace_id: str) -> list[str]:
        """The keys of the opened workspaces whose id is ``workspace_id``, sorted: its legacy key (the bare id)
        and ``<tenant>/<id>`` for each tenant that opened one (``caseboard.domain.workspace_key``). For an
        operator who names a workspace by its id alone; a tenant's caller never needs it."""
        if self._names is not None:
            return self._names(workspace_id)
        found: set[str] = set()
        start = 1
        try:
            while True:
                batch = self.events.select_notifications(start, 5000, topics=[COMMIT_TOPIC])
                for notification in batch:
                    key = str(notification.originator_id)
                    if notification.originator_version == 1 and bare(key) == workspace_id:
                        found.add(key)
                if len(batch) < 5000:
                    return sorted(found)
                start = batch[-1].id + 1
        except PersistenceError as error:
            raise LedgerUnavailable(f"the ledger could not be read: {error}") from error

    def save_snapshot(
        self,
        workspace_id: str,
        reducer: str,
        version: int,
        data: dict[str, Any],
        head_hash: str | None = None,
        shape: str | None = None,
    ) -> None:
        """Store the state ``reducer`` folded up to ``version``, bound to ``head_hash``, the hash of the commit
        at ``version``, and dumped from a state of the shape ``shape`` fingerprints."""
        stored = StoredEvent(
            originator_id=f"{reducer}/{workspace_id}",
            originator_version=version,
            topic=SNAPSHOT_TOPIC,
            state=seal_snapshot(workspace_id, reducer, version, head_hash, data, shape, self._snapshot_key),
        )
        try:
            self.snapshots.insert_events([stored])
        except IntegrityError:
            pass  # another process snapshotted the same version: same content, nothing to do
        except PersistenceError as error:
            raise LedgerUnavailable(f"the snapshot store refused a snapshot: {error}") from error

    def latest_snapshot(self, workspace_id: str, reducer: str, upto: int) -> Snapshot | None:
        """The latest snapshot at or before ``upto``, checked by ``open_snapshot`` (``SnapshotRejected``)."""
        originator_id = f"{reducer}/{workspace_id}"
        upto = min(upto, LAST_VERSION)
        if isinstance(self.snapshots, NativeSnapshots):
            latest = self.snapshots.select_latest(originator_id, upto)
        else:
            try:
                rows = self.snapshots.select_events(originator_id, lte=upto, desc=True, limit=1)
            except PersistenceError as error:
                raise LedgerUnavailable(f"the snapshot store could not be read: {error}") from error
            latest = (rows[0].originator_version, bytes(rows[0].state)) if rows else None
        if latest is None:
            return None
        version, state = latest
        return open_snapshot(state, workspace_id, reducer, version, self._snapshot_key)

    def stored_snapshots(self, workspace_id: str, reducer: str) -> list[StoredSnapshot]:
        """Every snapshot of a workspace by one reducer, oldest first, unchecked (for ``verify``)."""
        try:
            rows = self.snapshots.select_events(f"{reducer}/{workspace_id}")
        except PersistenceError as error:
            raise LedgerUnavailable(f"the snapshot store could not be read: {error}") from error
        return [StoredSnapshot(reducer, row.originator_version, bytes(row.state)) for row in rows]

    def close(self) -> None:
        if self._closer is not None:
            self._closer()

    def _select(self, workspace_id: str, **kwargs: Any) -> Sequence[StoredEvent]:
        try:
            return self.events.select_events(workspace_id, **kwargs)
        except PersistenceError as error:
            raise LedgerUnavailable(f"the ledger could not be read: {error}") from error
