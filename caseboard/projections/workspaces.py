"""Projections kept up to date per commit, and any past version rebuilt on demand.

The current state of each workspace a process touches is cached and folded forward commit by commit, so the
cost of a commit does not grow with the ledger. Snapshots are written at geometrically spaced versions
(every ``max(snapshot_min, version // SNAPSHOT_SPACING)`` commits): loading a cold workspace reads the latest
snapshot, whose records are decoded when first read, and folds at most about a twentieth of its ledger; the
amortized cost of snapshotting stays flat as the state grows (docs/adr/0181).

A snapshot is only a shortcut, never a source (docs/adr/0048): it is used only when its bytes match its hash,
the commit at its version in the ledger has the hash it was folded up to, the state it loads is at that
version, its tenant is the one the chain opened the workspace in, and it was dumped from a state of the
reducer's shape (its fingerprint, ``shape.py``: never misread into another). Any other snapshot is logged
(``snapshot_rejected``) and the state is folded from the ledger.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

import structlog

from caseboard.domain.commit import Commit
from caseboard.domain.errors import AmbiguousWorkspace, LedgerUnavailable, UnknownWorkspace, VersionOutOfRange
from caseboard.domain.workspace_key import bare, scoped, tenant_part
from caseboard.ledger.base import Ledger, Snapshot, SnapshotRejected, VersionTaken
from caseboard.projections.shape import shape_fingerprint
from caseboard.reducers import LOAD_ERRORS, Reducer, WorkspaceState, get_reducer, tenant_of

log = structlog.get_logger("caseboard.projections")

CONTENDED_S = 10.0
"""How long after another process's writer took a version first this process's event loop leaves that
workspace's commits to threads (``writing_on_loop``): a race lost on the loop is decided again on a thread."""
SNAPSHOT_SPACING = 20
"""A snapshot is written every ``max(snapshot_min, version // SNAPSHOT_SPACING)`` commits: a cold load folds at
most a twentieth of the ledger after its snapshot (docs/adr/0181)."""
CACHE_COMMITS = 250_000
"""The commits the cached states may hold between them (``Workspaces.max_commits``, ``CASEBOARD_CACHE_COMMITS``):
a state's memory follows the commits folded into it (~550 bytes a commit of one observation, ADR 0182), so
this bounds a process's cache whatever the sizes of its workspaces; ``capacity`` bounds their number."""
LOCATE_WAIT_S = 30.0
"""How long ``locate`` waits for a workspace this process is writing (the command line's: it rarely does)."""

T = TypeVar("T")


class Unit:
    """One writer's hold on a workspace (``Workspaces.writing``): the state to decide on, and ``save``."""

    def __init__(self, workspaces: Workspaces, workspace_id: str) -> None:
        self.workspaces = workspaces
        self.workspace_id = workspace_id
        self.saves = 0
        """Appends tried in this unit (each but the last lost its version to another process's writer)."""

    @property
    def state(self) -> WorkspaceState:
        """The cached state, loaded if need be (decide on it; never modify it)."""
        return self.workspaces.current(self.workspace_id)

    def catch_up(self) -> bool:
        """Fold what other writers committed since the cached version; True when there was any."""
        return self.workspaces.catch_up(self.workspace_id)

    def save(self, commit: Commit) -> bool:
        """Append ``commit``, then fold it: True when it landed, False when another writer took its version
        first (the state is then caught up: decide again). When the append fails otherwise, the cached state
        is dropped (whether the commit landed is unknown: the next use loads it from the ledger) and the
        error raised."""
        workspaces = self.workspaces
        self.saves += 1
        ahead = Ahead(workspaces, commit) if workspaces.uncontended(self.workspace_id) else None
        try:
            workspaces.ledger.append(commit, ahead)
        except VersionTaken:
            if ahead is not None and ahead.folded:
                workspaces.forget(self.workspace_id)  # it holds a commit that did not land: loaded afresh
                workspaces.note_lost(self.workspace_id)
            else:
                workspaces.lost_race(self.workspace_id)
            if self.saves > 3:  # a crowd of writers of other processes: spread them out a little
                time.sleep(random.uniform(0, 0.002 * min(self.saves, 10)))
            return False
        except BaseException:
            workspaces.forget(self.workspace_id)
            raise
        workspaces.landed(commit, folded=ahead is not None and ahead.folded)
        return True

    async def save_on_loop(self, commit: Commit) -> bool:
        """``save`` for a coroutine on the running event loop, with no thread (``Ledger.append_on_loop``). A
        lost race is only noted: catching up reads the ledger, which the caller's thread does."""
        self.saves += 1
        try:
            await self.workspaces.ledger.append_on_loop(commit)
        except VersionTaken:
            self.workspaces.note_lost(self.workspace_id)
            return False
        except BaseException:
            self.workspaces.forget(self.workspace_id)
            raise
        self.workspaces.landed(commit)
        return True


