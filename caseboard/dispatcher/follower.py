"""The dispatcher: follow the outbox from a stored position, route each commit, hand notifications over.

One pass: read a batch of final commits after the position, fold each into the dispatcher's own copy of
its workspace, ``route`` it, coalesce snapshot notices, ``enqueue`` every notification on the broker, and
only then store the new position together with the deliveries (one transaction). A crash between the send
and the store re-sends the batch on restart; consumers absorb the duplicates by notification id. A second
pass re-drives deliveries nobody processed (lost with a restarted Redis, or stuck) from the database.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

import dramatiq
import structlog

from caseboard.dispatcher.broker import BrokerUnavailable, enqueue, message_for, message_from
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.outbox import Outbox, Position
from caseboard.dispatcher.route import coalesce, handoffs_first, route
from caseboard.dispatcher.store import Delivery, DispatchStore
from caseboard.domain.commit import Commit
from caseboard.domain.errors import LedgerUnavailable
from caseboard.projections.workspaces import Workspaces
from caseboard.reducers import WorkspaceState

log = structlog.get_logger("caseboard.dispatcher")

SETTLE_DELAYS = (0.0, 0.001, 0.002, 0.004, 0.008, 0.016)
"""Fault-injection for tests: ``exit-after-send`` or ``pause-after-send`` (before the position is stored)."""


@dataclass(frozen=True)
class DispatchConfig:
    name: str = "dispatcher"
    batch: int = 500
    poll_s: float = 0.5
    redrive_after_s: float = 60.0
    redrive_every_s: float = 5.0
    states_kept: int = 1024
    test_hook: str | None = None
    """A fault to play for the crash tests (``Settings.dispatch_test_hook``): ``exit-after-send`` or
    ``pause-after-send``."""


class Dispatcher:
    def __init__(
        self,
        outbox: Outbox,
        store: DispatchStore,
        broker: dramatiq.Broker,
        workspaces: Workspaces,
        config: DispatchConfig | None = None,
    ) -> None:
        self.outbox = outbox
        self.store = store
        self.broker = broker
        self.workspaces = workspaces
        self.config = config or DispatchConfig()
        self.reducer = workspaces.reducer  # the current reducer (CASEBOARD_REDUCER): it folded what is routed
        self._states: OrderedDict[str, WorkspaceState] = OrderedDict()  # bounded: least recently routed goes first
        self._declared: set[str] = set()
        self._last_redrive = 0.0
        self.position: Position = store.position(self.config.name)

    def pass_once(self) -> int:
        """One batch: returns how many commits it covered."""
        entries = self.outbox.read(self.position, self.config.batch)
        if not entries:
            return 0
        notifications: list[Notification] = []
        try:
            for entry in entries:
                notifications.extend(route(entry.commit, self._fold(entry.commit), self.reducer))
            sent = [self._send(n) for n in handoffs_first(coalesce(notifications))]
            self._hook()
            position = entries[-1].position
            self.store.advance(self.config.name, position, sent)
        except BaseException:
            for entry in entries:  # folded ahead of the stored position: reload on the next pass
                self._states.pop(entry.commit.key, None)
            raise
        self.position = position
        log.info(
            "outbox_dispatched",
            commits=len(entries),
            notifications=len(sent),
            position=list(position),
            last_version=entries[-1].commit.version,
        )
        return len(entries)

    def redrive(self) -> int:
        """Re-sends what was handed over long enough ago and never processed."""
        lost = self.store.unprocessed(self.config.redrive_after_s)
        for delivery in lost:
            self._declare(delivery.queue)
            enqueue(self.broker, message_from(delivery.queue, delivery.body))
        if lost:
            self.store.resent([d.notification_id for d in lost])
            log.warning("notifications_redriven", count=len(lost), first=lost[0].notification_id)
        return len(lost)

    def run(self, stop: threading.Event, wait: Callable[[float], object] | None = None) -> None:
        """Until ``stop``: drain the outbox, wait for a wake-up or the fallback poll, re-drive at times."""
        failures = 0
        while not stop.is_set():
            try:
                while self.pass_once() and not stop.is_set():
                    pass
                now = time.monotonic()
                if now - self._last_redrive >= self.config.redrive_every_s:
                    self._last_redrive = now
                    self.redrive()
                woke = wait(self.config.poll_s) if wait is not None else stop.wait(self.config.poll_s)
                if woke and not stop.is_set():
                    self._settle()
                failures = 0
            except (BrokerUnavailable, LedgerUnavailable) as error:
                # Nothing was stored past what the broker accepted: the next pass sends it again.
                failures += 1
                log.warning("dispatch_retrying", error=str(error), failures=failures)
                stop.wait(min(5.0, 0.1 * 2**failures))

    def _settle(self) -> None:
        """A wake-up whose commit is not final yet (an older transaction still runs): look again shortly
        instead of waiting for the next wake-up or the fallback poll."""
        for delay in SETTLE_DELAYS:
            if self.pass_once():
                return
            time.sleep(delay)

    def _fold(self, commit: Commit) -> WorkspaceState:
        state = self._states.get(commit.key)
        if state is None or state.version != commit.version - 1:
            if state is not None and state.version >= commit.version:
                log.warning("outbox_commit_seen_again", workspace_id=commit.key, version=commit.version)
            state = (
                self.workspaces.state_at(commit.key, commit.version - 1)
                if commit.version > 1
                else self.reducer.initial(commit.workspace_id)
            )
        state = self.reducer.evolve(state, commit)
        self._states[commit.key] = state
        self._states.move_to_end(commit.key)
        while len(self._states) > self.config.states_kept:  # a quiet workspace is reloaded when it wakes
            self._states.popitem(last=False)
        return state

    def _send(self, notification: Notification) -> Delivery:
        self._declare(notification.queue)
        enqueue(self.broker, message_for(notification))
        return Delivery(notification.id, notification.queue, notification.model_dump_json(exclude_none=True))

    def _declare(self, queue: str) -> None:
        if queue not in self._declared:
            enqueue(self.broker, None, declare=queue)
            self._declared.add(queue)

    def _hook(self) -> None:
        hook = self.config.test_hook
        if hook == "exit-after-send":
            log.warning("dispatch_test_hook", hook=hook, position=list(self.position))
            os._exit(70)
        if hook == "pause-after-send":
            log.warning("dispatch_test_hook", hook=hook, position=list(self.position))
            threading.Event().wait()
