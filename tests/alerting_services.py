"""Private Prometheus and Alertmanager servers for the pilot loop's tests (Debian's ``prometheus`` and
``prometheus-alertmanager``), each on a free loopback port with its storage in a temporary folder, and a small
target exposing ``prometheus_client`` metrics that the test changes. Each stops only its own process.

Missing programs skip the test locally and fail it with ``CI`` set (``.ci/run`` installs them).
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client import CollectorRegistry, Counter, start_http_server

from tests.private_services import _missing, free_port

PROMETHEUS = "prometheus"
ALERTMANAGER = "prometheus-alertmanager"


def _program(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        _missing(f"{name} (apt-get install prometheus prometheus-alertmanager)")
    assert found is not None
    return found


def _ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{url} exited at start: {log.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1).status_code == 200:
                return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not become ready in {timeout} s: {log.read_text()[-2000:]}")


@contextlib.contextmanager
def _running(args: list[str], ready: str, folder: Path) -> Iterator[None]:
    log = folder / "server.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, cwd=folder)
    try:
        _ready(ready, process, log)
        yield
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@dataclass
class Target:
    """A process-local metrics endpoint: ``failures`` is the counter ``auth_failures_total``."""

    address: str
    failures: Counter


@contextlib.contextmanager
def metrics_target() -> Iterator[Target]:
    registry = CollectorRegistry()
    failures = Counter("auth_failures", "authentication failures", registry=registry)
    port = free_port()
    server, thread = start_http_server(port, addr="127.0.0.1", registry=registry)
    try:
        yield Target(f"127.0.0.1:{port}", failures)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@dataclass
class Alertmanager:
    url: str

    def notifications(self) -> float:
        """How many webhook notifications it has sent (its own ``alertmanager_notifications_total``)."""
        text = httpx.get(f"{self.url}/metrics", timeout=5).text
        for line in text.splitlines():
            if line.startswith('alertmanager_notifications_total{integration="webhook"}'):
                return float(line.rsplit(" ", 1)[1])
        return 0.0


@contextlib.contextmanager
def private_alertmanager(webhook_url: str, token: str, group_interval_s: int = 2) -> Iterator[Alertmanager]:
    program = _program(ALERTMANAGER)
    with tempfile.TemporaryDirectory(prefix="cb-alertmanager-") as name:
        folder = Path(name)
        (folder / "token").write_text(token)
        (folder / "alertmanager.yml").write_text(
            f"""
route:
  receiver: caseboard
  group_by: [alertname]
  group_wait: 1s
  group_interval: {group_interval_s}s
  repeat_interval: {group_interval_s}s
receivers:
  - name: caseboard
    webhook_configs:
      - url: {webhook_url}
        send_resolved: true
        http_config:
          authorization:
            type: Bearer
            credentials_file: {folder / "token"}
"""
        )
        port = free_port()
        args = [
            program,
            f"--config.file={folder / 'alertmanager.yml'}",
            f"--storage.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
        ]
        url = f"http://127.0.0.1:{port}"
        with _running(args, f"{url}/-/ready", folder):
            yield Alertmanager(url)


@contextlib.contextmanager
def private_prometheus(target: str, alertmanager: str, rules: str) -> Iterator[str]:
    """A Prometheus scraping ``target`` every second, evaluating ``rules`` (YAML) every second and sending its
    alerts to ``alertmanager`` (re-sent every second); yields its URL."""
    program = _program(PROMETHEUS)
    with tempfile.TemporaryDirectory(prefix="cb-prometheus-") as name:
        folder = Path(name)
        (folder / "rules.yml").write_text(rules)
        (folder / "prometheus.yml").write_text(
            f"""
global: {{scrape_interval: 1s, evaluation_interval: 1s}}
rule_files: [{folder / "rules.yml"}]
alerting:
  alertmanagers: [{{static_configs: [{{targets: ["{alertmanager.removeprefix("http://")}"]}}]}}]
scrape_configs:
  - job_name: payments-api
    static_configs: [{{targets: ["{target}"]}}]
"""
        )
        port = free_port()
        args = [
            program,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--rules.alert.resend-delay=1s",
        ]
        url = f"http://127.0.0.1:{port}"
        with _running(args, f"{url}/-/ready", folder):
            yield url
