"""``caseboard dispatch``, ``worker`` and ``outbox status``: the live loop as processes."""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import time
from typing import Any

from caseboard.app import App
from caseboard.cli.arguments import identifier, request_kinds, seconds, tenant_id, whole_number
from caseboard.dispatcher.broker import BrokerWatch, check_broker
from caseboard.dispatcher.follower import DispatchConfig
from caseboard.dispatcher.outbox import open_outbox
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import CaseboardError, ConfigurationError
from caseboard.heap import settle_startup
from caseboard.workers.host import DEFAULT_KINDS
from caseboard.workers.live import (
    broker_for,
    build_dispatcher,
    build_host,
    pause_consumers,
    presence_for,
    resume_consumers,
    start_worker,
    waiter,
)
from caseboard.workers.plugins import load_participants

MAX_THREADS = 256


thread_count = whole_number("threads", MAX_THREADS)
"""A process's consumer threads."""
dispatcher_name = identifier("dispatcher's name")
"""The name a dispatcher stores its position under."""


def register(commands: Any) -> None:
    dispatch = commands.add_parser("dispatch", help="follow the ledger's outbox and hand notifications to dramatiq")
    dispatch.add_argument(
        "--name", type=dispatcher_name, default="dispatcher", help="the position's name (one per dispatcher)"
    )
    dispatch.add_argument("--poll", type=seconds, default=0.5, help="fallback poll in seconds (default 0.5)")
    dispatch.add_argument(
        "--redrive-after",
        type=seconds,
        default=60.0,
        help="re-send notifications unprocessed after this many seconds (default 60)",
    )
    dispatch.add_argument("--once", action="store_true", help="drain the outbox once and exit")
    dispatch.set_defaults(handler=cmd_dispatch)

    worker = commands.add_parser(
        "worker", help="run the consumers, the controller and the lease sweeper (participants only with --participant)"
    )
    worker.add_argument("--threads", type=thread_count, default=2)
    worker.add_argument("--passive", action="store_true", help="only record what is delivered (no controller)")
    worker.add_argument(
        "--participant",
        action="append",
        default=[],
        metavar="NAME",
        help="also run the participants of this caseboard.participants entry point (e.g. scripted, the demo's "
        "canned cast: never against a real investigation); repeatable",
    )
    worker.add_argument(
        "--kinds", type=request_kinds, default=DEFAULT_KINDS, help="work request kinds to serve (comma list)"
    )
    worker.add_argument("--tick", type=seconds, default=2.0, help="seconds between controller ticks (default 2)")
    worker.add_argument("--turn-timeout", type=seconds, default=60.0, help="seconds a scheduled turn is waited for")
    add_tenant_choice(worker)
    worker.set_defaults(handler=cmd_worker)

    outbox = commands.add_parser("outbox", help="the outbox and its dispatcher")
    outbox_commands = outbox.add_subparsers(dest="outbox_command", required=True, metavar="SUBCOMMAND")
    status = outbox_commands.add_parser("status", help="position, head, pending, delivered, duplicates (JSON)")
    status.add_argument(
        "--name", type=dispatcher_name, default="dispatcher", help="the dispatcher whose position is shown"
    )
    status.set_defaults(handler=cmd_outbox_status)
    prune = outbox_commands.add_parser(
        "prune", help="forget notifications processed more than --older-than-days ago (JSON counts)"
    )
    prune.add_argument(
        "--older-than-days",
        type=float,
        default=7.0,
        help="keep what was processed more recently (default 7; redeliveries come within minutes)",
    )
    prune.set_defaults(handler=cmd_outbox_prune)


def add_tenant_choice(parser: argparse.ArgumentParser) -> None:
    """``--tenant T`` or ``--all-tenants``, one of them required: a process that consumes notifications acts for
    one tenant unless an operator-wide one is asked for (docs/adr/0157)."""
    scope = parser.add_mutually_exclusive_group(required=True)
    scope.add_argument("--tenant", type=tenant_id, metavar="TENANT", help="act only on this tenant's workspaces")
    scope.add_argument(
        "--all-tenants", action="store_true", help="act on every tenant's workspaces (an operator-wide process)"
    )


def tenant_scope(app: App, args: argparse.Namespace) -> dict[str, Any]:
    """The ``tenant`` and ``tenant_of`` a ``ConsumerHost`` of ``add_tenant_choice``'s choice takes. A host of
    every tenant knows a workspace's tenant too: it passes a notification it does not act on to a process of
    that tenant that does (docs/adr/0190)."""
    if args.tenant is None:
        return {"tenant": None, "tenant_of": lambda key: app.workspaces.tenant_of(key, 5.0)}
    return one_tenant(app, args.tenant)


