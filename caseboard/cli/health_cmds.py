"""``caseboard health [WORKSPACE]``: coordination health, as a readable report or JSON (docs/health.md).

With a workspace: its figures as of its head (or ``--at-version N``), each with what it means. Without one:
every workspace of the ledger, summed per tenant. The figures come from the ledger alone
(``caseboard/projections/health.py``); the chain under them is checked first, as ``show`` does.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from caseboard.app import App, build_app
from caseboard.cli.reading import ledger_exists, raise_no_ledger
from caseboard.dispatcher.outbox import open_outbox
from caseboard.domain.errors import CaseboardError
from caseboard.mcp_server.catalog import Catalog
from caseboard.projections.health import FIGURES, NOT_INSTRUMENTED, ledger_health, tenant_health
from caseboard.replay.audit import check_ledger
from caseboard.settings import Settings, sqlite_path


def register(commands: Any) -> None:
    health = commands.add_parser(
        "health", help="coordination health: invalidations, stale evidence, outstanding work, budgets, outcomes"
    )
    health.add_argument("workspace", nargs="?", help="one workspace (default: every workspace, per tenant)")
    health.add_argument("--at-version", type=int, metavar="N", help="as of version N (one workspace only)")
    health.add_argument("--format", choices=["text", "json"], default="text")
    health.set_defaults(handler=cmd_health, no_app=True)


def cmd_health(_: None, args: argparse.Namespace) -> int:
    """Opens the ledger only once it is known to exist: a read never creates one (``cli/reading.py``)."""
    settings = Settings.from_env()
    url = args.database_url or settings.database_url
    if not ledger_exists(url):
        if args.workspace is not None:
            raise_no_ledger(args.workspace, url)
        raise CaseboardError(
            f"there is no ledger at {sqlite_path(url)}: no workspace to report on (a read creates none)"
        )
    app = build_app(settings, database_url=args.database_url)
    try:
        return report(app, args)
    finally:
        app.close()


def report(app: App, args: argparse.Namespace) -> int:
    if args.workspace is None:
        if args.at_version is not None:
            raise CaseboardError("--at-version needs a WORKSPACE: versions are per workspace")
        document = deployment_health(app)
        if args.format == "json":
            _json(document)
        else:
            sys.stdout.write(render_tenants(document))
        return 0
    key = app.workspaces.locate(args.workspace)
    report = ledger_health(app.ledger, key, args.at_version)
    check_ledger(app.ledger, key, report["workspace_version"], "no health was reported")
    if args.format == "json":
        _json({**report, "meaning": FIGURES})
    else:
        sys.stdout.write(render_report(report))
    return 0


def deployment_health(app: App) -> dict[str, Any]:
    """Every workspace of the ledger (learnt from its notification log), summed per tenant."""
    catalog = Catalog(open_outbox(app.ledger))
    catalog.refresh()
    tenants = {}
    for tenant in sorted(catalog.tenants):
        tenants[tenant] = tenant_health(ledger_health(app.ledger, key) for key in catalog.keys_of(tenant))
    return {"tenants": tenants, "meaning": FIGURES}


def _json(document: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False, indent=2) + "\n")


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:g} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def _meaning(name: str) -> str:
    return f"    ({FIGURES[name]})\n"


def render_report(report: dict[str, Any]) -> str:
    """One workspace's figures, each followed by what it means."""
    out = [
        f"health of {report['workspace_id']} (tenant {report['tenant_id']}) as of version "
        f"{report['workspace_version']}, {report['as_of']}; status {report['status']}\n",
        f"reducer {report['reducer_version']}; every figure is from the ledger and reproducible by replay, "
        f"except those marked {NOT_INSTRUMENTED!r}\n\n",
    ]
    inv = report["invalidations"]
    kinds = ", ".join(f"{k} {n}" for k, n in inv["by_change"].items() if n) or "none"
    out.append(f"invalidations: {inv['total']} ({kinds})\n")
    for event in inv["events"]:
        out.append(f"  - {event['proposal']} at version {event['version']}: {event['change']} (was {event['was']})\n")
    out.append(_meaning("invalidations"))
    stale = report["stale_evidence_in_use"]
    out.append(f"stale evidence in use: {stale['total']}\n")
    for obs in stale["observations"]:
        out.append(
            f"  - {obs['observation']} expired {obs['expires_at']} ({_age(obs['expired_for_s'])} ago), "
            f"under {', '.join(obs['proposals'])}\n"
        )
    out.append(_meaning("stale_evidence_in_use"))
    work = report["outstanding_work"]
    out.append(
        f"outstanding work: {work['awaiting_result']} awaiting a result, {work['claimed']} claimed, "
        f"{work['lease_lapsed']} with a lapsed lease; oldest {_age(work['oldest_age_s'])}\n"
    )
    for request in work["requests"]:
        out.append(f"  - {request['request_id']}: {request['status']}, {_age(request['age_s'])} old\n")
    out.append(_meaning("outstanding_work"))
    cycles = report["cycles"]
    budget = "no budget" if cycles["budget"] is None else f"of {cycles['budget']}"
    out.append(
        f"cycles: {cycles['used']} used {budget}; {cycles['scheduled_since_open']} scheduled since opening, "
        f"{cycles['reopens']} reopen(s)\n"
    )
    out.append(_meaning("cycles"))
    outcomes = report["outcomes"]["reached"]
    out.append(f"outcomes: {len(outcomes)}\n")
    for reached in outcomes:
        out.append(
            f"  - {reached['outcome']} at version {reached['version']}, {_age(reached['seconds_from_open'])} "
            f"after opening: {reached['reason']}\n"
        )
    out.append(_meaning("outcomes"))
    corr = report["operator_corrections"]
    accepted = ", ".join(corr["accepted_then_revalidation"]) or "none"
    out.append(
        f"operator corrections: {corr['reviews_revised']} revised, {corr['reviews_withdrawn']} withdrawn; "
        f"accepted plans that later required revalidation: {accepted}\n"
    )
    out.append(_meaning("operator_corrections"))
    late = report["late_counterevidence"]
    out.append(f"late counterevidence: {late['total']}\n")
    for obs in late["observations"]:
        out.append(
            f"  - {obs['observation']} at version {obs['recorded_at_version']}, bears on {', '.join(obs['bears_on'])}\n"
        )
    out.append(_meaning("late_counterevidence"))
    for name in ("refusals_by_reason", "duplicate_deliveries_absorbed"):
        out.append(f"{name.replace('_', ' ')}: {report[name]}\n")
        out.append(_meaning(name))
    return "".join(out)


