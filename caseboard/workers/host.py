"""The consumer side: each delivered notification is processed at most once per consumer, duplicates counted.

    begin   count the attempt, committed before any work (a crash mid-message still counts);
            a notification this consumer already processed is a duplicate: counted and dropped
    effect  the participant's contribution (idempotent in the ledger by its key), or, for snapshot and
            history consumers, taking in the announced version; a snapshot notice older than what the
            consumer already took in is a no-op; a participant that loses every compare-and-set race hands the
            notification back unfinished (``dramatiq.Retry``): the broker delivers it again a moment later
    finish  mark it processed in the same transaction as the consumer's own effect

Redeliveries after a crash are not dramatiq retries, so the attempt budget lives in the database.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

import dramatiq
import structlog

from caseboard.coordinator.service import Coordinator
from caseboard.dispatcher.broker import Elsewhere, runner_queue, tenant_queue
from caseboard.dispatcher.notification import Notification, notification_id, queue_of, specialist_queue
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.workspace_key import tenant_part
from caseboard.workers.controller import Controller
from caseboard.workers.runtime import RETRY_DELAY_MS, ContributionRefused, Participant, RetryBudgetSpent, act

log = structlog.get_logger("caseboard.workers")

"""Fault-injection for tests: ``pause-after-effect:QUEUE`` blocks after the effect, before ``finish``."""

DEFAULT_KINDS = (
    "log_query",
    "change_calendar",
    "metrics_query",
    "deploy_history",
    "dependency_health",
    "certificate_check",
)
FIXED_QUEUES = (
    "caseboard.planner",
    "caseboard.verifier",
    "caseboard.reporter",
    "caseboard.snapshot",
    "caseboard.history",
)
HANDOFF_QUEUE = "caseboard.handoff"
PARTICIPANT_AUDIENCES = ("planner", "verifier", "reporter", "specialist")
"""The audiences participants act on; a host without the participant absorbs the notification when no process
of its tenant runs one (nobody would act on it), and passes it on to one that does otherwise."""
SNAPSHOT_QUEUE = "caseboard.snapshot"
ACTING_QUEUES = (SNAPSHOT_QUEUE, "caseboard.history")
"""The queues a host acts on without participants: the controller's, and the views it takes in."""


def participant_queue(audience: str) -> str:
    """The queue a participant keyed ``audience`` (``planner``, ``specialist:<kind>``; caseboard.workers.plugins)
    acts on."""
    audience, _, kind = audience.partition(":")
    return queue_of(audience, kind)


def priority(queue: str) -> int:
    """Among the messages a worker holds, a handoff goes first: a person waits on it (lower goes first)."""
    return -1 if queue == HANDOFF_QUEUE else 0