class Ahead:
    """A commit folded into its workspace's cached state while its INSERT is in flight (``Ledger.append``'s
    ``meanwhile``; docs/adr/0180): the fold is off the commit's path, taking the round trip's time. Only the
    workspace's writer, holding its lock, sees the state meanwhile; when the append fails the writer drops the
    state (``Unit.save``), so nothing reads a commit that did not land. A fold that fails drops it too, and the
    commit is folded after landing, as without this."""

    __slots__ = ("commit", "folded", "workspaces")

    def __init__(self, workspaces: Workspaces, commit: Commit) -> None:
        self.workspaces = workspaces
        self.commit = commit
        self.folded = False

    def __call__(self) -> None:
        commit = self.commit
        state = self.workspaces.cached(commit.key)
        if commit.version == 1 or state is None or state.version != commit.version - 1:
            return  # an opening (read without the lock: ``cached_key``), or not cached: folded after landing
        self.workspaces.in_flight[commit.key] = commit.version
        try:
            self.workspaces.reducer.evolve(state, commit)
        except Exception as error:  # the append is in flight: the state is dropped, not the commit
            self.workspaces.forget(commit.key)
            log.warning(
                "fold_ahead_failed", workspace_id=commit.key, workspace_version=commit.version, error=str(error)
            )
            return
        self.folded = True


