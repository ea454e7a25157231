"""A few Prometheus counters and one latency histogram, kept in process and rendered as text format 0.0.4.

Labels never carry workspace ids, principals or tenants: the endpoint is unauthenticated, and a label
would tell one tenant about another's activity.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class Metrics:
    def __init__(self) -> None:
        self._guard = threading.Lock()
        self.commits = 0
        self.refusals: Counter[str] = Counter()
        self.requests: Counter[tuple[str, str, str]] = Counter()
        self.buckets: dict[str, list[int]] = {}
        self.sums: dict[str, float] = {}
        self.counts: Counter[str] = Counter()
        self.fast_path = 0
        self.on_loop = 0

    def outcome(self, outcome: dict[str, Any]) -> None:
        with self._guard:
            if outcome.get("ok"):
                if not outcome.get("idempotent_replay"):
                    self.commits += 1
            else:
                self.refusals[str(outcome.get("reason"))] += 1

    def request(
        self, method: str, route: str, status: int, seconds: float, *, fast: bool = False, on_loop: bool = False
    ) -> None:
        with self._guard:
            self.fast_path += fast
            self.on_loop += on_loop
            self.requests[(method, route, str(status))] += 1
            counts = self.buckets.setdefault(route, [0] * len(BUCKETS))
            for index, bound in enumerate(BUCKETS):
                if seconds <= bound:
                    counts[index] += 1
            self.sums[route] = self.sums.get(route, 0.0) + seconds
            self.counts[route] += 1

    def render(self) -> str:
        with self._guard:
            lines = [
                "# HELP caseboard_commits_total Contributions committed through this process's HTTP API.",
                "# TYPE caseboard_commits_total counter",
                f"caseboard_commits_total {self.commits}",
                "# HELP caseboard_refusals_total Contributions refused, by reason token.",
                "# TYPE caseboard_refusals_total counter",
                *(f'caseboard_refusals_total{{reason="{r}"}} {n}' for r, n in sorted(self.refusals.items())),
                "# HELP caseboard_http_requests_total HTTP requests, by method, route template and status.",
                "# TYPE caseboard_http_requests_total counter",
                *(
                    f'caseboard_http_requests_total{{method="{m}",route="{r}",status="{s}"}} {n}'
                    for (m, r, s), n in sorted(self.requests.items())
                ),
                "# HELP caseboard_http_submit_fast_path_total Submissions answered without FastAPI's routing "
                "(ADR 0034).",
                "# TYPE caseboard_http_submit_fast_path_total counter",
                f"caseboard_http_submit_fast_path_total {self.fast_path}",
                "# HELP caseboard_http_submit_on_loop_total Submissions committed on the server's event loop, "
                "without a thread (ADR 0035).",
                "# TYPE caseboard_http_submit_on_loop_total counter",
                f"caseboard_http_submit_on_loop_total {self.on_loop}",
                "# HELP caseboard_http_request_duration_seconds HTTP request latency, by route template.",
                "# TYPE caseboard_http_request_duration_seconds histogram",
            ]
            for route, counts in sorted(self.buckets.items()):
                name = f'caseboard_http_request_duration_seconds_bucket{{route="{route}"'
                for bound, count in zip(BUCKETS, counts, strict=True):
                    lines.append(f'{name},le="{bound}"}} {count}')
                lines.append(f'{name},le="+Inf"}} {self.counts[route]}')
                label = f'{{route="{route}"}}'
                lines.append(f"caseboard_http_request_duration_seconds_sum{label} {self.sums[route]:.6f}")
                lines.append(f"caseboard_http_request_duration_seconds_count{label} {self.counts[route]}")
        return "\n".join(lines) + "\n"


class MetricsMiddleware:
    """Pure ASGI middleware: times every HTTP request and counts it under its route template."""

    def __init__(self, app: Any, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def capture(message: Any) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.request(scope["method"], route, status, time.perf_counter() - started)