def one_tenant(app: App, tenant: str) -> dict[str, Any]:
    """The ``tenant`` and ``tenant_of`` of a ``ConsumerHost`` that acts for ``tenant`` only (docs/adr/0157)."""
    return {"tenant": tenant, "tenant_of": lambda key: app.workspaces.tenant_of(key, 5.0)}


def _stop_on_signals() -> threading.Event:
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    return stop


def cmd_dispatch(app: App, args: argparse.Namespace) -> int:
    if not app.on_postgres:
        raise ConfigurationError(
            "caseboard dispatch runs against PostgreSQL and Redis; "
            "the embedded ledger dispatches in process (caseboard demo --live)"
        )
    store = DispatchStore(app.database_url)
    broker = broker_for(app)
    config = DispatchConfig(
        name=args.name,
        poll_s=args.poll,
        redrive_after_s=args.redrive_after,
        test_hook=app.settings.dispatch_test_hook,
    )
    dispatcher = build_dispatcher(app, store, broker, config)
    stop = _stop_on_signals()
    wait, close = waiter(app, stop)
    try:
        if args.once:
            while dispatcher.pass_once():
                pass
        else:
            settle_startup()
            dispatcher.run(stop, wait)
    finally:
        close()
        broker.close()
        store.close()
    return 0


def cmd_worker(app: App, args: argparse.Namespace) -> int:
    kinds: tuple[str, ...] = args.kinds
    if args.passive and args.participant:
        raise ConfigurationError("--passive records deliveries only; it runs no --participant")
    load_participants(args.participant, kinds)  # an unknown name fails before any connection
    store = DispatchStore(app.database_url)
    broker = broker_for(app)
    presence = presence_for(broker)
    host = build_host(
        app,
        store,
        passive=args.passive,
        kinds=kinds,
        turn_timeout_s=args.turn_timeout,
        participants=tuple(args.participant),
        present=presence.present if presence is not None else None,
        **tenant_scope(app, args),
    )
    worker = start_worker(broker, host, args.threads, app.settings.worker_poll_ms)
    return consume_until_stopped(app, host, worker, broker, store, args.tick)


def consume_until_stopped(app: App, host: Any, worker: Any, broker: Any, store: DispatchStore, tick_s: float) -> int:
    """Run ``worker``'s consumers until SIGTERM or SIGINT: ``host.tick()`` every ``tick_s``, the consumers paused
    while the broker is down and resumed when it is back; then stop and close everything."""
    watch = BrokerWatch(
        lambda: check_broker(app.settings.redis_url),
        on_down=lambda: pause_consumers(worker),
        on_up=lambda: resume_consumers(worker),
    )
    stop = _stop_on_signals()
    settle_startup()
    next_tick = time.monotonic() + tick_s
    try:
        while True:
            if time.monotonic() >= next_tick:
                host.tick()
                next_tick = time.monotonic() + tick_s
            retry_in = watch.step()  # a probe while the broker is up; when due, backing off, while it is down
            if stop.wait(max(0.0, min(next_tick - time.monotonic(), retry_in or tick_s))):
                break
    finally:
        worker.stop()
        broker.close()
        store.close()
    return 0


def cmd_outbox_prune(app: App, args: argparse.Namespace) -> int:
    if not 0 < args.older_than_days < math.inf:  # inf would be written into the answer as Infinity, not JSON
        raise CaseboardError(f"--older-than-days must be a number more than 0, not {args.older_than_days}")
    store = DispatchStore(app.database_url)
    try:
        pruned = store.prune(args.older_than_days * 86_400)
    finally:
        store.close()
    sys.stdout.write(json.dumps({**pruned, "older_than_days": args.older_than_days}) + "\n")
    return 0


def cmd_outbox_status(app: App, args: argparse.Namespace) -> int:
    store = DispatchStore(app.database_url)
    try:
        status = store.status(args.name)
        handoffs = store.handoff_summary()
        named = store.dispatchers()
    finally:
        store.close()
    if named and args.name not in named:  # a mistyped name would show everything pending, as if stuck
        raise CaseboardError(
            f"no dispatcher named {args.name!r} has run on this ledger (those that have: {', '.join(named)})"
        )
    outbox = open_outbox(app.ledger)
    position = (status["position"][0], status["position"][1])
    on_redis = app.on_postgres  # the embedded ledger's is in process
    report = {
        "position": status["position"],
        "head": outbox.head(),
        "pending": outbox.pending(position),
        **{k: status[k] for k in ("delivered", "processed", "unprocessed", "duplicates_absorbed")},
        **check_broker(app.settings.redis_url if on_redis else None).to_dict(),
        "handoffs": handoffs,
    }
    sys.stdout.write(json.dumps(report) + "\n")
    return 0
