"""The pilot loop's two ends, on PostgreSQL and Redis, with every part in its own process as deployed.

- ``alert_to_workspace_ms``: an Alertmanager notification of a new alert group posted to ``caseboard serve``'s
  ``/intake/alertmanager`` until its answer, which comes once the workspace's opening and the alert's
  observation are committed (p50, p99; goal p99 < 50 ms).
- ``handoff_latency_ms``: an operator's status commit (``human_review_required``) until the tenant's webhook
  receives the signed handoff, through the outbox, ``caseboard dispatch``, Redis and ``caseboard worker``
  (p50, p99 from the commit's landing; goal p99 < 100 ms). The escalations are paced at 10 a second (each
  after its workspace's opening), the receiver keeps its connection alive.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from benchmarks.context import BenchContext, p99_of
from benchmarks.http import KeepAlive, _server_process
from caseboard.app import build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.logs import configure_logging
from caseboard.settings import Settings

SECRET = "bench-webhook-secret"


def _alert(n: int) -> bytes:
    group = f'{{}}:{{alertname="Bench{n}"}}'
    body = {
        "version": "4",
        "groupKey": group,
        "status": "firing",
        "receiver": "caseboard",
        "groupLabels": {"alertname": f"Bench{n}"},
        "commonLabels": {"alertname": f"Bench{n}", "service": "payments-api", "env": "production"},
        "commonAnnotations": {"summary": "authentication failures"},
        "externalURL": "http://alertmanager.local",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": f"Bench{n}", "instance": "payments-api-1"},
                "annotations": {"summary": "authentication failures on payments-api-1"},
                "startsAt": "2026-03-02T13:52:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus.local/graph",
                "fingerprint": f"fp{n}",
            }
        ],
    }
    return json.dumps(body).encode()


def alert_to_workspace(ctx: BenchContext, groups: int) -> list[float]:
    with ctx.fresh_schema() as url:
        keys = open_key_store(url)
        token = keys.create("alertmanager", (Role.INTAKE,), "bench").token
        keys.close()
        with _server_process(url) as port:
            client = KeepAlive(port, token)
            try:
                client.post("/intake/alertmanager", _alert(-1))  # the first request warms the server up
                times = []
                for n in range(groups):
                    started = time.perf_counter()
                    status, answer = client.post("/intake/alertmanager", _alert(n))
                    times.append((time.perf_counter() - started) * 1000)
                    assert status == 201 and json.loads(answer)["opened"], answer
            finally:
                client.close()
    return times


class Receiver:
    """The tenant's webhook: the time each handoff id first arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        arrivals = self.arrivals

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as a receiver behind any web server

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                arrivals.setdefault(self.headers["Caseboard-Delivery"], time.time())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _submit(coordinator: Any, key: str, principal: str, role: str, item: dict[str, Any]) -> int:
    """The version the item landed at (the worker's controller commits cycles to the same workspaces)."""
    workspace = key.rpartition("/")[2]
    line = json.dumps({"workspace_id": workspace, "author": {"principal": principal, "role": role}, "items": [item]})
    outcome = coordinator.submit(parse_contribution(line), key)
    assert outcome["ok"], outcome
    return int(outcome["workspace_version"])


def _open(tenant: str) -> dict[str, Any]:
    limits = dict.fromkeys(
        ("max_selected_items", "max_investigation_cycles", "max_open_questions", "max_proposals", "max_pending_work"),
        10,
    )
    scope = {"tenant_id": tenant, "environment": "bench", "service": "bench"}
    return {"type": "open", "scope": scope, "goal": "bench", "runtime_limits": limits, "execution_mode": "read_only"}


ESCALATE = {"type": "status", "to": "human_review_required", "reason": "bench", "handoff": "look"}


def handoff_latency(ctx: BenchContext, handoffs: int) -> list[float]:
    receiver = Receiver()
    with ctx.fresh_schema() as url, TemporaryDirectory() as folder:
        tenants = Path(folder) / "tenants.toml"
        tenants.write_text(f'[[tenants.bench.webhooks]]\nurl = "{receiver.url}"\nsecret_env = "BENCH_SECRET"\n')
        env = {
            **os.environ,
            "CASEBOARD_DATABASE_URL": url,
            "CASEBOARD_REDIS_URL": ctx.redis_url,
            "CASEBOARD_REDIS_NAMESPACE": f"bench-{uuid.uuid4().hex[:10]}",
            "CASEBOARD_TENANTS": str(tenants),
            "CASEBOARD_LOG_LEVEL": "warning",
            "BENCH_SECRET": SECRET,
        }
        app = build_app(Settings(database_url=url, redis_url=ctx.redis_url))
        coordinator = app.coordinator()
        _submit(coordinator, "bench/ws-warm", "op", "operator", _open("bench"))  # the schema exists before they start
        processes = [
            subprocess.Popen([sys.executable, "-m", "caseboard", *command], env=env, stdout=subprocess.DEVNULL)
            for command in (("worker", "--tenant", "bench"), ("dispatch",))
        ]
        try:
            warm = _submit(coordinator, "bench/ws-warm", "op", "operator", ESCALATE)
            deadline = time.monotonic() + 60
            while f"bench/ws-warm@{warm}/handoff" not in receiver.arrivals:  # the worker and dispatcher are up
                if time.monotonic() > deadline:
                    raise RuntimeError("the first handoff did not arrive within 60 s")
                time.sleep(0.01)
            landed: dict[str, float] = {}
            tick = time.perf_counter()
            for n in range(handoffs):
                key = f"bench/ws-{n}"
                _submit(coordinator, key, "op", "operator", _open("bench"))
                tick += 1 / 10
                time.sleep(max(0.0, tick - time.perf_counter()))
                version = _submit(coordinator, key, "op", "operator", ESCALATE)
                landed[f"{key}@{version}/handoff"] = time.time()
            deadline = time.monotonic() + 60
            while not set(landed) <= set(receiver.arrivals) and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            for process in processes:
                process.terminate()
                process.wait(30)
            app.close()
            receiver.close()
    missing = set(landed) - set(receiver.arrivals)
    if missing:
        raise RuntimeError(f"{len(missing)} of {handoffs} handoffs did not arrive within 60 s")
    return [(receiver.arrivals[hid] - at) * 1000 for hid, at in landed.items()]


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json")
    intake = alert_to_workspace(ctx, 20 if ctx.quick else 300)
    handed = handoff_latency(ctx, 10 if ctx.quick else 100)
    return {
        "alert_to_workspace_ms": p99_of(intake),
        "alert_to_workspace_p50_ms": statistics.median(intake),
        "handoff_latency_ms": p99_of(handed),
        "handoff_latency_p50_ms": statistics.median(handed),
    }
