"""Wiring the live loop from an app: the consumer host, the dramatiq worker that feeds it, the dispatcher.

Used by ``caseboard worker`` / ``caseboard dispatch`` (separate processes, Redis) and by ``caseboard demo
--live`` (one process, the in-process broker). Brokers are built here from settings and passed down.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import dramatiq

from caseboard.app import App
from caseboard.dispatcher.broker import Announcing, BrokerConfig, Presence, declare_consumer, make_broker
from caseboard.dispatcher.follower import DispatchConfig, Dispatcher
from caseboard.dispatcher.outbox import open_outbox
from caseboard.dispatcher.store import DispatchStore
from caseboard.dispatcher.wakeup import CommitListener
from caseboard.handoff.deliver import Deliverer
from caseboard.workers.controller import Controller
from caseboard.workers.host import DEFAULT_KINDS, ConsumerHost, priority
from caseboard.workers.plugins import load_participants
from caseboard.workers.queue_metrics import Exposition, QueueMetrics, StopWithWorker

PREFETCH = 100
WORKER_TIMEOUT_MS = 500
"""The longest an idle consumer waits between fetches (dramatiq's worker_timeout): on Redis it is woken at once
when its queue has a message (``caseboard/dispatcher/waking.py``, ADR 0184); this finds what no wake-up told."""


def broker_for(app: App, *, in_process: bool = False, heartbeat_ms: int | None = None) -> dramatiq.Broker:
    settings = app.settings
    return make_broker(
        BrokerConfig(
            url=None if in_process else settings.redis_url,
            namespace=settings.redis_namespace,
            heartbeat_ms=heartbeat_ms or settings.heartbeat_ms,
            maintenance_chance=1000 if (heartbeat_ms or settings.heartbeat_ms) >= 60_000 else 200_000,
        )
    )


def build_host(
    app: App,
    store: DispatchStore,
    *,
    passive: bool = False,
    kinds: tuple[str, ...] = DEFAULT_KINDS,
    turn_timeout_s: float = 60.0,
    participants: tuple[str, ...] = (),
    tenant: str | None = None,
    tenant_of: Callable[[str], str | None] | None = None,
    present: Callable[[str], bool] | None = None,
) -> ConsumerHost:
    """The consumers, the controller and the lease sweeper; ``participants`` names the entry points
    (``caseboard.participants``) whose participants also run here. None by default: a plain worker never
    contributes evidence (caseboard.workers.plugins). ``tenant``, ``tenant_of``, ``present``: as
    ``ConsumerHost``'s (``present`` from ``presence_for`` the broker the host consumes)."""
    scope: dict[str, Any] = {"tenant": tenant, "tenant_of": tenant_of, "present": present}
    if passive:
        return ConsumerHost(store, None, {}, kinds=kinds, **scope)
    cast = load_participants(participants, kinds)
    controller = Controller(
        app.ledger,
        clock=lambda: datetime.now(UTC),
        turn_timeout_s=turn_timeout_s,
        stall_after_s=app.settings.stall_after_s,
        reducer=app.workspaces.reducer,
        processed=store.processed,
    )
    return ConsumerHost(
        store,
        app.coordinator(),
        cast,
        controller,
        kinds=kinds,
        test_hook=app.settings.worker_test_hook,
        handoff=deliverer_for(app, store).deliver,
        **scope,
    )


def deliverer_for(app: App, store: DispatchStore) -> Deliverer:
    """What delivers handoffs to the tenants' webhooks (docs/pilot.md), in the process that runs the controller:
    the plain worker, or the agent started ``--with-controller``."""
    return Deliverer(store, app.settings.tenants, lambda key, version: app.workspaces.show(key, version))


def start_worker(
    broker: dramatiq.Broker,
    host: ConsumerHost,
    threads: int = 2,
    poll_ms: int = WORKER_TIMEOUT_MS,
    *,
    metrics: Exposition | None = None,
) -> dramatiq.Worker:
    """``metrics``: where the queues' Prometheus metrics are served (default: ``CASEBOARD_WORKER_METRICS_PORT``,
    none when unset; ``caseboard/workers/queue_metrics.py``); the exposition stops with the worker."""
    exposition = metrics or Exposition.from_env()
    if exposition is not None:
        broker.add_middleware(StopWithWorker(QueueMetrics(broker, host.store, exposition)))
    return consume(broker, host, host.queues(), threads, poll_ms)


def consume(
    broker: dramatiq.Broker, host: ConsumerHost, queues: list[str], threads: int, poll_ms: int
) -> dramatiq.Worker:
    """Start a dramatiq worker taking ``queues`` into ``host``. A host of one tenant also takes its tenant's own
    queue of each, where other tenants' processes pass its notifications on, and announces them on the broker
    while it runs (docs/adr/0183). The in-process broker has no announcements: there another tenant's
    notification goes back to its shared queue."""
    presence = presence_for(broker)
    own = host.own_queues(queues) if presence is not None else []
    if presence is not None and own:
        broker.add_middleware(Announcing(presence, [queue for queue, _ in own]))
    for queue, shared in [*((queue, queue) for queue in queues), *own]:
        declare_consumer(broker, queue, host.handle, priority=priority(shared), presence=presence)
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=poll_ms)
    worker.queue_prefetch = PREFETCH
    worker.start()
    return worker


def presence_for(broker: dramatiq.Broker) -> Presence | None:
    """Where the consumers on ``broker`` announce themselves: beside its own keys on Redis; none in process."""
    from dramatiq.brokers.redis import RedisBroker

    if not isinstance(broker, RedisBroker):
        return None
    return Presence(broker.client, broker.namespace)


def pause_consumers(worker: dramatiq.Worker) -> None:
    """Stop fetching (the consumers of a down broker would reconnect every 3 s each); messages in hand finish."""
    for consumer in worker.consumers.values():
        consumer.pause()


def resume_consumers(worker: dramatiq.Worker) -> None:
    for consumer in worker.consumers.values():
        consumer.resume()


def build_dispatcher(app: App, store: DispatchStore, broker: dramatiq.Broker, config: DispatchConfig) -> Dispatcher:
    return Dispatcher(open_outbox(app.ledger), store, broker, app.workspaces, config)


def waiter(app: App, stop: threading.Event) -> tuple[Callable[[float], object], Callable[[], None]]:
    """How the dispatcher waits between passes: LISTEN on PostgreSQL, the stop event's timeout otherwise."""
    if app.on_postgres:
        listener = CommitListener(app.database_url)
        return listener.wait, listener.close
    return stop.wait, lambda: None
