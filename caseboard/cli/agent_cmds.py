"""``caseboard agent`` (a model-backed participant as a process) and ``caseboard judgments`` (its audit)."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

from caseboard.agent.audit import judgments, table
from caseboard.agent.host import agent_host, role_queues, start_agent
from caseboard.agent.model import model_from_settings
from caseboard.agent.participant import ModelParticipant
from caseboard.agent.plugin import cast_principals, participant
from caseboard.app import App
from caseboard.cli.arguments import identifier, principal_id, request_kind, seconds
from caseboard.cli.dispatch_cmds import add_tenant_choice, consume_until_stopped, tenant_scope, thread_count
from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import ConfigurationError, UnknownWorkspace
from caseboard.domain.items import Role
from caseboard.workers.host import DEFAULT_KINDS
from caseboard.workers.live import broker_for
from caseboard.workers.plugins import load_participants
from caseboard.workers.runtime import Participant
from caseboard.workers.scripted import specialist_principal

ROLES = ("planner", "specialist", "verifier", "reporter")


def register(commands: Any) -> None:
    agent = commands.add_parser("agent", help="run a model-backed participant for one role (docs/participants.md)")
    agent.add_argument("--role", required=True, choices=ROLES)
    agent.add_argument(
        "--principal",
        required=True,
        type=principal_id,
        help="who it contributes as (the controller schedules planner-1, ...)",
    )
    agent.add_argument(
        "--workspace",
        action="append",
        default=[],
        type=identifier("workspace id", workspace=True),
        metavar="ID",
        help="only these workspaces (repeatable)",
    )
    agent.add_argument(
        "--kind",
        type=request_kind,
        action="append",
        default=[],
        metavar="KIND",
        help="a specialist's request kind (repeatable; default: every kind); with several, each kind's principal "
        "is <kind with dashes>-<principal>",
    )
    agent.add_argument(
        "--participant",
        default="model",
        metavar="NAME|MODULE:ATTR",
        help="the participant plugin: a caseboard.participants entry point or a factory module:attr (default model)",
    )
    agent.add_argument("--model-url", help="the OpenAI-compatible endpoint (default: $CASEBOARD_MODEL_URL)")
    agent.add_argument(
        "--with-controller", action="store_true", help="also run the controller and the lease sweeper here"
    )
    agent.add_argument("--turn-timeout", type=seconds, default=60.0, help="seconds a scheduled turn is waited for")
    agent.add_argument("--tick", type=seconds, default=2.0, help="seconds between controller ticks (default 2)")
    agent.add_argument("--threads", type=thread_count, default=1)
    add_tenant_choice(agent)
    agent.set_defaults(handler=cmd_agent)

    listing = commands.add_parser("judgments", help="every recorded model call of a workspace")
    listing.add_argument("workspace")
    listing.add_argument("--format", choices=["text", "json"], default="text")
    listing.set_defaults(handler=cmd_judgments, reads=True, locate=True)


def cast_for(app: App, args: argparse.Namespace) -> dict[str, Participant]:
    """The participants this agent runs, by the queue audience each serves."""
    role = Role(args.role)
    kinds = tuple(args.kind) or DEFAULT_KINDS
    if args.participant != "model":
        loaded = load_plugin(args.participant, kinds)
        chosen = {a: p for a, p in loaded.items() if a.split(":", 1)[0] == args.role}
        if not chosen:
            raise ConfigurationError(f"participant {args.participant!r} offers no {args.role}")
        return chosen
    model = model_from_settings(app.settings, url=args.model_url)
    found: dict[str, ModelParticipant] = {}
    if role is not Role.SPECIALIST:
        found[args.role] = participant(app, model, role, args.principal, principals=cast_principals(kinds))
    else:
        named = {
            kind: args.principal
            if len(kinds) == 1
            else f"{specialist_principal(kind)[: -len('-specialist')]}-{args.principal}"
            for kind in kinds
        }
        ours = cast_principals(kinds, *named.values())
        for kind, principal in named.items():
            found[f"specialist:{kind}"] = participant(app, model, role, principal, (kind,), ours)
    for each in found.values():
        each.workspaces = frozenset(args.workspace)
    return dict(found)


def load_plugin(name: str, kinds: tuple[str, ...]) -> dict[str, Participant]:
    if ":" not in name:
        return load_participants([name], kinds)
    module, _, attr = name.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as error:
        raise ConfigurationError(f"participant factory {name!r} cannot be loaded: {error}") from None
    return dict(factory(kinds))


def cmd_agent(app: App, args: argparse.Namespace) -> int:
    cast = cast_for(app, args)
    store = DispatchStore(app.database_url)
    broker = broker_for(app)
    host = agent_host(
        app,
        store,
        cast,
        with_controller=args.with_controller,
        turn_timeout_s=args.turn_timeout,
        **tenant_scope(app, args),
    )
    worker = start_agent(
        broker, host, role_queues(cast, args.with_controller), args.threads, app.settings.worker_poll_ms
    )
    return consume_until_stopped(app, host, worker, broker, store, args.tick)


def cmd_judgments(app: App, args: argparse.Namespace) -> int:
    if app.ledger.head(args.workspace) == 0:
        raise UnknownWorkspace(args.workspace)
    entries = judgments(app.ledger.iter_commits(args.workspace))
    if args.format == "json":
        for entry in entries:
            sys.stdout.write(json.dumps(entry) + "\n")
    else:
        sys.stdout.write(table(entries) + "\n")
    return 0
