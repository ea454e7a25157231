"""``caseboard agent``'s consumers: one role's queues, its model-backed participants, optionally the controller.

The consumer side is the workers' own (``ConsumerHost``: at most once per consumer, duplicates absorbed,
attempts counted in the database); only the queues differ. An agent declares the queues of its role
(``caseboard.planner``, ``caseboard.verifier``, ``caseboard.reporter`` or ``caseboard.specialist.<kind>``),
so it never takes another role's notifications, and, with ``--with-controller``, the snapshot queue the
controller decides on (docs/adr/0113), the history queue (docs/adr/0160) and the handoff queue (docs/pilot.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime

import dramatiq

from caseboard.app import App
from caseboard.dispatcher.store import DispatchStore
from caseboard.workers.controller import Controller
from caseboard.workers.host import HANDOFF_QUEUE, ConsumerHost, participant_queue
from caseboard.workers.live import WORKER_TIMEOUT_MS, consume, deliverer_for
from caseboard.workers.runtime import Participant


def role_queues(participants: Mapping[str, Participant], with_controller: bool) -> list[str]:
    queues = [participant_queue(audience) for audience in participants]
    # the controller's process also takes in the history queue: in an agents' topology nobody else consumes it,
    # and a routed queue without a consumer is re-driven forever (docs/adr/0160)
    # and so the handoff queue: the controller's process delivers handoffs (docs/pilot.md)
    return [*queues, *(["caseboard.snapshot", "caseboard.history", HANDOFF_QUEUE] if with_controller else [])]


def agent_host(
    app: App,
    store: DispatchStore,
    participants: Mapping[str, Participant],
    *,
    with_controller: bool = False,
    turn_timeout_s: float = 60.0,
    tenant: str | None = None,
    tenant_of: Callable[[str], str | None] | None = None,
) -> ConsumerHost:
    """``tenant``, ``tenant_of``: the one tenant the agent acts for, as ``ConsumerHost``'s (docs/adr/0157)."""
    controller = None
    if with_controller:
        controller = Controller(
            app.ledger,
            clock=lambda: datetime.now(UTC),
            turn_timeout_s=turn_timeout_s,
            stall_after_s=app.settings.stall_after_s,
            reducer=app.workspaces.reducer,
            processed=store.processed,
        )
    kinds = tuple(a.partition(":")[2] for a in participants if a.startswith("specialist:"))
    return ConsumerHost(
        store,
        app.coordinator(),
        participants,
        controller,
        kinds=kinds,
        tenant=tenant,
        tenant_of=tenant_of,
        handoff=deliverer_for(app, store).deliver if with_controller else None,
    )


def start_agent(
    broker: dramatiq.Broker, host: ConsumerHost, queues: list[str], threads: int = 1, poll_ms: int = WORKER_TIMEOUT_MS
) -> dramatiq.Worker:
    return consume(broker, host, queues, threads, poll_ms)
