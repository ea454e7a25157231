"""``caseboard knowledge search|audit|rebuild``: the knowledge store of promoted findings (docs/knowledge.md).

Each command first brings the store up to the ledger (the writer follows the notification log). ``search``
lists a tenant's current entries for a service, labelled as prior findings from other incidents; ``audit``
counts the entries without a verification behind them in the ledger (exit 1 when there is one);
``rebuild`` rebuilds the store from the ledger alone and says whether it equals the store (exit 1, and the
store replaced by the rebuild, when it did not).
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import Any

from caseboard.app import App
from caseboard.cli.arguments import tenant_id
from caseboard.domain.errors import CaseboardError
from caseboard.knowledge import Entry, audit, rebuild


def register(commands: Any) -> None:
    knowledge = commands.add_parser("knowledge", help="the store of promoted findings: search, audit, rebuild")
    sub = knowledge.add_subparsers(dest="knowledge_command", required=True, metavar="SUBCOMMAND")
    search = sub.add_parser("search", help="a tenant's current entries for a service (prior findings)")
    search.add_argument("--service", required=True, help="the service, e.g. payments-api")
    search.add_argument("--q", help="words the statement holds (any case)")
    search.add_argument(
        "--tenant", type=tenant_id, help="one tenant (default: every tenant, each entry naming its own)"
    )
    search.add_argument("--include-retired", action="store_true", help="retired and expired entries too")
    search.add_argument("--format", choices=["text", "json"], default="text")
    search.set_defaults(handler=cmd_search)
    check = sub.add_parser("audit", help="count the entries without a verification behind them (exit 1 if any)")
    check.set_defaults(handler=cmd_audit)
    again = sub.add_parser("rebuild", help="rebuild the store from the ledger and compare it with the store")
    again.set_defaults(handler=cmd_rebuild)


def cmd_search(app: App, args: argparse.Namespace) -> int:
    if args.q is not None and len(args.q) > 256:
        raise CaseboardError("--q is at most 256 characters")
    store = app.knowledge().store
    now = datetime.now(UTC)
    tenants = [args.tenant] if args.tenant else sorted({entry.tenant_id for entry in store.entries()})
    found: list[Entry] = []
    for tenant in tenants:
        found.extend(
            store.search(tenant, service=args.service, text=args.q, include_retired=args.include_retired, as_of=now)
        )
    if args.format == "json":
        document = {
            "label": "prior findings from other incidents: not evidence for any current incident",
            "entries": [{"tenant_id": entry.tenant_id, **entry.document(now)} for entry in found],
        }
        sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")
        return 0
    sys.stdout.write(render(found, now))
    return 0


def render(entries: list[Entry], now: datetime) -> str:
    if not entries:
        return "no knowledge entries match\n"
    lines = ["Prior findings from other incidents (not evidence for a current incident):"]
    for entry in entries:
        state = "current" if entry.current(now) else ("retired" if entry.retired else "expired")
        lines.append(f"- {entry.entry_id} [{state}] ({entry.tenant_id}, {entry.service}/{entry.environment})")
        lines.append(f"    {entry.statement}")
        lines.append(
            f"    from {entry.workspace_id} version {entry.version}: {entry.finding_kind} {entry.finding}, "
            f"verified at version {entry.verification_version} by {entry.verified_by}; owner {entry.owner}"
        )
        lines.append(f"    held from {entry.valid_from} until {entry.valid_until or '-'}; recorded {entry.recorded_at}")
        if entry.retired:
            lines.append(
                f"    retired {entry.retired_at} ({entry.retired_in}): {entry.retire_reason}; "
                f"contradicted by {entry.contradicted_by}"
            )
    return "\n".join(lines) + "\n"


def cmd_audit(app: App, args: argparse.Namespace) -> int:
    entries = app.knowledge().store.entries()
    unbacked = audit(entries, app.ledger)
    for problem in unbacked:
        sys.stdout.write(f"{problem.entry.tenant_id} {problem.entry.entry_id}: {problem.problem}\n")
    sys.stdout.write(f"{len(entries)} entries, {len(unbacked)} without a verification behind them\n")
    return 1 if unbacked else 0


def cmd_rebuild(app: App, args: argparse.Namespace) -> int:
    writer = app.knowledge()
    stored = writer.store.entries()
    rebuilt = rebuild(app.ledger)
    if rebuilt == stored:
        sys.stdout.write(f"rebuilt {len(rebuilt)} entries from the ledger: equal to the store\n")
        return 0
    differing = len(set(rebuilt) ^ set(stored))
    writer.store.replace_all(rebuilt)
    sys.stdout.write(
        f"rebuilt {len(rebuilt)} entries from the ledger: {differing} rows differed from the store, "
        "which now holds the rebuild\n"
    )
    return 1
