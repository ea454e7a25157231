"""``caseboard specialist --source NAME [--tenant T]``: a diagnostic source as a specialist (docs/sources.md)."""

from __future__ import annotations

import argparse
from typing import Any

from caseboard.agent.host import agent_host, role_queues, start_agent
from caseboard.app import App
from caseboard.cli.arguments import principal_id, seconds, tenant_id
from caseboard.cli.dispatch_cmds import consume_until_stopped, one_tenant, thread_count
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import ConfigurationError
from caseboard.sources.config import load_sources
from caseboard.sources.registry import SOURCES
from caseboard.sources.specialist import SourceSpecialist
from caseboard.workers.host import ConsumerHost
from caseboard.workers.live import broker_for
from caseboard.workers.runtime import Participant
from caseboard.workers.scripted import specialist_principal


def register(commands: Any) -> None:
    specialist = commands.add_parser(
        "specialist", help="answer work requests from a read-only diagnostic source (docs/sources.md)"
    )
    specialist.add_argument("--source", required=True, metavar="NAME", help="a source of $CASEBOARD_SOURCES")
    specialist.add_argument("--tenant", type=tenant_id, help="the tenant it acts for (default: the file's only tenant)")
    specialist.add_argument("--principal", type=principal_id, help="who it contributes as (default: <kind>-specialist)")
    specialist.add_argument("--tick", type=seconds, default=2.0, help="seconds between idle checks (default 2)")
    specialist.add_argument("--threads", type=thread_count, default=1)
    specialist.set_defaults(handler=cmd_specialist)


def specialist_for(app: App, source: str, tenant: str | None, principal: str | None) -> SourceSpecialist:
    """The specialist of ``source`` for ``tenant``, from the file ``CASEBOARD_SOURCES`` names."""
    if not app.settings.sources_path:
        raise ConfigurationError("CASEBOARD_SOURCES is not set: name the sources' configuration file (docs/sources.md)")
    tenant, sources = load_sources(app.settings.sources_path).tenant(tenant)
    config = sources.sources.get(source)
    if config is None:
        raise ConfigurationError(
            f"tenant {tenant!r} has no source {source!r} (it has {', '.join(sorted(sources.sources)) or 'none'})"
        )
    built = SOURCES.build(source, config)
    kinds = tuple(built.kinds)
    who = principal or (specialist_principal(kinds[0]) if len(kinds) == 1 else f"{source}-specialist")
    return SourceSpecialist(source, built, config, tenant, lambda: app.artifacts, who, kinds)


def specialist_host(app: App, store: DispatchStore, specialist: SourceSpecialist) -> ConsumerHost:
    """The consumers of ``specialist``'s kinds, for its tenant only: another tenant's work request goes on to a
    process of that tenant, never marked processed here (docs/adr/0157, 0183)."""
    cast: dict[str, Participant] = {f"specialist:{kind}": specialist for kind in specialist.kinds}
    return agent_host(app, store, cast, **one_tenant(app, specialist.tenant))


def cmd_specialist(app: App, args: argparse.Namespace) -> int:
    specialist = specialist_for(app, args.source, args.tenant, args.principal)
    store = DispatchStore(app.database_url)
    broker = broker_for(app)
    host = specialist_host(app, store, specialist)
    worker = start_agent(broker, host, role_queues(host.participants, False), args.threads, app.settings.worker_poll_ms)
    try:
        return consume_until_stopped(app, host, worker, broker, store, args.tick)
    finally:
        specialist.source.close()
