"""One follower per workspace for the ``/events`` streams of a server process (``routes_events.py``).

While a workspace has at least one stream, its follower reads the workspace's new commits once after each
commit and hands each batch, every event's text made once, to every stream of the workspace: the ledger's
reads grow with commits and followed workspaces, not with streams. The hub's one thread waits for the
commit notifier's NOTIFY where the ledger announces its commits (PostgreSQL, ADR 0012) and then reads each
followed workspace; it reads every ``FALLBACK_S`` as well, since a lost NOTIFY only delays. On SQLite, and
while the LISTEN connection cannot be opened, it reads every ``poll_interval_s`` instead. A read the ledger
refuses ends that workspace's streams as ``unavailable``; a commit that does not match its hash (the reads
go through the chain's guard, ADR 0144) ends them as ``tampered``.

A stream takes its commits from ``Subscription.after``: the follower's batches, and, read from the ledger
by the stream itself, whatever lies between its position and them: the commits before it joined (a
``Last-Event-ID`` behind the follower), and those it dropped while it was behind. A stream holds at most
``QUEUE`` commits it has not sent; a batch that would pass that is dropped for that stream, which reads the
gap when it catches up, so a slow client costs reads of its own, never the server's memory or the other
streams' delivery. Batches are handed over and taken on the event loop's thread, in the order the follower
read them, so a stream never sees a commit twice or misses one.

A follower ends when its workspace's last stream leaves, and the thread when the last follower does.
``close`` (server shutdown) stops the thread and ends the streams still open as ``unavailable``. The key
checks of the streams are shared too (``KeyChecks``): one question to the key store per key at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol, TypeVar

import anyio
import structlog

from caseboard.domain.commit import Commit
from caseboard.domain.errors import LedgerUnavailable
from caseboard.domain.workspace_key import bare
from caseboard.keys import hash_secret
from caseboard.replay.audit import ChainBroken

log = structlog.get_logger("caseboard.api")
T = TypeVar("T")

BATCH = 100
"""Commits per read, the follower's and a stream's catching up."""
QUEUE = 1000
"""Commits a stream may hold unsent; past that it reads what it missed from the ledger itself."""
FALLBACK_S = 1.0
"""With LISTEN up the follower still reads this often: a NOTIFY that was lost only delays."""


class Commits(Protocol):
    """What the hub reads of the ledger."""

    def read(self, workspace_id: str, after: int = 0, upto: int | None = None) -> list[Commit]: ...
    def head(self, workspace_id: str) -> int: ...


class Listener(Protocol):
    """A LISTEN for the NOTIFY after each commit (``App.listen_for_commits``)."""

    def wait(self, timeout: float) -> bool: ...
    def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Event:
    """A ``commit`` event as the stream sends it."""

    version: int
    text: str


def commit_event(workspace_id: str, commit: Commit) -> Event:
    data = {"workspace_id": bare(workspace_id), **commit.summary()}  # the id its tenant knows, never the key
    text = f"id: {commit.version}\nevent: commit\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"
    return Event(commit.version, text)


def end_event(reason: str, position: int) -> str:
    return f"event: end\ndata: {json.dumps({'reason': reason, 'next_after': position})}\n\n"


class Follower:
    """One followed workspace: where the hub's thread has read to, and what the loop has handed its streams
    (every commit up to ``handed`` is in the ledger; every later one reaches the streams through ``hand``)."""

    def __init__(self, workspace_id: str, loop: asyncio.AbstractEventLoop) -> None:
        self.workspace_id = workspace_id
        self.loop = loop
        self.read_to: int | None = None  # the hub thread's; None until the workspace's head is known
        self.handed: int | None = None  # the loop's
        self.subscriptions: set[Subscription] = set()

    def begin(self, head: int) -> None:
        self.handed = head
        self.read_to = head
        for subscription in self.subscriptions:
            subscription.wake()

    def hand(self, events: list[Event]) -> None:
        self.handed = events[-1].version
        for subscription in self.subscriptions:
            subscription.offer(events)

    def fail(self, reason: str | ChainBroken) -> None:
        for subscription in self.subscriptions:
            subscription.failure = reason
            subscription.wake()


class Subscription:
    """One stream's share of its workspace's follower, used on the event loop's thread only."""

    def __init__(self, hub: EventHub, follower: Follower) -> None:
        self.hub = hub
        self.follower = follower
        self.pending: deque[Event] = deque()
        self.failure: str | ChainBroken | None = None
        self._waiter: asyncio.Future[None] | None = None

    def offer(self, events: list[Event]) -> None:
        if len(self.pending) + len(events) <= QUEUE:
            self.pending.extend(events)
        self.wake()  # a dropped batch too: the stream reads the gap

    def wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def after(self, position: int, wait_s: float) -> list[Event]:
        """The next commits after ``position``, in order, at most ``BATCH``; none if none came within
        ``wait_s``. Raises ``LedgerUnavailable`` when the ledger cannot be read."""
        deadline = time.monotonic() + wait_s
        while True:
            if isinstance(self.failure, ChainBroken):
                raise self.failure
            if self.failure is not None:
                raise LedgerUnavailable(self.failure)
            pending = self.pending
            while pending and pending[0].version <= position:
                pending.popleft()
            if pending and pending[0].version == position + 1:
                run = [pending.popleft()]
                while pending and len(run) < BATCH and pending[0].version == run[-1].version + 1:
                    run.append(pending.popleft())
                return run
            upto = pending[0].version - 1 if pending else self.follower.handed
            if upto is not None and position < upto:  # joined behind the follower, or dropped while behind
                return await self.hub.read(self.follower.workspace_id, position, min(upto, position + BATCH))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            await self._sleep(remaining)

    async def _sleep(self, seconds: float) -> None:
        """Until ``wake`` or ``seconds``: a future and a timer, the least a stream's wait can cost (each
        commit wakes every stream of its workspace)."""
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = loop.call_later(seconds, _settle, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None


class EventHub:
    """The followers of one server process, and the thread that reads for them."""

    def __init__(self, ledger: Commits, listen: Callable[[], Listener] | None, poll_interval_s: float) -> None:
        """``listen``: opens a LISTEN, raising ``LedgerUnavailable`` when it cannot; None where commits do
        not announce themselves (the follower polls every ``poll_interval_s``)."""
        self.ledger = ledger
        self.listen = listen
        self.poll_interval_s = poll_interval_s
        self.reads = 0
        """Reads of the followers (a stream's own reads are ``catch_up_reads``)."""
        self.catch_up_reads = 0
        self.listening = False
        self.keys = KeyChecks()
        self._followers: dict[str, Follower] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()
        self._fresh = False  # a follower began since the last pass

    @property
    def followed(self) -> int:
        return len(self._followers)

    @property
    def running(self) -> bool:
        """Whether the hub's thread runs: from the first stream to the last follower's end."""
        return self._thread is not None

    def subscribers(self, workspace_id: str) -> int:
        follower = self._followers.get(workspace_id)
        return len(follower.subscriptions) if follower is not None else 0

    @asynccontextmanager
    async def subscribe(self, workspace_id: str) -> AsyncIterator[Subscription]:
        """A stream's subscription to the workspace's follower, which begins at the workspace's head when
        this is its first stream. Raises ``LedgerUnavailable`` when the head cannot be read."""
        with self._lock:
            if self._closed.is_set():
                raise LedgerUnavailable("the server is shutting down: reconnect with Last-Event-ID")
            follower = self._followers.get(workspace_id)
            first = follower is None
            if follower is None:
                follower = self._followers[workspace_id] = Follower(workspace_id, asyncio.get_running_loop())
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="caseboard-event-hub", daemon=True)
                self._thread.start()
        subscription = Subscription(self, follower)
        follower.subscriptions.add(subscription)
        try:
            if first:
                await self._begin(follower)
            yield subscription
        finally:
            follower.subscriptions.discard(subscription)
            if not follower.subscriptions:
                self._forget(follower)

    async def read(self, workspace_id: str, after: int, upto: int) -> list[Event]:
        """A stream's own read of the commits after ``after`` up to ``upto``."""
        self.catch_up_reads += 1

        def read() -> list[Event]:
            return [commit_event(workspace_id, c) for c in self.ledger.read(workspace_id, after, upto)]

        return await anyio.to_thread.run_sync(read)

    def close(self) -> None:
        """Stop following (server shutdown): the thread ends, and the streams still open end."""
        self._closed.set()
        with self._lock:
            thread, followers = self._thread, list(self._followers.values())
            self._followers.clear()
        for follower in followers:
            _call(follower, follower.fail, "the server is shutting down: reconnect with Last-Event-ID")
        if thread is not None:
            thread.join(timeout=5)

    async def _begin(self, follower: Follower) -> None:
        try:
            with anyio.CancelScope(shield=True):  # the other streams of the workspace wait for the head
                head = await anyio.to_thread.run_sync(self.ledger.head, follower.workspace_id)
        except LedgerUnavailable as error:
            self._forget(follower)
            follower.fail(str(error))
            raise
        follower.begin(head)
        self._fresh = True

    def _forget(self, follower: Follower) -> None:
        with self._lock:
            if self._followers.get(follower.workspace_id) is follower:
                del self._followers[follower.workspace_id]

    def _run(self) -> None:
        listener: Listener | None = None
        woke, last_pass, next_listen = True, 0.0, 0.0
        try:
            while True:
                with self._lock:
                    if self._closed.is_set() or not self._followers:
                        self._thread = None
                        return
                    followers = list(self._followers.values())
                if woke or self._fresh or time.monotonic() - last_pass >= FALLBACK_S:
                    self._fresh = False
                    last_pass = time.monotonic()
                    if self._pass(followers):
                        continue  # a full batch: read on at once
                if listener is None and self.listen is not None and time.monotonic() >= next_listen:
                    listener, next_listen = self._open(), time.monotonic() + FALLBACK_S
                    if listener is not None:
                        woke = True  # a pass once listening: what committed before the LISTEN
                        continue
                if listener is None:
                    self._closed.wait(self.poll_interval_s)
                    woke = True
                else:
                    woke = listener.wait(self.poll_interval_s)
        finally:
            self.listening = False
            if listener is not None:
                listener.close()

    def _open(self) -> Listener | None:
        assert self.listen is not None
        try:
            listener = self.listen()
        except LedgerUnavailable as error:
            log.warning("events_listen_failed", error=str(error))
            return None
        self.listening = True
        return listener

    def _pass(self, followers: list[Follower]) -> bool:
        """Each follower's new commits, read once and handed to its streams: whether a read was a full batch."""
        full = False
        for follower in followers:
            after = follower.read_to
            if after is None:
                continue
            try:
                commits = self.ledger.read(follower.workspace_id, after, after + BATCH)
            except LedgerUnavailable as error:
                _call(follower, follower.fail, str(error))
                continue
            except ChainBroken as error:
                _call(follower, follower.fail, error)
                continue
            finally:
                self.reads += 1
            if commits:
                follower.read_to = commits[-1].version
                _call(follower, follower.hand, [commit_event(follower.workspace_id, c) for c in commits])
                full = full or len(commits) == BATCH
        return full


