"""Soak test: mixed load on ``caseboard serve`` through database crashes, broker restarts and server kills.

    make soak                          # 30 minutes
    .venv/bin/python scripts/soak.py --minutes 3

Everything runs on private servers started for the run, on free loopback ports (tests/private_services.py):
a PostgreSQL cluster, a Redis server, ``caseboard serve``, ``caseboard dispatch`` and ``caseboard worker
--passive``. Meanwhile:

- writers submit observations to workspaces of their own (each with an idempotency key, so a submission
  whose answer was lost is retried safely), readers read projections, ledgers, views and ``/health``, and a
  subscriber follows ``/events``;
- every ``--outage-every`` seconds PostgreSQL is crashed (``pg_ctl -m immediate``) for ``--outage-s``
  seconds and started again; every ``--broker-every`` seconds Redis is killed (SIGKILL: it keeps nothing)
  and started again; every ``--kill-every`` seconds the server is killed with SIGKILL and started again.

Nothing but the killed server is ever restarted. At the end the script checks that every commit a writer
was told about (a 2xx answer) is in the ledger at the version it was told, that each workspace's versions
run 1, 2, 3... without a gap, that the server served again within ``--recovery-s`` of each database
outage's end, that the dispatcher and the worker are still running and delivered everything, and prints
its figures as one JSON object on the last line. Exit status 0 when every check held.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from caseboard.domain.items import Role  # noqa: E402
from caseboard.domain.workspace_key import scoped  # noqa: E402
from caseboard.keys import open_key_store  # noqa: E402
from caseboard.ledger import open_ledger  # noqa: E402
from tests.http_server import observation, open_body  # noqa: E402
from tests.private_services import PrivatePostgres, PrivateRedis, free_port, private_postgres, private_redis  # noqa: E402

TENANT = "tenant-a"
"""The tenant of every key the soak makes, and so of every workspace it opens."""

CHILDREN: list[subprocess.Popen[bytes]] = []  # every process this run started: killed whatever way it ends


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the private servers' blocks, which stop them


@dataclass
class Figures:
    statuses: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: list[float] = field(default_factory=list)
    acknowledged: dict[str, dict[str, int]] = field(default_factory=dict)
    last_accepted: dict[str, float] = field(default_factory=dict)
    outage_slowest: float = 0.0
    outage_slowest_label: str = ""
    in_flight_slowest: float = 0.0
    in_flight_slowest_label: str = ""
    in_outage: bool = False
    outage_began: float = 0.0
    bad_answers: list[str] = field(default_factory=list)
    events_seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, what: str, started: float, label: str) -> None:
        """An answer (or a transport error) to a request ``label`` sent at ``started``. A request sent while the
        database was down must be answered promptly; one already in flight when it crashed may wait for the
        appender to give up on its batch (ADR 0040), and is reported apart."""
        seconds = time.monotonic() - started
        with self.lock:
            self.statuses[what] += 1
            if what.startswith("2"):
                self.latencies.append(seconds)
            if self.in_outage and started >= self.outage_began and seconds > self.outage_slowest:
                self.outage_slowest, self.outage_slowest_label = seconds, f"{label} -> {what}"
            elif self.in_outage and started < self.outage_began and seconds > self.in_flight_slowest:
                self.in_flight_slowest, self.in_flight_slowest_label = seconds, f"{label} -> {what}"


class Server:
    """``caseboard serve`` on one port, killed and started again on the same port."""

    def __init__(self, url: str, folder: Path) -> None:
        self.url = url
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.folder = folder
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 60) -> float:
        env = {**os.environ, "CASEBOARD_DATABASE_URL": self.url, "CASEBOARD_LOG_LEVEL": "warning"}
        log = (self.folder / f"serve-{self.starts}.log").open("wb")
        started = time.monotonic()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "caseboard", "serve", "--port", str(self.port)], env=env, stdout=log, stderr=log
        )
        CHILDREN.append(self.process)
        self.starts += 1
        while True:
            try:
                if httpx.get(f"{self.base}/health", timeout=2).status_code == 200:
                    return time.monotonic() - started
            except httpx.TransportError:
                pass
            if self.process.poll() is not None or time.monotonic() - started > timeout:
                raise RuntimeError(f"the server did not start: see {log.name}")
            time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()


def writer(server: Server, token: str, workspace: str, figures: Figures, stop: threading.Event) -> None:
    acknowledged = figures.acknowledged[workspace]
    number = 0
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        while not stop.is_set():
            body = {"items": [observation(f"obs-{number}")], "idempotency_key": f"{workspace}/obs-{number}"}
            started = time.monotonic()
            try:
                answer = client.post(f"{server.base}/workspaces/{workspace}/contributions", json=body)
            except httpx.TransportError as error:
                figures.saw(type(error).__name__, started, "POST contributions")
                stop.wait(0.05)
                continue  # the same idempotency key again: landed or not, it is recorded once
            figures.saw(str(answer.status_code), started, "POST contributions")
            if answer.status_code in (200, 201):
                acknowledged[f"obs-{number}"] = answer.json()["workspace_version"]
                figures.last_accepted[workspace] = time.monotonic()
                number += 1
            elif answer.status_code == 503:
                if answer.json().get("reason") != "unavailable" or "Retry-After" not in answer.headers:
                    figures.bad_answers.append(answer.text[:200])
            else:
                figures.bad_answers.append(f"{answer.status_code} {answer.text[:200]}")
            stop.wait(0.02)


def reader(server: Server, token: str, workspaces: list[str], figures: Figures, stop: threading.Event) -> None:
    paths = ["", "/ledger?limit=20", "/view?budget_chars=2000", "/timeline"]
    turn = 0
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        while not stop.is_set():
            workspace = workspaces[turn % len(workspaces)]
            path = f"/workspaces/{workspace}{paths[turn % len(paths)]}" if turn % 5 else "/health"
            label = "GET " + (path.split("?")[0].replace(f"/workspaces/{workspace}", "/workspaces/{id}") or "/")
            turn += 1
            started = time.monotonic()
            try:
                answer = client.get(f"{server.base}{path}")
            except httpx.TransportError as error:
                figures.saw(type(error).__name__, started, label)
                stop.wait(0.05)
                continue
            figures.saw(str(answer.status_code), started, label)
            if answer.status_code >= 500 and answer.status_code != 503:
                figures.bad_answers.append(f"{answer.status_code} {path} {answer.text[:200]}")
            stop.wait(0.05)


def subscriber(server: Server, token: str, workspace: str, figures: Figures, stop: threading.Event) -> None:
    after = 0
    with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as client:
        while not stop.is_set():
            try:
                url = f"{server.base}/workspaces/{workspace}/events"
                with client.stream("GET", url, params={"after": after, "timeout_s": 20}) as response:
                    for line in response.iter_lines():
                        if line.startswith("id: "):
                            after = int(line[4:])
                            figures.events_seen += 1
                        if stop.is_set():
                            return
            except (httpx.TransportError, ValueError):
                stop.wait(0.2)


def outbox_status(url: str, redis_url: str, namespace: str) -> dict[str, Any]:
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_REDIS_URL": redis_url}
    env["CASEBOARD_REDIS_NAMESPACE"] = namespace
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "outbox", "status"], env=env, capture_output=True, text=True, timeout=60
    )
    return dict(json.loads(done.stdout)) if done.returncode == 0 else {"error": done.stderr.strip()}


def soak(args: argparse.Namespace, pg: PrivatePostgres, redis: PrivateRedis, folder: Path) -> dict[str, Any]:
    url = pg.url
    keys = open_key_store(url)
    operator = keys.create("soak-operator", (Role.OPERATOR,), TENANT).token
    writers = [keys.create(f"soak-writer-{n}", (Role.SPECIALIST,), TENANT).token for n in range(args.writers)]
    reader_token = keys.create("soak-reader", (Role.CONTROLLER,), TENANT).token
    keys.close()
    namespace = "caseboard-soak"
    server = Server(url, folder)
    server.start()
    workspaces = [f"soak-{n}" for n in range(args.writers)]
    with httpx.Client(headers={"Authorization": f"Bearer {operator}"}, timeout=30) as client:
        for workspace in workspaces:
            assert client.post(f"{server.base}/workspaces", json=open_body(workspace)).status_code == 201
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_REDIS_URL": redis.url}
    env.update(CASEBOARD_REDIS_NAMESPACE=namespace, CASEBOARD_LOG_LEVEL="warning", CASEBOARD_LOG_FORMAT="json")
    helpers = {
        name: subprocess.Popen(
            [sys.executable, "-m", "caseboard", *command],
            env=env,
            stdout=(folder / f"{name}.log").open("wb"),
            stderr=subprocess.STDOUT,
        )
        for name, command in (
            ("dispatch", ["dispatch", "--redrive-after", "10"]),
            ("worker", ["worker", "--passive", "--all-tenants"]),
        )
    }

    CHILDREN.extend(helpers.values())
    figures = Figures(acknowledged={w: {} for w in workspaces}, last_accepted={w: 0.0 for w in workspaces})
    stop = threading.Event()
    threads = [
        threading.Thread(target=writer, args=(server, writers[n], workspaces[n], figures, stop), daemon=True)
        for n in range(args.writers)
    ]
    threads += [
        threading.Thread(target=reader, args=(server, reader_token, workspaces, figures, stop), daemon=True)
        for _ in range(args.readers)
    ]
    threads.append(
        threading.Thread(target=subscriber, args=(server, reader_token, workspaces[0], figures, stop), daemon=True)
    )
    for thread in threads:
        thread.start()

    began = time.monotonic()
    end = began + args.minutes * 60
    next_outage = began + args.outage_every
    next_broker = began + args.broker_every
    next_kill = began + args.kill_every
    recoveries: list[float] = []
    unrecovered = 0
    server_restarts: list[float] = []
    while time.monotonic() < end:
        now = time.monotonic()
        if now >= next_outage:
            figures.outage_began = time.monotonic()
            figures.in_outage = True
            pg.stop("immediate")
            time.sleep(args.outage_s)  # the outage's length, not a wait for work
            pg.start()
            back = time.monotonic()
            figures.in_outage = False
            while min(figures.last_accepted.values()) < back and time.monotonic() - back < args.recovery_s:
                time.sleep(0.02)
            if min(figures.last_accepted.values()) >= back:
                recoveries.append(max(figures.last_accepted.values()) - back)
            else:
                unrecovered += 1
            next_outage = time.monotonic() + args.outage_every
        elif now >= next_broker:
            redis.restart()
            next_broker = time.monotonic() + args.broker_every
        elif now >= next_kill:
            server.kill()
            server_restarts.append(server.start())
            next_kill = time.monotonic() + args.kill_every
        else:
            time.sleep(0.1)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    ran_s = time.monotonic() - began

    helpers_alive = {name: process.poll() is None for name, process in helpers.items()}
    deadline = time.monotonic() + 60
    status = outbox_status(url, redis.url, namespace)
    while status.get("unprocessed", 1) or status.get("pending", 1):
        if time.monotonic() > deadline:
            break
        time.sleep(1)
        status = outbox_status(url, redis.url, namespace)
    for process in helpers.values():
        process.send_signal(signal.SIGTERM)
    for process in helpers.values():
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    server.stop()

    lost, gaps = [], []
    ledger = open_ledger(url)
    try:
        for workspace in workspaces:
            commits = ledger.read(scoped(TENANT, workspace))  # opened by a tenant-a key: stored under its tenant
            if [c.version for c in commits] != list(range(1, len(commits) + 1)):
                gaps.append(workspace)
            landed = {getattr(item, "id", None): c.version for c in commits for item in c.items}
            lost += [
                f"{workspace} {obs} v{version}"
                for obs, version in figures.acknowledged[workspace].items()
                if landed.get(obs) != version
            ]
    finally:
        ledger.close()

    latencies = sorted(figures.latencies)
    acknowledged = sum(map(len, figures.acknowledged.values()))
    report = {
        "minutes": round(ran_s / 60, 2),
        "writers": args.writers,
        "readers": args.readers,
        "requests": sum(figures.statuses.values()),
        "statuses": dict(sorted(figures.statuses.items())),
        "commits_acknowledged": acknowledged,
        "commits_per_s": round(acknowledged / ran_s, 1),
        "ok_p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "ok_p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] * 1000, 1) if latencies else None,
        "database_outages": pg.outages,
        "outage_s": args.outage_s,
        "slowest_answer_during_outages_s": round(figures.outage_slowest, 3),
        "slowest_answer_during_outages": figures.outage_slowest_label,
        "slowest_in_flight_at_a_crash_s": round(figures.in_flight_slowest, 3),
        "slowest_in_flight_at_a_crash": figures.in_flight_slowest_label,
        "recovered_outages": len(recoveries),
        "unrecovered_outages": unrecovered,
        "recovery_max_s": round(max(recoveries), 2) if recoveries else None,
        "recovery_median_s": round(statistics.median(recoveries), 2) if recoveries else None,
        "broker_restarts": redis.restarts,
        "server_kills": len(server_restarts),
        "server_restart_max_s": round(max(server_restarts), 2) if server_restarts else None,
        "events_seen": figures.events_seen,
        "helpers_alive_at_end": helpers_alive,
        "outbox": {k: status.get(k) for k in ("head", "pending", "delivered", "processed", "unprocessed")},
        "lost": len(lost),
        "workspaces_with_gaps": gaps,
        "bad_answers": len(figures.bad_answers),
    }
    if lost:
        report["lost_examples"] = lost[:5]
    if figures.bad_answers:
        report["bad_answer_examples"] = figures.bad_answers[:3]
    report["ok"] = bool(
        not lost
        and not gaps
        and not unrecovered
        and not figures.bad_answers
        and figures.outage_slowest <= args.prompt_s
        and all(helpers_alive.values())
        and not status.get("unprocessed")
    )
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--outage-every", type=float, default=60.0, help="seconds between database crashes")
    parser.add_argument("--outage-s", type=float, default=5.0, help="how long each database outage lasts")
    parser.add_argument("--broker-every", type=float, default=45.0, help="seconds between Redis restarts")
    parser.add_argument("--kill-every", type=float, default=75.0, help="seconds between server kills")
    parser.add_argument("--recovery-s", type=float, default=10.0, help="the server must serve again within this")
    parser.add_argument(
        "--prompt-s", type=float, default=2.0, help="a request sent during an outage is answered within this"
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs' folder")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="caseboard-soak-"))
    signal.signal(signal.SIGTERM, _terminated)
    try:
        with private_postgres() as pg, private_redis() as redis:
            report = soak(args, pg, redis, folder)
    finally:
        for child in CHILDREN:
            if child.poll() is None:
                child.kill()
                child.wait(timeout=10)
    report["logs"] = str(folder)
    for name, value in report.items():
        if name != "ok":
            print(f"{name:>34}: {value}")
    print(json.dumps(report, separators=(",", ":")))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
