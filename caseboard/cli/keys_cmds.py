"""``caseboard keys create|list|revoke``: API keys, stored hashed beside the ledger; a token is shown once."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from caseboard.app import App
from caseboard.cli.arguments import principal_id, tenant_id, text
from caseboard.cli.output import emit_line
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import Role
from caseboard.keys import ApiKey, open_key_store

LABEL_MAX = 256
"""The longest note a key carries: it is listed with every key."""


def register(commands: Any) -> None:
    keys = commands.add_parser("keys", help="API keys for the HTTP API (create, list, revoke)")
    actions = keys.add_subparsers(dest="keys_action", required=True, metavar="ACTION", parser_class=type(keys))
    create = actions.add_parser("create", help="create a key and print its token (shown once)")
    create.add_argument("--principal", required=True, type=principal_id, help="who the key's holder is, e.g. planner-1")
    create.add_argument(
        "--role",
        action="append",
        required=True,
        choices=[r.value for r in Role],
        help="a role the key may act in (repeat for several)",
    )
    create.add_argument("--tenant", required=True, type=tenant_id, help="the tenant whose workspaces the key can see")
    create.add_argument(
        "--label", type=text("label", LABEL_MAX), help=f"a note for operators (at most {LABEL_MAX} characters)"
    )
    create.set_defaults(handler=cmd_create)
    listing = actions.add_parser("list", help="the keys, one JSON object per line (never their tokens)")
    listing.add_argument("--all", action="store_true", help="include revoked keys")
    listing.set_defaults(handler=cmd_list)
    revoke = actions.add_parser("revoke", help="revoke a key by its id; it stops working at once")
    revoke.add_argument("key_id")
    revoke.set_defaults(handler=cmd_revoke)


def _store_url(app: App, args: argparse.Namespace) -> str:
    return str(args.database_url or app.settings.database_url)


def public(key: ApiKey) -> dict[str, Any]:
    return key.model_dump(mode="json", exclude_none=True)


def cmd_create(app: App, args: argparse.Namespace) -> int:
    store = open_key_store(_store_url(app, args))
    try:
        issued = store.create(args.principal, tuple(Role(r) for r in args.role), args.tenant, args.label)
    finally:
        store.close()
    emit_line({**public(issued.key), "token": issued.token})
    sys.stderr.write("caseboard: store this token now; it is shown only once\n")
    return 0


def cmd_list(app: App, args: argparse.Namespace) -> int:
    store = open_key_store(_store_url(app, args))
    try:
        for key in store.list():
            if key.active or args.all:
                emit_line(public(key))
    finally:
        store.close()
    return 0


def cmd_revoke(app: App, args: argparse.Namespace) -> int:
    store = open_key_store(_store_url(app, args))
    try:
        key = store.revoke(args.key_id)
    finally:
        store.close()
    if key is None:
        raise CaseboardError(f"no key with id {args.key_id!r} (see caseboard keys list --all)")
    emit_line(public(key))
    return 0
