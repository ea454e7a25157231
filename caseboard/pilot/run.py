"""``caseboard pilot``: the whole pilot loop on this machine, from an alert to a person's handoff.

It starts, each in a process group of its own (so that Ctrl-C reaches only this process, which stops every
group): a private PostgreSQL and Redis, the recorded-reply model twin (unless ``CASEBOARD_MODEL_URL`` names a
model), ``caseboard serve``, a private Alertmanager posting to the serve's Alertmanager intake, a private
Prometheus whose rule fires on the demo service's authentication failures, the demo service (``service.py``)
with its two TLS endpoints, the dispatcher, the planner (with the controller, which delivers handoffs) and
the verifier, and a ``caseboard specialist`` for each source; in this process, the handoff receiver. The run
folder (``--dir``, emptied first) keeps the configuration it generated, the export, each process's log.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from caseboard.domain.errors import ConfigurationError
from caseboard.folders import check_emptiable, refill
from caseboard.pilot.progress import Follower, firing, has_series, pings, poll
from caseboard.pilot.receiver import Delivery, Receiver, describe
from caseboard.pilot.servers import (
    ALERTMANAGER,
    PROMETHEUS,
    Child,
    alertmanager,
    child,
    free_port,
    have_alertmanager,
    have_prometheus,
    in_use,
    private_postgres,
    prometheus,
    wait_for,
)

TENANT = "tenant-a"
MODEL = "caseboard-twin"
GROUP = '{}:{alertname="AuthFailuresHigh"}'
"""Alertmanager's key of the alert group (``group_by: [alertname]``): the workspace's id is made from it."""
RULES = """
groups:
  - name: payments
    interval: 1s
    rules:
      - alert: AuthFailuresHigh
        expr: sum(rate(auth_failures_total[5s])) > 2
        labels: {service: payments-api, env: production}
        annotations: {summary: "authentication failures on payments-api above 2 a second"}