class KeyChecks:
    """The key store's answers about the streams' keys, one at a time for all the streams of a key: a stream
    checks every ``3/4`` of ``key_cache_s`` and takes an answer asked at most ``1/4`` of it before, so it
    still ends within ``key_cache_s`` of a revocation, and the store is asked about a key about four times
    per ``key_cache_s`` however many streams hold it open."""

    CAPACITY = 10_000

    def __init__(self) -> None:
        self._asked: dict[str, tuple[float, asyncio.Future[bool]]] = {}

    async def still_valid(self, token: str, ask: Callable[[str], bool], fresh_s: float) -> bool:
        """``ask(token)`` (on a thread), or its answer asked less than ``fresh_s`` ago."""
        now, digest = time.monotonic(), hash_secret(token)
        entry = self._asked.get(digest)
        if entry is None or entry[0] < now - fresh_s:
            if len(self._asked) >= self.CAPACITY:
                self._asked = {k: e for k, e in self._asked.items() if e[0] >= now - fresh_s}
            answer = asyncio.ensure_future(anyio.to_thread.run_sync(ask, token))
            answer.add_done_callback(_retrieved)
            entry = self._asked[digest] = (now, answer)
        return await asyncio.shield(entry[1])


def _retrieved(answer: asyncio.Future[bool]) -> None:
    """An answer whose streams all left meanwhile is not an error to report: each stream that waits gets it."""
    if not answer.cancelled():
        answer.exception()


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _call(follower: Follower, callback: Callable[[T], None], argument: T) -> None:
    """Run ``callback`` on the follower's event loop, after what was handed to it before."""
    with contextlib.suppress(RuntimeError):  # the loop has closed, and its streams with it
        follower.loop.call_soon_threadsafe(callback, argument)
