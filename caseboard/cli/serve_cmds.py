"""``caseboard serve``: the HTTP API on uvicorn; ``--demo`` loads incident-042 into a fresh embedded ledger.

In production it takes the ledger (and its key table) from ``CASEBOARD_DATABASE_URL`` (PostgreSQL), like
every other command; ``CASEBOARD_REDIS_URL`` is the dispatcher's and workers' concern, not the API's.

The listening socket is bound before anything is printed: a busy port is one line on stderr and exit
status 2, and "serving" is printed only once the socket is bound. Every connection has a header, a body and
a keep-alive timeout, and the process holds at most ``--max-connections`` at once
(``caseboard/api/http_protocol.py``, ADR 0041).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from caseboard.app import App, build_app
from caseboard.cli.arguments import seconds
from caseboard.cli.demo import cite_evidence, scenario_text, store_evidence
from caseboard.cli.ledger_cmds import submit_line
from caseboard.domain.errors import CaseboardError
from caseboard.domain.items import Role
from caseboard.folders import check_emptiable, refill
from caseboard.http_limits import HttpLimits
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
    limits = HttpLimits()
    serve.add_argument(
        "--header-timeout",
        type=seconds,
        default=limits.header_timeout_s,
        help=f"seconds a connection may take to send a request's headers (default {limits.header_timeout_s:g})",
    )
    serve.add_argument(
        "--body-timeout",
        type=seconds,
        default=limits.body_timeout_s,
        help=f"seconds a request may take to send its body after its headers (default {limits.body_timeout_s:g})",
    )
    serve.add_argument(
        "--keep-alive",
        type=int,
        default=limits.keep_alive_s,
        help=f"seconds an idle keep-alive connection stays open (default {limits.keep_alive_s})",
    )
    serve.add_argument(
        "--max-connections",
        type=int,
        default=limits.max_connections,
        help=f"connections one server process holds at once; more get 503 (default {limits.max_connections})",
    )
    serve.add_argument(
        "--max-connections-per-client",
        type=int,
        default=limits.max_connections_per_client,
        help="connections one client address holds at once in one server process; more get 503 (default "
        f"{limits.max_connections_per_client}; behind a proxy, raise it to --max-connections)",
    )
    serve.add_argument(
        "--trust-timestamps",
        action="store_true",
        help="honour a contribution's 'at' (importing recorded incidents only)",
    )
    serve.set_defaults(handler=cmd_serve, no_app=True)


def cmd_serve(_: None, args: argparse.Namespace) -> int:
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from caseboard.api import create_app
    from caseboard.api.factory import TRUST_TIMESTAMPS
    from caseboard.api.http_protocol import GuardedHttpProtocol
    from caseboard.heap import settle_startup

    settings = Settings.from_env()
    if not 0 < args.port < 65536:
        raise CaseboardError(f"--port must be between 1 and 65535, not {args.port}")
    if not 1 <= args.workers <= 64:
        raise CaseboardError(f"--workers must be between 1 and 64, not {args.workers}")
    limits = _limits(args)
    folder = check_emptiable(Path(args.demo_dir), "--demo-dir") if args.demo else None
    listening = bind(args.host, args.port)
    if folder is not None:
        refill(folder, "caseboard serve --demo")
        url = f"sqlite:///{folder}/ledger.db"
    else:
        url = args.database_url or settings.database_url
    try:
        app = build_app(settings, database_url=url)
    except BaseException:
        listening.close()
        raise
    try:
        keys = open_key_store(url, pool_size=settings.pool_size)
    except BaseException:
        listening.close()
        app.close()
        raise
    try:
        base = f"http://{args.host}:{args.port}"
        if args.demo:
            load_demo(app, keys, base)
        else:
            sys.stdout.write(f"caseboard: serving {base} (OpenAPI at {base}/docs) on {_redacted(url)}\n")
        sys.stdout.flush()
        level = "info" if settings.log_level == "debug" else "warning"
        options: dict[str, Any] = {"host": args.host, "port": args.port, "log_level": level}
        options.update(access_log=settings.log_level == "debug", http=GuardedHttpProtocol)
        options.update(timeout_keep_alive=limits.keep_alive_s)
        if args.workers > 1:
            os.environ["CASEBOARD_DATABASE_URL"] = url
            os.environ[TRUST_TIMESTAMPS] = "1" if args.trust_timestamps else "0"
            factory = "caseboard.api.factory:from_environment"
            config = uvicorn.Config(factory, factory=True, workers=args.workers, **options)
            config.caseboard_limits = limits  # type: ignore[attr-defined]
            Multiprocess(config, sockets=[listening]).run()
        else:
            config = uvicorn.Config(create_app(app, keys, trust_timestamps=args.trust_timestamps), **options)
            config.caseboard_limits = limits  # type: ignore[attr-defined]
            settle_startup()
            with _sigterm_unwinds():
                uvicorn.Server(config).run(sockets=[listening])
    finally:
        listening.close()
        keys.close()
        app.close()
    return 0


def _exit_cleanly(*_: object) -> NoReturn:
    raise SystemExit(0)


@contextlib.contextmanager
def _sigterm_unwinds() -> Iterator[None]:
    """After its graceful shutdown on SIGTERM, uvicorn raises the signal again under the handler it found
    (``uvicorn.Server.capture_signals``). The default handler would end the process there, before the ledger,
    the key store and their connections are closed; this one unwinds instead, so the process closes them and
    exits 0, as the dispatcher, the workers and ``serve --workers N`` do on SIGTERM."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _exit_cleanly)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _limits(args: argparse.Namespace) -> HttpLimits:
    if not 1 <= args.keep_alive <= 3600:
        raise CaseboardError(f"--keep-alive must be between 1 and 3600 seconds, not {args.keep_alive}")
    if not 1 <= args.max_connections <= 100_000:
        raise CaseboardError(f"--max-connections must be between 1 and 100000, not {args.max_connections}")
    if not 1 <= args.max_connections_per_client <= 100_000:
        raise CaseboardError(
            f"--max-connections-per-client must be between 1 and 100000, not {args.max_connections_per_client}"
        )
    return HttpLimits(
        args.header_timeout, args.body_timeout, args.keep_alive, args.max_connections, args.max_connections_per_client
    )


