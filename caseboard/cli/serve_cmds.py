"""``caseboard serve``: the HTTP API on uvicorn; ``--demo`` loads incident-042 into a fresh embedded ledger.

In production it takes the ledger (and its key table) from ``CASEBOARD_DATABASE_URL`` (PostgreSQL), like
every other command; ``CASEBOARD_REDIS_URL`` is the dispatcher's and workers' concern, not the API's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from caseboard.app import App, build_app
from caseboard.cli.demo import scenario_text
from caseboard.cli.ledger_cmds import submit_line
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import Role
from caseboard.keys import KeyStore, open_key_store
from caseboard.settings import Settings

DEMO_TENANT = "tenant-a"


def register(commands: Any) -> None:
    serve = commands.add_parser("serve", help="serve the HTTP API (OpenAPI at /docs)")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--demo",
        action="store_true",
        help="load incident-042 into a fresh embedded ledger and create demo keys",
    )
    serve.add_argument("--demo-dir", default=".caseboard/serve-demo", help="where --demo keeps its ledger")
    serve.add_argument("--workers", type=int, default=1, help="worker processes (each opens its own pools)")
    serve.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="honour a contribution's 'at' (importing recorded incidents only)",
    )
    serve.set_defaults(handler=cmd_serve, no_app=True)


def cmd_serve(_: None, args: argparse.Namespace) -> int:
    import uvicorn

    from caseboard.api import create_app
    from caseboard.api.factory import TRUST_TIMESTAMPS

    settings = Settings.from_env()
    if not 0 < args.port < 65536:
        raise CaseboardError(f"--port must be between 1 and 65535, not {args.port}")
    if not 1 <= args.workers <= 64:
        raise CaseboardError(f"--workers must be between 1 and 64, not {args.workers}")
    if args.demo:
        folder = Path(args.demo_dir)
        shutil.rmtree(folder, ignore_errors=True)
        url = f"sqlite:///{folder}/ledger.db"
    else:
        url = args.database_url or settings.database_url
    app = build_app(settings, database_url=url)
    keys = open_key_store(url, pool_size=settings.pool_size)
    try:
        base = f"http://{args.host}:{args.port}"
        if args.demo:
            load_demo(app, keys, base)
        else:
            sys.stdout.write(f"caseboard: serving {base} (OpenAPI at {base}/docs) on {_redacted(url)}\n")
        sys.stdout.flush()
        level = "info" if settings.log_level == "debug" else "warning"
        options: dict[str, Any] = {"host": args.host, "port": args.port, "log_level": level}
        options["access_log"] = settings.log_level == "debug"
        if args.workers > 1:
            os.environ["CASEBOARD_DATABASE_URL"] = url
            os.environ[TRUST_TIMESTAMPS] = "1" if args.trust_timestamps else "0"
            factory = "caseboard.api.factory:from_environment"
            uvicorn.run(factory, factory=True, workers=args.workers, **options)
        else:
            uvicorn.run(create_app(app, keys, trust_timestamps=args.trust_timestamps), **options)
    finally:
        keys.close()
        app.close()
    return 0


def load_demo(app: App, keys: KeyStore, base: str) -> None:
    lines = [line for line in scenario_text(None, "incident-042.jsonl").splitlines() if line.strip()]
    coordinator = app.coordinator(trust_timestamps=True)
    authors: dict[str, Role] = {}
    for line in lines:
        author = json.loads(line)["author"]
        authors.setdefault(author["principal"], Role(author["role"]))
        outcome = submit_line(coordinator, "incident-042", line)
        if not outcome["ok"]:
            raise CaseboardError(f"the demo scenario was refused: {outcome['message']}")
    tokens = {p: keys.create(p, (role,), DEMO_TENANT, "demo").token for p, role in authors.items()}
    other = keys.create("tenant-b-operator", (Role.OPERATOR,), "tenant-b", "demo").token
    out = sys.stdout
    out.write("caseboard demo: incident-042 loaded (20 versions) into a fresh embedded ledger.\n")
    out.write(f"Serving {base}  -  OpenAPI: {base}/docs  -  health: {base}/health  -  metrics: {base}/metrics\n\n")
    out.write(f"Demo keys (tenant {DEMO_TENANT}; shown once):\n")
    for principal, token in tokens.items():
        out.write(f"  {principal:<22} {authors[principal].value:<11} {token}\n")
    out.write(f"  {'tenant-b-operator':<22} {'operator':<11} {other}   (tenant-b: sees no incident-042)\n\n")
    planner = tokens.get("planner-1", next(iter(tokens.values())))
    auth = f"-H 'Authorization: Bearer {planner}'"
    workspace = f"{base}/workspaces/incident-042"
    out.write("Try:\n")
    out.write(f"  curl -s {auth} '{workspace}/view?budget_chars=4000'\n")
    out.write(f"  curl -s {auth} '{workspace}?format=yaml'\n")
    out.write(f"  curl -sN {auth} '{workspace}/events?timeout_s=30'\n\n")


def _redacted(url: str) -> str:
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        credentials, host = rest.split("@", 1)
        return f"{scheme}://{credentials.split(':', 1)[0]}@{host}"
    return url