class ConsumerHost:
    def __init__(
        self,
        store: DispatchStore,
        coordinator: Coordinator | None,
        participants: Mapping[str, Participant],
        controller: Controller | None = None,
        *,
        kinds: tuple[str, ...] = DEFAULT_KINDS,
        max_attempts: int = 5,
        test_hook: str | None = None,
        handoff: Callable[[Notification], None] | None = None,
        tenant: str | None = None,
        tenant_of: Callable[[str], str | None] | None = None,
        present: Callable[[str], bool] | None = None,
    ) -> None:
        """``test_hook``: ``pause-after-effect:<queue>`` for the crash tests (``Settings.worker_test_hook``);
        ``handoff``: what delivers a handoff notification (``caseboard/handoff``); a host without it does not
        consume the handoff queue. ``tenant``: the one tenant whose workspaces this host acts on, ``tenant_of``
        telling the tenant of a workspace's key (``Workspaces.tenant_of``); None acts on every tenant's, an
        operator-wide process that the command line runs only when told to (``--all-tenants``,
        docs/adr/0157). ``present``: whether a process consuming a queue has announced itself
        (``Presence.present``): a notification for a participant this host does not run (a snapshot notice, for a
        host without a controller) goes on to its tenant's runner queue when a process that runs it is there, else
        to an operator-wide one's, and is absorbed otherwise (docs/adr/0186, 0187, 0188)."""
        if tenant is not None and tenant_of is None:
            raise ValueError("a host of one tenant needs tenant_of to tell a workspace's tenant")
        self.tenant = tenant
        self._tenant_of = tenant_of
        self._tenants: dict[str, str | None] = {}
        self.store = store
        self.handoff = handoff
        self.test_hook = test_hook
        self.coordinator = coordinator
        self.participants = dict(participants)
        self.present = present
        controlled = [SNAPSHOT_QUEUE] if controller is not None else []
        self.acted = {*(participant_queue(audience) for audience in self.participants), *controlled}
        """The queues this host's participants, or its controller, act on."""
        self.controller = controller
        self.kinds = kinds
        self.max_attempts = max_attempts
        self.workspaces: set[str] = set()
        self._notified: set[str] = set()  # workspaces a notification named since the tick began
        self._resumed = False  # whether the first tick took up the workspaces the controllers watch
        self._guard = threading.Lock()

    @property
    def passive(self) -> bool:
        return self.coordinator is None

    def queues(self) -> list[str]:
        handoff = [HANDOFF_QUEUE] if self.handoff is not None else []
        return [*FIXED_QUEUES, *handoff, *(specialist_queue(kind) for kind in self.kinds)]

    def own_queues(self, queues: list[str]) -> list[tuple[str, str]]:
        """(own queue, shared queue) for each of ``queues`` where other tenants' processes pass on this host's
        tenant's notifications (``dispatcher/broker.py::tenant_queue``), and for each its participants act on, the
        queue where this tenant's processes that do not run them pass theirs on (``runner_queue``, docs/adr/0186; so
        of the snapshot queue for a host with a controller, docs/adr/0188).
        A host of every tenant, which takes any tenant's notifications from the shared queues, has only the
        runner queues of every tenant (``runner_queue(queue, None)``, docs/adr/0187); a host without participants
        own queues only of the controller's and the handoffs' queues, the only ones it acts on (each own queue is
        two more consumers in the process, waiting for their wake-ups)."""
        if self.tenant is None:
            return [(runner_queue(queue, None), queue) for queue in queues if queue in self.acted]
        acted_on = queues if self.participants else [q for q in queues if q in (*ACTING_QUEUES, HANDOFF_QUEUE)]
        own = [(tenant_queue(queue, self.tenant), queue) for queue in acted_on]
        return own + [(runner_queue(queue, self.tenant), queue) for queue in queues if queue in self.acted]

    def tenant_of(self, key: str) -> str | None:
        """The tenant of the workspace of ``key``: a scoped key names it; a bare key's is its opening's scope,
        read once (it never changes)."""
        tenant = tenant_part(key)
        if tenant is None:
            tenant = self._tenants.get(key)
            if tenant is None and self._tenant_of is not None:
                tenant = self._tenants[key] = self._tenant_of(key)
        return tenant

    def handle(self, body: dict[str, Any]) -> Elsewhere | None:
        """``Elsewhere`` for another tenant's notification (``dispatcher/broker.py``), else None once done."""
        notification = Notification.model_validate(body)
        consumer = notification.queue
        if self.tenant is not None:
            tenant = self.tenant_of(notification.workspace_id)
            if tenant != self.tenant:
                # neither begun nor finished: it goes on to a process of its own tenant, and stays unprocessed
                # until one takes it (or the dispatcher re-drives it; docs/adr/0157, 0183)
                log.info(
                    "notification_other_tenant",
                    consumer=consumer,
                    notification_id=notification.id,
                    tenant=self.tenant,
                )
                return Elsewhere(consumer, tenant)
        runner = self._run_elsewhere(notification)
        if runner is not None:
            log.info("notification_to_participant", consumer=consumer, notification_id=notification.id, to=runner)
            # unbegun: a process that runs its participant takes it
            return Elsewhere(consumer, self.tenant_of(notification.workspace_id), runner=runner)
        self._process(notification)
        return None

    def _run_elsewhere(self, notification: Notification) -> str | None:
        """When this host does not run the participant of ``notification`` (or, for a snapshot notice, the
        controller: docs/adr/0188), the runner queue of a process that does and has announced itself: one of the
        notification's tenant first (docs/adr/0186), else an operator-wide one (docs/adr/0187). None when this
        host acts on it, or absorbs it because no process would."""
        if self.present is None:
            return None
        if notification.audience in PARTICIPANT_AUDIENCES:
            if self._participant(notification) is not None:
                return None
        elif notification.queue != SNAPSHOT_QUEUE or self.controller is not None:
            return None  # a passive host passes the controller's notices on (docs/adr/0188)
        tenant = self.tenant_of(notification.workspace_id)
        runners = [runner_queue(notification.queue, tenant)] if tenant is not None else []
        runners.append(runner_queue(notification.queue, None))
        return next((runner for runner in runners if self.present(runner)), None)

    def _process(self, notification: Notification) -> None:
        """Begin, act on and finish a notification of this host's tenant (each once, duplicates absorbed)."""
        consumer = notification.queue
        begun = self.store.begin(consumer, notification.id)
        if begun.duplicate:
            log.info("notification_duplicate_absorbed", consumer=consumer, notification_id=notification.id)
            return
        if begun.attempts > self.max_attempts:
            log.error(
                "notification_abandoned",
                consumer=consumer,
                notification_id=notification.id,
                attempts=begun.attempts,
            )
            self.store.finish(consumer, notification.id)
            return
        views: dict[str, int] = {}
        passed = False
        if notification.audience in ("snapshot", "history"):
            taken = self.store.view_version(consumer, notification.workspace_id)
            if notification.audience == "snapshot" and taken >= notification.workspace_version:
                log.info("notification_stale", consumer=consumer, notification_id=notification.id, taken=taken)
            else:
                views[notification.workspace_id] = notification.workspace_version
                if notification.audience == "snapshot":
                    self._effect(notification, self.controller)
        elif notification.audience == "handoff":
            if self.handoff is not None:
                self.handoff(notification)  # raises while a webhook has not taken it: dramatiq retries
        else:
            passed = not self._effect(notification, self._participant(notification)) and notification.kind == "turn"
        if self.test_hook == f"pause-after-effect:{consumer}":
            log.warning("worker_test_hook", notification_id=notification.id, pid=os.getpid())
            threading.Event().wait()
        # a snapshot notice is the controllers' to watch, also when a host without a controller absorbs it because
        # none was announced: a controller that starts later takes the workspace up (docs/adr/0189, 0191)
        if self.store.finish(consumer, notification.id, views, watch=notification.audience == "snapshot"):
            log.info(
                "notification_processed",
                consumer=consumer,
                notification_id=notification.id,
                attempts=begun.attempts,
            )
        else:
            log.info("notification_duplicate_absorbed", consumer=consumer, notification_id=notification.id)
            return
        if passed and self.controller is not None:
            # a turn answered with nothing commits nothing, so no notice tells the controller: it decides now
            # (a controller in another process does at its next tick; ``Controller.passed``)
            self._decide(notification.workspace_id)

    def tick(self) -> None:
        """The controller's own clock: re-decide every known workspace under investigation (turn timeouts, lapsed
        leases). One that is not (escalated, exhausted, closed) is forgotten: an escalated incident no longer costs
        every tick a decision, which held the worker's interpreter for a second a tick at a hundred of them. One
        that is not closed is kept while it holds a claim, until the lease lapses and the sweep reclaims it: a
        holder that died would otherwise leave its request claimed for good."""
        if self.controller is None or self.coordinator is None:
            return
        if not self._resumed:  # a controller that starts takes up the watch of those before it (docs/adr/0189)
            watched = [key for key in self.store.watched() if self.tenant is None or self.tenant_of(key) == self.tenant]
            with self._guard:
                self.workspaces.update(watched)
            self._resumed = True
        with self._guard:
            known = sorted(self.workspaces)
            self._notified.clear()
        for workspace_id in known:
            if not self._decide(workspace_id):  # the controller decides nothing on it (``decide_next``) until a
                with self._guard:  # commit moves it, whose notification brings it back (``_effect``)
                    if workspace_id not in self._notified:
                        self.workspaces.discard(workspace_id)

    def _decide(self, workspace_id: str) -> bool:
        """The controller decides on the workspace at its head; False, deciding nothing, when it is not
        ``investigating`` and holds no claim to sweep, or is closed or an imported record: no controller watches
        it any longer."""
        assert self.coordinator is not None
        reducer = self.coordinator.workspaces.reducer
        version, status, held = self.coordinator.workspaces.head_state(
            workspace_id, lambda s: (s.version, s.status, reducer.claims_held(s))
        )[1]
        swept = status == "investigating" or (held and status != "closed")
        if not swept or self._record(workspace_id):
            self.store.unwatch(workspace_id, version)
            return False
        tick = Notification(
            id=notification_id(workspace_id, version, "tick"),
            kind="snapshot_changed",
            audience="snapshot",
            workspace_id=workspace_id,
            workspace_version=version,
        )
        with contextlib.suppress(dramatiq.Retry):  # it lost every race at this tick: the next one decides again
            self._effect(tick, self.controller)
        return True

    def _record(self, key: str) -> bool:
        assert self.coordinator is not None
        imported = self.coordinator.workspaces.imported_head(key)
        return imported is not None and imported == self.coordinator.ledger.head(key)

    def _participant(self, notification: Notification) -> Participant | None:
        if notification.audience == "specialist":
            return self.participants.get(f"specialist:{notification.request_kind}")
        if notification.audience == "planner" and notification.kind == "turn":
            return self.participants.get(notification.principal or "") or self.participants.get("planner")
        return self.participants.get(notification.audience)

    def _effect(self, notification: Notification, participant: Participant | None) -> bool:
        """True when ``participant`` contributed something on ``notification``."""
        if self.coordinator is not None and self._record(notification.workspace_id):
            log.info("notification_for_record", notification_id=notification.id)
            return False  # an imported record: nobody schedules or contributes until it is reopened (ADR 0158)
        with self._guard:
            self.workspaces.add(notification.workspace_id)
            self._notified.add(notification.workspace_id)
        if participant is None or self.coordinator is None:
            return False
        try:
            return bool(act(self.coordinator, participant, notification))
        except (RetryBudgetSpent, ContributionRefused) as stopped:
            starved = isinstance(stopped, RetryBudgetSpent)  # a conflict is not a refusal of the items
            log.warning(
                "participant_starved" if starved else "participant_gave_up",
                principal=participant.principal,
                notification_id=notification.id,
                error=str(stopped),
            )
            if starved:  # others committed meanwhile, and no later notice need re-announce what this one asked (a
                # claimed work request waited out its lease): the broker delivers it again (docs/adr/0196)
                raise dramatiq.Retry(str(stopped), delay=RETRY_DELAY_MS) from None
            return False