def bind(host: str, port: int) -> socket.socket:
    """The server's listening socket, bound; a port in use (or a host that is not this machine's) is the
    user's mistake, one line."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listening = socket.socket(family, socket.SOCK_STREAM)
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listening.bind((host, port))
    except OSError as error:
        listening.close()
        reason = error.strerror or str(error)
        hint = "; is another server using it? pick another with --port" if error.errno == 98 else ""
        raise CaseboardError(f"cannot listen on {host}:{port}: {reason}{hint}") from None
    listening.set_inheritable(True)
    return listening


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
    with contextlib.redirect_stdout(io.StringIO()):  # the story `make run` tells: its evidence, cited after v20
        cite_evidence(app, coordinator, "incident-042", store_evidence(app, None, DEMO_TENANT))
    tokens = {p: keys.create(p, (role,), DEMO_TENANT, "demo").token for p, role in authors.items()}
    other = keys.create("tenant-b-operator", (Role.OPERATOR,), "tenant-b", "demo").token
    out = sys.stdout
    head = app.ledger.head("incident-042")
    out.write(
        f"caseboard demo: incident-042 loaded ({head} versions, the last two citing stored evidence) into a fresh "
        "embedded ledger.\n"
    )
    out.write(f"Serving {base}  -  OpenAPI: {base}/docs  -  health: {base}/health  -  metrics: {base}/metrics\n")
    out.write(f"The auditor's pages: {base}/ui/ (sign in with a key below)\n\n")
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