class Workspaces:
    def __init__(
        self,
        ledger: Ledger,
        reducer: Reducer[WorkspaceState] | None = None,
        *,
        snapshot_min: int = 400,
        capacity: int = 1024,
        max_commits: int = CACHE_COMMITS,
    ) -> None:
        """``capacity``: the most workspaces cached; ``max_commits``: the most commits folded into them together
        (``CACHE_COMMITS``). Past either, the least recently used are dropped, never the one just used."""
        self.ledger = ledger
        self.reducer = reducer or get_reducer()
        self.snapshot_min = snapshot_min
        self.capacity = capacity
        self.max_commits = max_commits
        self._states: OrderedDict[str, WorkspaceState] = OrderedDict()
        self._snapshotted: dict[str, int] = {}
        self._lost: dict[str, float] = {}  # when another process last took a version first (monotonic)
        self._locks: dict[str, threading.Lock] = {}
        self.in_flight: dict[str, int] = {}
        """Per workspace, the version folded into its cached state while its append is in flight (``Ahead``)."""
        self._imported: dict[str, int | None] = {}
        self._turns: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}
        self._guard = threading.Lock()
        self._located: dict[str, str] = {}  # bare id -> the one key it names, for operators (``locate``)

    @contextmanager
    def writing(self, workspace_id: str) -> Iterator[Unit]:
        """The unit of work of one of this process's writers of a workspace (the database arbitrates across
        processes); it waits for the workspace's other writers in this process."""
        with self.lock(workspace_id):
            yield Unit(self, workspace_id)

    @asynccontextmanager
    async def writing_on_loop(self, workspace_id: str) -> AsyncIterator[Unit | None]:
        """The unit of work of a coroutine on the running loop, after the loop's other writers of the workspace
        (ADR 0035); None, with nothing held, when it cannot be had at once: a thread of this process holds
        the workspace, its state is not cached, other processes race for it, or a snapshot is due."""
        async with self.turn(workspace_id):
            lock = self.lock(workspace_id)
            if not lock.acquire(blocking=False):
                yield None
                return
            try:
                state = self.cached(workspace_id)
                usable = (
                    state is not None
                    and self.uncontended(workspace_id)
                    and not self.snapshot_due(workspace_id, state.version + 1)
                )
                yield Unit(self, workspace_id) if usable else None
            finally:
                lock.release()

    def head_state(self, workspace_id: str, read: Callable[[WorkspaceState], T]) -> tuple[WorkspaceState, T]:
        """``read`` of the state caught up with the ledger, under the workspace's lock (the state may move on
        once it is released: ``read`` takes what the caller needs from it)."""
        with self.lock(workspace_id):
            self.catch_up(workspace_id)
            state = self.current(workspace_id)
            return state, read(state)

    def is_record(self, key: str, state: WorkspaceState) -> bool:
        """Whether ``state`` (of the workspace ``key``) is an imported record: its head is the version its
        import ended at, so nothing but an operator's ``reopen`` has been committed since (docs/adr/0158). The
        ledger is asked once per opened workspace and process: an import marks a workspace before its commits
        land, so an opened workspace that has no mark never gets one. A workspace loaded opened has its mark read
        with it (``current``): its first commit then costs what any other does."""
        return state.opened and self.imported_head(key) == state.version

    def opened_here(self, key: str) -> None:
        """This process opened ``key``: it was not imported (``is_record`` need not ask the ledger)."""
        self._imported[key] = None

    def knows_record(self, key: str) -> bool:
        """Whether ``is_record`` can answer for ``key`` without asking the ledger (for the event loop)."""
        return key in self._imported

    def imported_head(self, key: str) -> int | None:
        """``Ledger.imported_head`` of an opened workspace, asked once per process (see ``is_record``)."""
        if key not in self._imported:
            self._imported[key] = self.ledger.imported_head(key)
        return self._imported[key]

    def cached_tenant(self, workspace_id: str) -> str | None:
        """The tenant of the cached state of an opened workspace, without waiting; None when not cached."""
        try:
            state = self.cached(workspace_id)
        except KeyError:  # evicted by another thread as it was looked up
            return None
        return tenant_of(state) if state is not None else None

    def tenant_of(self, workspace_id: str, wait_s: float) -> str | None:
        """The tenant a workspace belongs to (its scope.tenant_id), or None when it does not exist. An opened
        workspace's cached state answers without its lock (its tenant never changes); otherwise it is loaded
        under the lock, waiting for it at most ``wait_s`` (then ``LedgerUnavailable``: ADR 0040)."""
        tenant = self.cached_tenant(workspace_id)
        if tenant is not None:
            return tenant
        lock = self.lock(workspace_id)
        if not lock.acquire(timeout=wait_s):
            raise LedgerUnavailable(f"workspace {workspace_id} stayed busy for {wait_s:g} s; retry shortly")
        try:
            state = self.current(workspace_id)
            if not state.opened:
                self.catch_up(workspace_id)
                state = self.current(workspace_id)
            if not state.opened:
                self.forget(workspace_id)
            return tenant_of(state)
        finally:
            lock.release()

    def cached_key(self, tenant_id: str, workspace_id: str) -> str | None:
        """``resolve`` from the cache alone, without waiting: None when neither key's opened state is cached."""
        key = scoped(tenant_id, workspace_id)
        if self.cached_tenant(key) == tenant_id:
            return key
        if self.cached_tenant(workspace_id) == tenant_id:
            return workspace_id
        return None

    def resolve(self, tenant_id: str, workspace_id: str, wait_s: float) -> str | None:
        """The key of the workspace a caller of ``tenant_id`` names ``workspace_id``, or None when the tenant has
        no such workspace (whatever other tenants have): its own key ``<tenant>/<id>``, else the bare key of a
        workspace of the operator's namespace (opened on the command line, or before ids were scoped) that is in
        that tenant (docs/adr/0130). Opening either is refused while the other is open in the tenant; should
        two openings race, the tenant's own key is the one found, always."""
        cached = self.cached_key(tenant_id, workspace_id)
        if cached is not None:
            return cached
        for key in (scoped(tenant_id, workspace_id), workspace_id):
            if self.tenant_of(key, wait_s) == tenant_id:
                return key
        return None

    def locate(self, name: str) -> str:
        """The key of the workspace an operator names: ``<tenant>/<id>``, or a bare id, which is the key of a
        workspace of the operator's namespace when that exists, else of the one tenant's namespace that has
        it (``AmbiguousWorkspace`` when several do). A name that no workspace has is returned as its own key:
        reading it finds an unknown workspace. A bare name found in one tenant is remembered, so a process
        that submits under it asks the ledger once; a second tenant's opening of that id seen by this process
        makes it ambiguous again, one made by another process is not seen (name ``<tenant>/<id>`` to be
        exact: docs/adr/0130). ``<tenant>/<id>`` names what that tenant's keys see by that id over HTTP
        (``resolve``): the tenant's own workspace, else one of the operator's namespace in that tenant (a schema 1
        export imported under its bare id)."""
        tenant = tenant_part(name)
        if tenant is not None:  # as a tenant's key sees it: its own, else the operator's in that tenant
            return self.resolve(tenant, name.rpartition("/")[2], LOCATE_WAIT_S) or name
        if self.cached_tenant(name) is not None:
            return name
        known = self._located.get(name)
        if known is not None:
            return known
        keys = self.ledger.keys_named(name)
        if name in keys or not keys:
            return name
        if len(keys) > 1:
            raise AmbiguousWorkspace(name, [tenant_part(key) or "" for key in keys])
        self._located[name] = keys[0]
        return keys[0]

    def lock(self, workspace_id: str) -> threading.Lock:
        """Serializes this process's writers of one workspace (the database arbitrates across processes)."""
        with self._guard:
            return self._locks.setdefault(workspace_id, threading.Lock())

    def turn(self, workspace_id: str) -> asyncio.Lock:
        """Serializes the running event loop's writers of one workspace, before they take ``lock``: a coroutine
        waits for its turn without blocking the loop (ADR 0035)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            turn = self._turns.get(workspace_id)
            if turn is None or turn[0] is not loop:
                turn = self._turns[workspace_id] = (loop, asyncio.Lock())
            return turn[1]

    def current(self, workspace_id: str) -> WorkspaceState:
        """The cached state (callers hold ``lock(workspace_id)`` and must not modify it)."""
        state = self.cached(workspace_id)
        if state is None:
            state = self._load(workspace_id, self.reducer, None)
            if state.opened:
                self.imported_head(workspace_id)  # read with the state, not at its first commit (``is_record``)
            self._snapshotted[workspace_id] = state.version
            self._remember(workspace_id, state)
        return state

    def cached(self, workspace_id: str) -> WorkspaceState | None:
        """The cached state, or None when it would have to be loaded (the same rules as ``current``)."""
        state = self._states.get(workspace_id)
        if state is not None:
            self._states.move_to_end(workspace_id)
        return state

    def cached_heads(self) -> list[tuple[str, int]]:
        """The key and version of each cached state, most recently used last (what a chain recheck verifies):
        the version before a commit still in flight (``Ahead``), which the ledger may not hold yet."""
        heads = []
        for key, state in tuple(self._states.items()):
            version = state.version
            heads.append((key, version - 1 if self.in_flight.get(key) == version else version))
        return heads

    def snapshot_due(self, workspace_id: str, version: int) -> bool:
        """Whether ``committed`` writes a snapshot after the commit of ``version``."""
        last = self._snapshotted.get(workspace_id, 0)
        return version - last >= max(self.snapshot_min, version // SNAPSHOT_SPACING)

    def catch_up(self, workspace_id: str) -> bool:
        """Fold what other writers committed since the cached version; True when there was any."""
        state = self.current(workspace_id)
        missed = self.ledger.read(workspace_id, after=state.version)
        for commit in missed:
            self.reducer.evolve(state, commit)
        return bool(missed)

    def uncontended(self, workspace_id: str) -> bool:
        """No other process's writer has taken a version from this process's writers of the workspace for
        ``CONTENDED_S`` (``writing_on_loop`` then commits on the loop)."""
        lost = self._lost.get(workspace_id)
        return lost is None or time.monotonic() - lost > CONTENDED_S

    def note_lost(self, workspace_id: str) -> None:
        """Another process's writer took the version a commit of this process was appended at."""
        self._lost[workspace_id] = time.monotonic()

    def lost_race(self, workspace_id: str) -> None:
        """A commit of this process found its version taken: fold what the winner committed."""
        self.note_lost(workspace_id)
        self.catch_up(workspace_id)

    def landed(self, commit: Commit, *, folded: bool = False) -> None:
        """A commit of this process has landed (the caller holds the lock): fold it into the cached state unless
        it was ``folded`` while in flight (``Ahead``), and write a snapshot when one is due."""
        key = commit.key
        if commit.version == 1 and self._located.get(commit.workspace_id, key) != key:
            self._located.pop(commit.workspace_id, None)  # a second tenant opened that id: ambiguous from now on
        self.in_flight.pop(key, None)
        state = self.current(key)
        if not folded:
            if state.version >= commit.version:
                return  # evicted and reloaded meanwhile, with the commit in it: the snapshot is left for later
            self.reducer.evolve(state, commit)
        if self.snapshot_due(key, commit.version):
            self._snapshotted[key] = commit.version
            try:
                data = self.reducer.dump(state)
                shape = shape_fingerprint(type(state))
                self.ledger.save_snapshot(key, self.reducer.name, commit.version, data, commit.hash, shape)
            except LedgerUnavailable as error:
                # The commit has landed; a snapshot is only a shortcut for later loads. Failing the caller
                # here would report a committed contribution as failed, so the snapshot is skipped.
                log.warning("snapshot_skipped", workspace_id=key, error=str(error))
            else:
                log.debug("snapshot_written", workspace_id=key, workspace_version=commit.version)
            self._trim()  # a state grows between loads: its weight is checked as often as it is snapshotted

    def forget(self, workspace_id: str) -> None:
        self._states.pop(workspace_id, None)
        self.in_flight.pop(workspace_id, None)

    def state_at(self, workspace_id: str, version: int | None = None, reducer: str | None = None) -> WorkspaceState:
        """The state at ``version`` (the head when None), folded by the named reducer."""
        chosen = self.chosen(reducer)
        head = self.ledger.head(workspace_id)
        if head == 0:
            raise UnknownWorkspace(workspace_id)
        if version is not None and not 1 <= version <= head:
            raise VersionOutOfRange(workspace_id, version, head)
        return self._load(workspace_id, chosen, version or head)

    def show(self, workspace_id: str, version: int | None = None, reducer: str | None = None) -> dict[str, Any]:
        chosen = self.chosen(reducer)
        return chosen.render(self.state_at(workspace_id, version, chosen.name))

    def chosen(self, reducer: str | None) -> Reducer[WorkspaceState]:
        """The reducer named ``reducer``: this one's own (the current reducer) when None or its name, else the
        registered one of that name (``UnknownReducer`` naming the known ones)."""
        return self.reducer if reducer is None or reducer == self.reducer.name else get_reducer(reducer)

    def _load(self, workspace_id: str, reducer: Reducer[WorkspaceState], upto: int | None) -> WorkspaceState:
        state = self._from_snapshot(workspace_id, reducer, upto) or reducer.initial(bare(workspace_id))
        for commit in self.ledger.iter_commits(workspace_id, after=state.version, upto=upto):
            reducer.evolve(state, commit)
        return state

    def _from_snapshot(
        self, workspace_id: str, reducer: Reducer[WorkspaceState], upto: int | None
    ) -> WorkspaceState | None:
        """The state of the latest snapshot at or before ``upto`` when it holds (module docstring), else None."""
        version: int | None = None
        try:
            snapshot = self.ledger.latest_snapshot(workspace_id, reducer.name, upto if upto is not None else 2**62)
            if snapshot is None:
                return None
            version = snapshot.version
            return self._bound(workspace_id, reducer, snapshot)
        except SnapshotRejected as rejected:
            problem, version = rejected.problem, rejected.version
        except LOAD_ERRORS as error:
            problem = f"the reducer cannot load it: {error}"
        log.warning(
            "snapshot_rejected", workspace_id=workspace_id, reducer=reducer.name, version=version, problem=problem
        )
        return None

    def _bound(self, workspace_id: str, reducer: Reducer[WorkspaceState], snapshot: Snapshot) -> WorkspaceState:
        """The snapshot's state, if the chain vouches for it: ``SnapshotRejected`` otherwise."""
        version = snapshot.version
        if snapshot.head_hash is None:
            raise SnapshotRejected(version, "it is not bound to the chain (no head hash)")
        expected = shape_fingerprint(type(reducer.initial(bare(workspace_id))))
        if snapshot.shape != expected:
            raise SnapshotRejected(version, f"it was dumped from a state of shape {snapshot.shape}, not {expected}")
        folded_from = self.ledger.read(workspace_id, after=version - 1, upto=version)
        if not folded_from or folded_from[0].hash != snapshot.head_hash:
            raise SnapshotRejected(version, f"the ledger's commit {version} is not the one it was folded from")
        state = reducer.load(snapshot.data)
        if state.version != version or state.workspace_id != bare(workspace_id):
            raise SnapshotRejected(version, f"it holds version {state.version} of {state.workspace_id!r}")
        if tenant_of(state) != self._opened_in(workspace_id):
            raise SnapshotRejected(version, "its tenant is not the one the chain opened the workspace in")
        return state

    def _opened_in(self, workspace_id: str) -> str | None:
        """The tenant of the workspace's first commit (its open item), as the chain records it."""
        first = self.ledger.read(workspace_id, upto=1)
        scope = getattr(first[0].items[0], "scope", None) if first and first[0].items else None
        return None if scope is None else str(scope.tenant_id)

    def _remember(self, workspace_id: str, state: WorkspaceState) -> None:
        self._states[workspace_id] = state
        self._trim()

    def _trim(self) -> None:
        """Drop the least recently used states past ``capacity`` or ``max_commits``, never the last one used."""
        held = sum(state.version for state in tuple(self._states.values()))
        while len(self._states) > 1 and (len(self._states) > self.capacity or held > self.max_commits):
            evicted, state = self._states.popitem(last=False)
            held -= state.version
            self._snapshotted.pop(evicted, None)
            self._lost.pop(evicted, None)
            self._imported.pop(evicted, None)