"""
MISSING = (
    "caseboard pilot needs Prometheus and Alertmanager ({missing} not found): "
    "apt-get install prometheus prometheus-alertmanager"
)
NO_POSTGRES = (
    "caseboard pilot needs PostgreSQL: apt-get install postgresql (it starts a private server with initdb), or set "
    "CASEBOARD_DATABASE_URL to a PostgreSQL it may use (in a schema of its own)"
)
NO_REDIS = (
    "caseboard pilot needs Redis for its queues: apt-get install redis-server (or set CASEBOARD_REDIS_URL to a "
    "Redis it may use under a namespace of its own)"
)


@dataclass
class Options:
    folder: Path
    until_handoff: bool = False
    timeout_s: float = 300.0
    base_port: int = 0
    model_url: str | None = None


def check_programs(options: Options) -> None:
    """What is missing before anything starts, one line each."""
    missing = [p for p, found in ((PROMETHEUS, have_prometheus()), (ALERTMANAGER, have_alertmanager())) if not found]
    if missing:
        raise ConfigurationError(MISSING.format(missing=" and ".join(missing)))
    if options.model_url is not None and not os.environ.get("CASEBOARD_MODEL"):
        raise ConfigurationError(f"CASEBOARD_MODEL names no model: set it to the model's name at {options.model_url}")


PORTS = 10
"""The ports a run listens on at most: caseboard's server, the demo service's metrics, two TLS endpoints,
PostgreSQL, Redis, the handoff receiver, the model twin, Alertmanager and Prometheus."""


class Ports:
    """``base`` and up, one each, or free ports when ``base`` is 0."""

    def __init__(self, base: int) -> None:
        self.next = base
        taken = [str(port) for port in range(base, base + PORTS) if base and in_use(port)]
        if taken:
            raise ConfigurationError(
                f"--base-port {base}: the pilot listens on ports {base} to {base + PORTS - 1}, and "
                f"{', '.join(taken)} {'is' if len(taken) == 1 else 'are'} in use; pick another --base-port, "
                "or leave it out for free ports"
            )

    def take(self) -> int:
        if not self.next:
            return free_port()
        self.next += 1
        return self.next - 1


def run(options: Options, out: TextIO = sys.stdout) -> int:
    """The loop; SIGINT or SIGTERM stops everything it started (each process group, then this process's
    threads) and returns 130."""
    since = time.monotonic()
    check_emptiable(options.folder, "--dir")
    check_programs(options)
    caught: list[int] = []

    def stop(signum: int, _: FrameType | None) -> None:
        if not caught:
            caught.append(signum)
            raise KeyboardInterrupt  # SIGTERM unwinds as Ctrl-C does: a signal, not an error

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    status = 130
    try:
        with ExitStack() as stack:
            try:
                status = Pilot(options, out, stack, since).run()
            except KeyboardInterrupt:
                say(out, since, "interrupted: stopping everything it started")
            except (TimeoutError, RuntimeError) as error:  # a server that did not start: one line
                raise ConfigurationError(f"{error}; the logs are in {options.folder / 'logs'}") from None
            finally:
                for sig in previous:  # a second Ctrl-C does not cut the stopping short
                    signal.signal(sig, signal.SIG_IGN)
        say(out, since, "stopped: nothing it started is running")
        return status
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def say(out: TextIO, since: float, line: str) -> None:
    """One line of progress, with the seconds since the command started."""
    out.write(f"pilot {time.monotonic() - since:5.1f}s: {line}\n")
    out.flush()


class Pilot:
    def __init__(self, options: Options, out: TextIO, stack: ExitStack, since: float) -> None:
        self.options = options
        self.since = since
        self.out = out
        self.stack = stack
        self.folder = options.folder.resolve()
        self.ports = Ports(options.base_port)
        self.children: list[Child] = []
        self.database_url = ""
        self.redis_url = ""
        self.namespace = f"caseboard-pilot-{secrets.token_hex(4)}"
        self.secret = secrets.token_urlsafe(24)
        self.deadline = time.monotonic() + options.timeout_s
        self.serve_port, self.metrics_port = self.ports.take(), self.ports.take()
        self.base = f"http://127.0.0.1:{self.serve_port}"
        self.tls = [f"127.0.0.1:{self.ports.take()}" for _ in range(2)]
        self.change = self.folder / "certificate-changed"

    # -- starting ------------------------------------------------------------------------------------------

    def say(self, line: str) -> None:
        say(self.out, self.since, line)

    def started(self, running: Child, what: str) -> Child:
        self.children.append(running)
        self.say(f"started {what} (pid {running.pid})")
        return running

    def env(self, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
        for name in ("CASEBOARD_MODEL", "CASEBOARD_MODEL_API_KEY", "CASEBOARD_MODEL_TIMEOUT_S"):
            if self.options.model_url and os.environ.get(name):
                env[name] = os.environ[name]
        env.update(
            CASEBOARD_DATABASE_URL=self.database_url,
            CASEBOARD_REDIS_URL=self.redis_url,
            CASEBOARD_REDIS_NAMESPACE=self.namespace,
            CASEBOARD_TENANTS=str(self.folder / "tenants.toml"),
            CASEBOARD_SOURCES=str(self.folder / "sources.toml"),
            CASEBOARD_LOG_FORMAT="json",
            CASEBOARD_LOG_LEVEL="info",
        )
        env.update(extra)
        return env

    def caseboard(self, name: str, *args: str, **env: str) -> Child:
        log = self.folder / "logs" / f"{name}.log"
        command = [sys.executable, "-m", "caseboard", *args]
        return self.stack.enter_context(child(name, command, env=self.env(**env), log=log))

    def postgres(self) -> None:
        port = self.ports.take()
        try:
            running = self.stack.enter_context(private_postgres(port, self.folder / "logs" / "postgres.log"))
        except FileNotFoundError:
            from caseboard.database_url import DatabaseUrl

            configured = os.environ.get("CASEBOARD_DATABASE_URL", "")
            if not configured or DatabaseUrl.parse(configured).kind != "postgresql":
                raise ConfigurationError(NO_POSTGRES) from None
            schema = self.namespace.replace("-", "_")  # the URL's only query is ?schema= (DatabaseUrl)
            self.database_url = f"{configured.split('?', 1)[0]}?schema={schema}"
            self.stack.callback(self.drop_schema, schema)
            self.say(f"using the PostgreSQL of CASEBOARD_DATABASE_URL, in the schema {schema} (dropped at the end)")
            return
        self.database_url = f"postgresql://postgres@127.0.0.1:{port}/postgres"
        self.started(running, f"a private PostgreSQL on port {port} ({self.database_url}; a temporary cluster)")

    def drop_schema(self, schema: str) -> None:
        import psycopg
        from psycopg.sql import SQL, Identifier

        from caseboard.database_url import DatabaseUrl

        with psycopg.connect(**DatabaseUrl.parse(self.database_url).conninfo, autocommit=True) as conn:
            conn.execute(SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(Identifier(schema)))

    def redis(self) -> None:
        program = shutil.which("redis-server")
        if program is None:
            configured = os.environ.get("CASEBOARD_REDIS_URL")
            if not configured:
                raise ConfigurationError(NO_REDIS)
            self.redis_url = configured
            self.stack.callback(self.flush_namespace)
            self.say(f"using the Redis at {configured} under the namespace {self.namespace}")
            return
        port = self.ports.take()
        args = [program, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self.folder)]
        running = self.stack.enter_context(child("redis", args, log=self.folder / "logs" / "redis.log"))
        self.redis_url = f"redis://127.0.0.1:{port}/0"
        self.started(running, f"a private Redis on port {port}")
        import redis

        client = redis.Redis.from_url(self.redis_url, socket_connect_timeout=1)
        try:
            poll("Redis", lambda: pings(client), 20, [running])
        finally:
            client.close()

    def flush_namespace(self) -> None:
        import redis

        client = redis.Redis.from_url(self.redis_url)
        try:
            keys = list(client.scan_iter(match=f"{self.namespace}*"))
            if keys:
                client.delete(*keys)
        finally:
            client.close()

    def run(self) -> int:
        refill(self.folder, "caseboard pilot")  # an empty folder, or one a run made (check_emptiable)
        (self.folder / "logs").mkdir()
        self.say(f"run folder {self.folder} (the generated configuration, the export, every process's log)")
        self.postgres()
        self.redis()
        from caseboard.app import build_app
        from caseboard.domain.items import Role
        from caseboard.keys import open_key_store
        from caseboard.settings import Settings

        app = build_app(Settings(database_url=self.database_url, log_level="warning"), database_url=self.database_url)
        self.stack.callback(app.close)
        keys = open_key_store(self.database_url)
        try:
            intake = keys.create("alertmanager", (Role.INTAKE,), TENANT, "pilot").token
            operator = keys.create("pilot-operator", (Role.OPERATOR,), TENANT, "pilot").token
        finally:
            keys.close()
        receiver = self.receiver()
        model_url = self.model()
        serve = self.serve(receiver)
        prom, service = self.alerting(intake)
        self.workers(model_url)
        key = self.incident(prom, service, app, serve)
        delivery = self.handoff(app, key, receiver)
        self.links(app, key, delivery.document["workspace_version"], operator)
        if self.options.until_handoff:
            return 0
        self.say("everything keeps running so that the console answers; Ctrl-C stops it all")
        while not any(running.exited() for running in self.children):
            time.sleep(0.5)
        gone = next(running for running in self.children if running.exited())
        raise ConfigurationError(f"{gone.name} exited; see {gone.log}")

    def receiver(self) -> Receiver:
        secret_file = self.folder / "webhook.secret"
        secret_file.touch(mode=0o600)
        secret_file.write_text(self.secret)
        (self.folder / "handoffs").mkdir()
        receiver = Receiver(self.secret, self.ports.take(), self.folder / "handoffs")
        self.stack.callback(receiver.stop)
        self.say(f"handoff receiver listening at {receiver.url}")
        return receiver

    def model(self) -> str:
        """The endpoint the planner and the verifier ask: the one given, else the model twin, started here."""
        if self.options.model_url is not None:
            self.say(f"the planner and the verifier ask the model at {self.options.model_url}")
            return self.options.model_url
        port = self.ports.take()
        command = [sys.executable, "-m", "caseboard.pilot.twin", "--port", str(port)]
        command += ["--value", f"tls_targets={' '.join(self.tls)}"]
        twin = self.stack.enter_context(child("twin", command, log=self.folder / "logs" / "twin.log"))
        url = f"http://127.0.0.1:{port}/v1"
        self.started(twin, f"the model twin at {url}")
        self.say(
            "  the planner and the verifier are answered by recorded replies (caseboard/pilot/twin_replies.json), "
            "not by a model; set CASEBOARD_MODEL_URL to use one"
        )
        wait_for(f"{url}/models", alive=twin)
        return url

    def serve(self, receiver: Receiver) -> Child:
        (self.folder / "tenants.toml").write_text(
            f'[tenants.{TENANT}]\npublic_url = "{self.base}"\nclock_trusted = true\n'
            f"[tenants.{TENANT}.limits]\nmax_investigation_cycles = 10\n"
            f'[[tenants.{TENANT}.webhooks]]\nurl = "{receiver.url}"\nsecret_file = "{self.folder / "webhook.secret"}"\n'
        )
        serve = self.caseboard("serve", "serve", "--port", str(self.serve_port))
        self.started(serve, f"caseboard serve on {self.base}")
        wait_for(f"{self.base}/whoami", alive=serve)  # 401 without a key: it answers
        return serve

    def alerting(self, intake: str) -> tuple[str, Child]:
        """Alertmanager posting to the serve's intake, Prometheus with the rule, and the demo service."""
        logs = self.folder / "logs"
        hook = f"{self.base}/intake/alertmanager"
        port = self.ports.take()
        manager = self.stack.enter_context(alertmanager(hook, intake, 5, port=port, log=logs / "alertmanager.log"))
        self.say(f"started a private Alertmanager on {manager}, posting to {hook}")
        target = f"127.0.0.1:{self.metrics_port}"
        port = self.ports.take()
        prom = self.stack.enter_context(prometheus([target], RULES, manager, port=port, log=logs / "prometheus.log"))
        self.say(f"started a private Prometheus on {prom}, scraping {target} every second")
        (self.folder / "sources.toml").write_text(
            f'[tenants.{TENANT}.sources.prometheus]\ntype = "prometheus"\nendpoint = "{prom}"\nclock_trusted = true\n'
            f'[tenants.{TENANT}.sources.certs]\ntype = "tls"\noptions = {{ allowed = {json.dumps(self.tls)} }}\n'
        )
        command = [sys.executable, "-m", "caseboard.pilot.service", "--metrics-port", str(self.metrics_port)]
        command += ["--tls-ports", *(t.rsplit(":", 1)[1] for t in self.tls), "--change-file", str(self.change)]
        service = self.stack.enter_context(child("service", command, log=logs / "service.log"))
        self.started(
            service,
            f"the demo service payments-api: metrics on {target}, TLS on {self.tls[0]} (payments-api-1, old chain) "
            f"and {self.tls[1]} (payments-api-3, new chain)",
        )
        wait_for(f"http://{target}/metrics", alive=service)
        return prom, service

    def workers(self, model_url: str) -> None:
        self.started(self.caseboard("dispatch", "dispatch", "--poll", "0.1"), "the dispatcher")
        model = {"CASEBOARD_MODEL_URL": model_url}
        if self.options.model_url is None:
            model["CASEBOARD_MODEL"] = MODEL
        agent = ("agent", "--tenant", TENANT, "--tick", "0.5", "--turn-timeout", "30")
        planner = ("--role", "planner", "--principal", "planner-1", "--with-controller")
        self.started(
            self.caseboard("planner", *agent, *planner, **model),
            "the planner (model-backed; it runs the controller, which delivers handoffs)",
        )
        verifier = ("--role", "verifier", "--principal", "verifier-1")
        self.started(self.caseboard("verifier", *agent, *verifier, **model), "the verifier (model-backed)")
        for source in ("prometheus", "certs"):
            specialist = ("specialist", "--source", source, "--tenant", TENANT, "--tick", "0.5")
            self.started(self.caseboard(f"specialist-{source}", *specialist), f"caseboard specialist for {source}")

    def incident(self, prom: str, service: Child, app: Any, serve: Child) -> str:
        """The failures before the change, the change, the alert and its workspace; the workspace's key."""
        from caseboard.intake.alerts import AlertGroup
        from caseboard.intake.translate import workspace_id

        first = 'auth_failures_total{instance="payments-api-2"} > 0'
        poll("payments-api-2's first failures in Prometheus", lambda: has_series(prom, first), 60, [service])
        self.say("payments-api-2 is failing to authenticate; Prometheus has recorded it")
        self.change.touch()
        self.say("payments-api-3's certificate changes now (a new chain); it starts failing too")
        poll("the alert", lambda: firing(prom), self.left(), self.children)
        self.say("the alert AuthFailuresHigh fired in Prometheus; Alertmanager posts it to caseboard")
        group = AlertGroup(source="alertmanager", group=GROUP, labels={}, summary="", alerts=())
        key = f"{TENANT}/{workspace_id(group)}"
        poll("the workspace", lambda: app.ledger.head(key) > 0, self.left(), [serve, *self.children])
        return key

    def handoff(self, app: Any, key: str, receiver: Receiver) -> Delivery:
        follower = Follower(app, key, self.say)

        def arrived() -> bool:
            follower.follow()
            return bool(receiver.taken)

        poll("the handoff", arrived, self.left(), self.children)
        follower.follow()
        delivery = receiver.taken[0]
        self.say(f"the handoff arrived at the receiver, signature valid, delivery {delivery.delivery_id}:")
        for line in describe(delivery.document):
            self.out.write(f"    {line}\n")
        return delivery

    def links(self, app: Any, key: str, version: int, operator: str) -> None:
        export, report = self.folder / "export.jsonl", self.folder / "report.html"
        self.cli("export", key, "--out", str(export), "--with-excerpts")
        self.cli("report", str(export), "--out", str(report))
        shown = app.workspaces.show(key, version)
        claims = ", ".join(f"{h['id']} {h['status']}" for h in shown["hypotheses"]) or "none"
        self.say(f"the workspace is {shown['status']} at version {version}; hypotheses: {claims}")
        workspace = key.split("/", 1)[1]
        self.out.write(
            f"\n  console   {self.base}/ui/workspaces/{workspace}?version={version}   (sign in with {operator})\n"
            f"  report    file://{report}\n"
            f"  verify    caseboard verify {export}\n\n"
        )
        self.out.flush()

    def left(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    def cli(self, *args: str) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "caseboard", *args],
            env=self.env(CASEBOARD_LOG_LEVEL="warning"),
            capture_output=True,
            text=True,
            start_new_session=True,
        )
        if done.returncode != 0:
            raise ConfigurationError(f"caseboard {args[0]} failed: {done.stderr.strip()}")
