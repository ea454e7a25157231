"""Prometheus metrics through ``prometheus_client``: this process's HTTP traffic, and the coordination health of
the ledger in aggregate (docs/health.md, ADR 0106), rendered as text format 0.0.4.

Labels never carry workspace ids, principals or tenants: the endpoint is unauthenticated, and a label would
tell one tenant about another's activity. Labels are closed vocabularies only: a reason token, a route
template, a kind of material change, an outcome, a work state.

Each ``Metrics`` has a registry of its own (nothing global, nothing at import). Two kinds of series:

- counted in process, as requests pass: ``caseboard_commits_total``, ``caseboard_refusals_total{reason}``,
  ``caseboard_http_requests_total``, ``caseboard_http_request_duration_seconds``, the fast-path counters;
- derived from the ledger at scrape time (``LedgerHealth``): the health figures summed over every workspace,
  each folded once and then only its new commits. They are the same in every server process and are
  reproducible by replay.

A figure that is never measured has no series at all, never a 0: duplicate deliveries are absorbed by the
workers (their own exposition, ``caseboard/workers/queue_metrics.py``), so this endpoint has none.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from caseboard.app import App
from caseboard.domain.errors import CaseboardError, LedgerUnavailable
from caseboard.projections.health import CHANGES, OUTCOMES, HealthFold, tenant_health

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
OUTCOME_BUCKETS = (60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0)
"""Seconds from a workspace's opening to its first outcome."""
WHOLE = re.compile(r" (-?[0-9]+)\.0\n")
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
WORK_STATES = ("awaiting_result", "claimed", "lease_lapsed")


class Metrics:
    """This process's counters and, once ``watch`` names the ledger, the ledger's health in aggregate."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.commits = Counter(
            "caseboard_commits", "Contributions committed through this process's HTTP API.", registry=self.registry
        )
        self.refusals = Counter(
            "caseboard_refusals", "Contributions refused, by reason token.", ["reason"], registry=self.registry
        )
        self.requests = Counter(
            "caseboard_http_requests",
            "HTTP requests, by method, route template and status.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.fast_path = Counter(
            "caseboard_http_submit_fast_path",
            "Submissions answered without FastAPI's routing (ADR 0034).",
            registry=self.registry,
        )
        self.on_loop = Counter(
            "caseboard_http_submit_on_loop",
            "Submissions committed on the server's event loop, without a thread (ADR 0035).",
            registry=self.registry,
        )
        self.latency = Histogram(
            "caseboard_http_request_duration_seconds",
            "HTTP request latency, by route template.",
            ["route"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.health: LedgerHealth | None = None

    def watch(self, app: App) -> LedgerHealth:
        """Also export the coordination health of every workspace of ``app``'s ledger, computed at each scrape."""
        if self.health is None:
            self.health = LedgerHealth(app)
            self.registry.register(self.health)
        return self.health

    def outcome(self, outcome: dict[str, Any]) -> None:
        if outcome.get("ok"):
            if not outcome.get("idempotent_replay"):
                self.commits.inc()
        else:
            self.refusals.labels(str(outcome.get("reason"))).inc()

    def request(
        self, method: str, route: str, status: int, seconds: float, *, fast: bool = False, on_loop: bool = False
    ) -> None:
        if fast:
            self.fast_path.inc()
        if on_loop:
            self.on_loop.inc()
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(route).observe(seconds)

    def render(self) -> str:
        """Text format 0.0.4; a whole number is written without ``.0``, as the exposition always wrote its
        counts (scrapers read either; scripts that read a count as an integer keep working)."""
        return WHOLE.sub(r" \1\n", generate_latest(WithoutCreated(self.registry)).decode())


