"""caseboard's own time around a Prometheus range query, on PostgreSQL (docs/sources.md).

``source_query_overhead_ms_p50`` / ``_p99``: per answered request, the time of the whole answer (read the
request into a query, run it on its thread against the deadline, store the raw response in the artifact
store, build the ``work_result`` and its observations, submit them through the coordinator) minus the time of
the range query itself (the source's ``run``, timed inside the same answer); the goal is under 10 ms at p99.
``source_query_ms_p50`` / ``_p99``: the query alone, for scale. A private Prometheus (Debian's package,
temporary storage) scrapes itself every second; the query is ``up`` and ``prometheus_http_requests_total``
over the last five minutes at a 15 s step, so the response has a handful of series. Each request gets a
fresh workspace after 8 answers (an incident's size), so the figure is not that of a grown workspace.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.context import BenchContext, median, p99_of
from benchmarks.workload import log_to_devnull
from caseboard.app import App, build_app
from caseboard.coordinator import parse_contribution
from caseboard.domain.outcome import Accepted
from caseboard.heap import settle_startup
from caseboard.settings import Settings
from caseboard.sources.base import Answer, Deadline, Query
from caseboard.sources.config import SourceConfig
from caseboard.sources.registry import SOURCES
from caseboard.sources.specialist import SourceSpecialist

TARGET = json.dumps({"query": '{__name__=~"up|prometheus_http_requests_total"}', "since_s": 300, "step_s": 15})
PER_WORKSPACE = 8


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Timed:
    """The source, its ``run`` timed: the query alone, inside the answer."""

    def __init__(self, source: Any) -> None:
        self.source = source
        self.kinds = source.kinds
        self.operations = source.operations
        self.default_operation = source.default_operation
        self.plain = source.plain
        self.last_ms = 0.0

    def run(self, query: Query, deadline: Deadline) -> Answer:
        began = time.perf_counter()
        try:
            return self.source.run(query, deadline)  # type: ignore[no-any-return]
        finally:
            self.last_ms = (time.perf_counter() - began) * 1000

    def close(self) -> None:
        self.source.close()


def _submit(app: App, workspace: str, principal: str, role: str, items: list[dict[str, Any]]) -> Accepted:
    body = {"workspace_id": workspace, "author": {"principal": principal, "role": role}, "items": items}
    outcome = app.coordinator().submit(parse_contribution(json.dumps(body)))
    assert isinstance(outcome, Accepted), outcome.as_json()
    return outcome


def _open(app: App, workspace: str) -> None:
    limits = {
        "max_selected_items": 50,
        "max_investigation_cycles": 6,
        "max_open_questions": 10,
        "max_proposals": 10,
        "max_pending_work": 10,
    }
    scope = {"tenant_id": "bench", "environment": "production", "service": "payments-api"}
    _submit(
        app,
        workspace,
        "operator-1",
        "operator",
        [
            {
                "type": "open",
                "scope": scope,
                "goal": "Find out why",
                "runtime_limits": limits,
                "execution_mode": "read_only",
            }
        ],
    )


def run(ctx: BenchContext) -> dict[str, float]:
    if shutil.which("prometheus") is None:
        raise SystemExit("bench sources: Debian's prometheus is not installed (.ci/run installs it)")
    log_to_devnull()
    answers = 10 if ctx.quick else 300
    with tempfile.TemporaryDirectory(prefix="caseboard-bench-prom-") as tmp, ctx.fresh_schema() as url:
        port = _port()
        config_file = Path(tmp) / "prometheus.yml"
        config_file.write_text(
            "global: {scrape_interval: 1s}\n"
            f"scrape_configs: [{{job_name: self, static_configs: [{{targets: ['127.0.0.1:{port}']}}]}}]\n"
        )
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={config_file}",
                f"--storage.tsdb.path={tmp}/data",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=error",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        app = build_app(Settings(database_url=url))
        try:
            endpoint = f"http://127.0.0.1:{port}"
            end = time.monotonic() + 60
            while True:  # until it has scraped itself a few times
                try:
                    found = httpx.get(endpoint + "/api/v1/query", params={"query": "count_over_time(up[1m]) > 2"})
                    if found.json()["data"]["result"]:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > end:
                    raise SystemExit("bench sources: the private Prometheus did not come up")
                time.sleep(0.2)
            config = SourceConfig.model_validate({"type": "prometheus", "endpoint": endpoint, "clock_trusted": True})
            source = Timed(SOURCES.build("prometheus", config))
            who = SourceSpecialist(
                "prometheus",
                source,
                config,
                "bench",
                lambda: app.artifacts,  # type: ignore[arg-type]
                "metrics-query-specialist",
                source.kinds,
            )
            settle_startup()  # as ``caseboard specialist`` does once started (caseboard/heap.py)
            overhead: list[float] = []
            alone: list[float] = []
            for n in range(answers):
                workspace = f"bench-sources-{n // PER_WORKSPACE}"
                if n % PER_WORKSPACE == 0:
                    _open(app, workspace)
                rid = f"metrics-{n}"
                _submit(
                    app,
                    workspace,
                    "planner-1",
                    "planner",
                    [{"type": "work_request", "request_id": rid, "kind": "metrics_query", "target": TARGET}],
                )
                _submit(
                    app,
                    workspace,
                    who.principal,
                    "specialist",
                    [{"type": "work_claim", "request_id": rid, "lease_s": 300}],
                )
                began = time.perf_counter()
                items = who.answer(rid, 1, TARGET)
                _submit(app, workspace, who.principal, "specialist", items)
                total = (time.perf_counter() - began) * 1000
                assert items[0]["status"] == "completed", items[0]["summary"]
                overhead.append(total - source.last_ms)
                alone.append(source.last_ms)
            source.close()
        finally:
            app.close()
            process.terminate()
            process.wait(20)
    figures = {
        "source_query_overhead_ms_p50": median(overhead),
        "source_query_overhead_ms_p99": p99_of(overhead),
        "source_query_ms_p50": median(alone),
        "source_query_ms_p99": p99_of(alone),
    }
    print(
        f"sources: {answers} range queries answered; caseboard's own time around each "
        f"p50 {figures['source_query_overhead_ms_p50']:.2f} ms, p99 {figures['source_query_overhead_ms_p99']:.2f} ms "
        f"(goal < 10 ms at p99); the query alone p50 {figures['source_query_ms_p50']:.2f} ms, "
        f"p99 {figures['source_query_ms_p99']:.2f} ms",
        flush=True,
    )
    return figures