def render_tenants(document: dict[str, Any]) -> str:
    tenants = document["tenants"]
    if not tenants:
        return "no workspaces in this ledger\n"
    out = []
    for tenant, figures in tenants.items():
        inv = figures["invalidations"]
        kinds = ", ".join(f"{k} {n}" for k, n in inv["by_change"].items() if n) or "none"
        work = figures["outstanding_work"]
        outcomes = ", ".join(f"{k} {n}" for k, n in figures["outcomes"].items() if n) or "none"
        corr = figures["operator_corrections"]
        first = figures["seconds_to_first_outcome"]
        out += [
            f"tenant {tenant}: {figures['workspaces']} workspace(s)\n",
            f"  invalidations: {inv['total']} ({kinds})\n",
            f"  stale evidence in use: {figures['stale_evidence_in_use']}\n",
            f"  outstanding work: {work['awaiting_result']} awaiting, {work['claimed']} claimed, "
            f"{work['lease_lapsed']} lapsed leases\n",
            f"  workspaces at their cycle budget: {figures['workspaces_at_cycle_budget']}\n",
            f"  outcomes: {outcomes}; time to first outcome: median {_age(first['median'])}, "
            f"max {_age(first['max'])}\n",
            f"  operator corrections: {corr['reviews_revised']} revised, {corr['reviews_withdrawn']} withdrawn, "
            f"{corr['accepted_then_revalidation']} accepted then revalidated\n",
            f"  late counterevidence: {figures['late_counterevidence']}\n",
            f"  refusals by reason: {figures['refusals_by_reason']}; duplicate deliveries absorbed: "
            f"{figures['duplicate_deliveries_absorbed']}\n",
        ]
    out.append("\n'caseboard health WORKSPACE' shows one workspace's figures and what each means.\n")
    return "".join(out)