class WithoutCreated(Collector):
    """A registry's families without the ``_created`` samples prometheus_client adds to every counter: the
    text format has no use for them, and they would double the page."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterator[Any]:
        for family in self.registry.collect():
            family.samples = [sample for sample in family.samples if not sample.name.endswith("_created")]
            yield family


class LedgerHealth(Collector):
    """The health figures of every workspace of a ledger, summed, as Prometheus families.

    Workspaces are learnt from the ledger's notification log (``Catalog``); each is folded once by a
    ``HealthFold`` and afterwards only its commits since the last scrape. A scrape during a database outage
    answers ``caseboard_health_up 0`` and the figures of the last scrape that reached the ledger."""

    def __init__(self, app: App) -> None:
        self.ledger = app.ledger
        self.reducer = app.workspaces.reducer  # the current reducer (CASEBOARD_REDUCER)
        self.folds: dict[str, HealthFold] = {}
        self.catalog: Any = None
        self._lock = threading.Lock()
        self.last_seconds: float | None = None

    def describe(self) -> list[Any]:
        return []  # computed at scrape: nothing to describe at registration (no ledger read then)

    def refresh(self) -> bool:
        """Fold what was committed since the last scrape; False when the ledger could not be read."""
        from caseboard.mcp_server.catalog import Catalog  # here: the MCP package imports this one

        started = time.perf_counter()
        try:
            if self.catalog is None:
                self.catalog = Catalog(self.ledger.outbox())
            self.catalog.refresh()
            for key in self.catalog.keys.values():
                fold = self.folds.setdefault(key, HealthFold(self.reducer))
                for commit in self.ledger.iter_commits(key, after=fold.version):
                    fold.feed(commit)
        except CaseboardError:
            return False
        self.last_seconds = time.perf_counter() - started
        return True

    def of_tenant(self, tenant_id: str) -> dict[str, Any]:
        """The health of a tenant's workspaces at their heads, summed (``tenant_health``), from the same folds
        as the scrape; ``LedgerUnavailable`` when the ledger could not be read."""
        with self._lock:
            if not self.refresh():
                raise LedgerUnavailable("the ledger could not be read for the tenant's health; retry")
            keys = self.catalog.keys_of(tenant_id) if self.catalog is not None else []
            reports = [self.folds[key].report() for key in keys if key in self.folds and self.folds[key].version]
        return tenant_health(reports)

    def collect(self) -> Iterator[Any]:
        with self._lock:
            up = self.refresh()
            reports = [fold.report() for fold in self.folds.values() if fold.version]
        yield GaugeMetricFamily(
            "caseboard_health_up", "1 when the last scrape read the ledger's health, 0 when it could not.", value=up
        )
        if self.last_seconds is not None:
            yield GaugeMetricFamily(
                "caseboard_health_scrape_seconds",
                "Time the last successful scrape took to fold the ledger's new commits.",
                value=self.last_seconds,
            )
        yield from families(reports)


def families(reports: list[dict[str, Any]]) -> Iterator[Any]:
    """The health figures of ``reports`` summed, with closed-vocabulary labels only."""
    statuses = GaugeMetricFamily("caseboard_workspaces", "Workspaces, by status.", labels=["status"])
    counts: dict[str, int] = {}
    for report in reports:
        counts[report["status"]] = counts.get(report["status"], 0) + 1
    for status, count in sorted(counts.items()):
        statuses.add_metric([status], count)
    yield statuses

    invalidations = CounterMetricFamily(
        "caseboard_proposal_invalidations",
        "Proposals that became requires_revalidation, by the kind of material change that did it.",
        labels=["change"],
    )
    for change in CHANGES:
        invalidations.add_metric([change], sum(r["invalidations"]["by_change"][change] for r in reports))
    yield invalidations

    yield GaugeMetricFamily(
        "caseboard_stale_evidence_in_use",
        "Observations past expires_at (as of each workspace's head) that a live proposal rests on.",
        value=sum(r["stale_evidence_in_use"]["total"] for r in reports),
    )
    work = GaugeMetricFamily(
        "caseboard_outstanding_work",
        "Work requests awaiting a result, claimed, or under a lapsed lease.",
        labels=["state"],
    )
    for state in WORK_STATES:
        work.add_metric([state], sum(r["outstanding_work"][state] for r in reports))
    yield work
    ages = [r["outstanding_work"]["oldest_age_s"] for r in reports if r["outstanding_work"]["oldest_age_s"] is not None]
    yield GaugeMetricFamily(
        "caseboard_outstanding_work_oldest_age_seconds",
        "Age of the oldest outstanding work request, at its workspace's head (0 when none is outstanding).",
        value=max(ages) if ages else 0,
    )
    yield GaugeMetricFamily(
        "caseboard_workspaces_at_cycle_budget",
        "Workspaces that have used every investigation cycle of their budget.",
        value=sum(r["cycles"]["budget"] is not None and r["cycles"]["used"] >= r["cycles"]["budget"] for r in reports),
    )
    yield CounterMetricFamily(
        "caseboard_investigation_cycles",
        "Investigation cycles scheduled, across reopens.",
        value=sum(r["cycles"]["scheduled_since_open"] for r in reports),
    )
    outcomes = CounterMetricFamily(
        "caseboard_outcomes", "Outcomes reached by workspaces, by outcome.", labels=["outcome"]
    )
    for outcome in OUTCOMES:
        outcomes.add_metric([outcome], sum(o["outcome"] == outcome for r in reports for o in r["outcomes"]["reached"]))
    yield outcomes
    yield _first_outcome(reports)
    corrections = CounterMetricFamily(
        "caseboard_operator_corrections",
        "Reviews that revised or withdrew a proposal; accepted plans that later required revalidation.",
        labels=["kind"],
    )
    for kind, count in (
        ("review_revised", sum(r["operator_corrections"]["reviews_revised"] for r in reports)),
        ("review_withdrawn", sum(r["operator_corrections"]["reviews_withdrawn"] for r in reports)),
        (
            "accepted_then_revalidation",
            sum(len(r["operator_corrections"]["accepted_then_revalidation"]) for r in reports),
        ),
    ):
        corrections.add_metric([kind], count)
    yield corrections


def _first_outcome(reports: list[dict[str, Any]]) -> HistogramMetricFamily:
    seconds = [r["outcomes"]["seconds_to_first"] for r in reports if r["outcomes"]["seconds_to_first"] is not None]
    buckets = [(str(bound), float(sum(s <= bound for s in seconds))) for bound in OUTCOME_BUCKETS]
    buckets.append(("+Inf", float(len(seconds))))
    return HistogramMetricFamily(
        "caseboard_time_to_first_outcome_seconds",
        "Seconds from a workspace's opening to the first outcome it reached.",
        buckets=buckets,
        sum_value=sum(seconds),
    )


class MetricsMiddleware:
    """Pure ASGI middleware: times every HTTP request and counts it under its route template."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        await timed(self.metrics, self.app, scope, receive, send)


def route_of(scope: Any) -> str:
    """The template of the route that answered: the router's (FastAPI's routes set it), else the plain
    Starlette route whose endpoint answered (``/openapi.json``, ``/docs``), else ``unmatched``."""
    route = scope.get("route")
    if route is not None:
        return str(route.path)
    endpoint = scope.get("endpoint")
    if endpoint is not None:
        for candidate in getattr(scope.get("app"), "routes", ()):
            if getattr(candidate, "endpoint", None) is endpoint:
                return str(candidate.path)
    return "unmatched"


async def timed(metrics: Metrics, app: Any, scope: Any, receive: Any, send: Any, route: str | None = None) -> None:
    """Run ``app`` on one HTTP request, timed and counted with its status under ``route`` (None: the route the
    router matched, read from the scope afterwards). The metrics middleware and ``/mcp`` (answered before it,
    ``caseboard.mcp_server.http``) count with it."""
    started = time.perf_counter()
    status = 500

    async def capture(message: Any) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    try:
        await app(scope, receive, capture)
    finally:
        counted = route if route is not None else route_of(scope)
        metrics.request(scope["method"], counted, status, time.perf_counter() - started)
