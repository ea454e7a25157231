"""The queues' Prometheus metrics where the workers run: dramatiq's own ``Prometheus`` middleware, and the
duplicate deliveries the consumers absorbed (docs/health.md, ADR 0107).

A worker process has no HTTP server, so its metrics are served on a port of their own
(``CASEBOARD_WORKER_METRICS_PORT``; off when unset). dramatiq's middleware is made for dramatiq's command
line, which ``caseboard worker`` is not; with dramatiq 2.2 three things are done here instead:

- the middleware sets its metrics up in ``after_process_boot``, an event only dramatiq's command line
  emits: it is called here when the middleware is added (without it, the first message fails on a missing
  attribute);
- it registers its metrics on a registry it does not keep, and its exposition server (a process dramatiq's
  command line forks) reads multiprocess files: here its metric objects are registered on a registry of our
  own and served from a thread by ``prometheus_client.start_http_server``;
- it switches the whole process to prometheus_client's multiprocess mode through the environment
  (``PROMETHEUS_MULTIPROC_DIR``); the environment is put back as it was, so that nothing else in the process
  or its children changes mode (prometheus_client is imported before, so its values stay in memory).

Labels: dramatiq's ``queue_name`` and ``actor_name`` (queues are named by audience and work kind, never by
workspace or tenant). ``caseboard_duplicate_deliveries_absorbed_total`` is the dispatch store's count, the
same for every worker of a deployment (read it with ``max``, not ``sum``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import dramatiq
import prometheus_client
from dramatiq.middleware import Middleware
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from caseboard.dispatcher.store import DispatchStore
from caseboard.domain.errors import CaseboardError, ConfigurationError

PORT_ENV = "CASEBOARD_WORKER_METRICS_PORT"
HOST_ENV = "CASEBOARD_WORKER_METRICS_HOST"
MIDDLEWARE_METRICS = (
    "total_messages",
    "total_errored_messages",
    "total_retried_messages",
    "total_rejected_messages",
    "inprogress_messages",
    "inprogress_delayed_messages",
    "message_durations",
)
MODE_ENV = ("PROMETHEUS_MULTIPROC_DIR", "prometheus_multiproc_dir")


@dataclass(frozen=True)
class Exposition:
    """Where the worker's metrics are served: ``port`` 0 picks a free one (tests)."""

    port: int
    host: str = "127.0.0.1"
    """The loopback interface unless ``CASEBOARD_WORKER_METRICS_HOST`` says otherwise (ADR 0141)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Exposition | None:
        env = os.environ if env is None else env
        text = env.get(PORT_ENV)
        if not text:
            return None
        try:
            port = int(text)
        except ValueError:
            port = -1
        if not 0 <= port <= 65535:
            raise ConfigurationError(f"{PORT_ENV} must be a port number (0-65535), not {text!r}")
        return cls(port, env.get(HOST_ENV) or "127.0.0.1")


class Duplicates(Collector):
    """The duplicate deliveries the consumers absorbed, from the dispatch store, at each scrape."""

    def __init__(self, store: DispatchStore, name: str = "dispatcher") -> None:
        self.store = store
        self.name = name

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        try:
            status = self.store.status(self.name)
        except CaseboardError:
            yield GaugeMetricFamily("caseboard_dispatch_store_up", "1 when the dispatch store answered.", value=0)
            return
        yield GaugeMetricFamily("caseboard_dispatch_store_up", "1 when the dispatch store answered.", value=1)
        yield CounterMetricFamily(
            "caseboard_duplicate_deliveries_absorbed",
            "Notifications delivered again and dropped by a consumer that had processed them (deployment-wide).",
            value=status["duplicates_absorbed"],
        )
        yield GaugeMetricFamily(
            "caseboard_deliveries_unprocessed",
            "Notifications handed to the broker that no consumer has processed yet (deployment-wide).",
            value=status["unprocessed"],
        )


class QueueMetrics:
    """dramatiq's Prometheus middleware on ``broker`` and the store's duplicates, served on ``exposition``."""

    def __init__(self, broker: dramatiq.Broker, store: DispatchStore, exposition: Exposition) -> None:
        self.registry = prometheus_client.CollectorRegistry(auto_describe=True)
        try:
            self.server, self.thread = prometheus_client.start_http_server(
                exposition.port, exposition.host, registry=self.registry
            )
        except OSError as error:  # a port in use, a host that is not this machine's: the operator's setting
            where = PORT_ENV if error.errno == errno.EADDRINUSE else f"{HOST_ENV} or {PORT_ENV}"
            raise ConfigurationError(
                f"cannot serve the worker's metrics on {exposition.host}:{exposition.port}: "
                f"{error.strerror or error}; pick another with {where}"
            ) from None
        self.middleware = instrument(broker)
        for name in MIDDLEWARE_METRICS:
            self.registry.register(getattr(self.middleware, name))
        self.registry.register(Duplicates(store))

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


def instrument(broker: dramatiq.Broker) -> Any:
    """dramatiq's ``Prometheus`` middleware, added to ``broker`` and booted (see the module docstring)."""
    from dramatiq.middleware.prometheus import Prometheus  # here: importing it creates a directory

    saved = {name: os.environ.get(name) for name in MODE_ENV}
    middleware = Prometheus()
    broker.add_middleware(middleware)
    try:
        middleware.after_process_boot(broker)  # type: ignore[no-untyped-call]
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return middleware


class StopWithWorker(Middleware):
    """Stops serving ``metrics`` when the dramatiq worker shuts down."""

    def __init__(self, metrics: QueueMetrics) -> None:
        self.metrics = metrics

    def after_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self.metrics.close()
