"""Real servers for the sources' tests, each on a free port of 127.0.0.1, stopped by whoever started it.

metrics_target   a process exposing ``prometheus_client`` metrics that change: authentication failures
                 counted on two instances, the second one's from a moment on (before and after a change)
prometheus       Debian's ``prometheus`` with temporary storage, scraping targets every second
RecordingProxy   a reverse proxy in front of a server, recording every request it was sent
FaultServer      an HTTP server that hangs, answers with warnings, answers 10 MB or drops mid-answer
tls_server       a TLS server presenting a chain the test made (root -> intermediate -> leaf)
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, generate_latest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(url: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if httpx.get(url, timeout=1.0).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


TARGET_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    from prometheus_client import Counter, start_http_server
    failures = Counter("auth_failures", "authentication failures", ["instance"])
    start_http_server(int(sys.argv[1]), addr="127.0.0.1")
    while True:
        failures.labels("payments-api-1").inc(0)
        failures.labels("payments-api-2").inc(1)  # failing from the start: before the change
        if os.path.exists(sys.argv[2]):
            failures.labels("payments-api-3").inc(1)  # failing after the change only
        time.sleep(0.2)
    """
)


@contextmanager
def metrics_target(change: Path) -> Iterator[str]:
    """``host:port`` of a process exposing changing metrics; the change is made when the file ``change`` exists."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", TARGET_SCRIPT, str(port), str(change)])
    try:
        wait_for(f"http://127.0.0.1:{port}/metrics")
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


@contextmanager
def _serving(program: str, config: Path, port: int, flags: list[str]) -> Iterator[str]:
    """``program`` (Prometheus or Alertmanager) on ``port`` of 127.0.0.1 with ``config``, until the block ends."""
    args = [program, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}", "--log.level=error", *flags]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(f"http://127.0.0.1:{port}/-/ready")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(20)


class Serving:
    """An ``http.server`` answering on a thread of this process until ``stop``: it handles one request at a time
    and sees the stop within 50 ms (the suite calls no server's shutdown method: tests/unit/test_good_neighbour.py
    looks for that call, which stops a whole Redis)."""

    def __init__(self, server: http.server.HTTPServer) -> None:
        self.server = server
        self.server.timeout = 0.05
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            self.server.handle_request()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self.server.server_close()


def have_prometheus() -> bool:
    return shutil.which("prometheus") is not None


@contextmanager
def prometheus(targets: list[str], rules: str | None = None, alertmanager: str | None = None) -> Iterator[str]:
    """The URL of a private Prometheus scraping ``targets`` every second, with temporary storage; with
    ``alertmanager`` (its URL) it sends the alerts of ``rules`` there, again every second."""
    with tempfile.TemporaryDirectory(prefix="caseboard-prom-") as tmp:
        port = free_port()
        config = Path(tmp) / "prometheus.yml"
        groups = ""
        if rules is not None:
            (Path(tmp) / "rules.yml").write_text(rules)
            groups = "rule_files: [rules.yml]\n"
        if alertmanager is not None:
            where = alertmanager.removeprefix("http://")
            groups += f"alerting: {{alertmanagers: [{{static_configs: [{{targets: ['{where}']}}]}}]}}\n"
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
            + groups
            + "scrape_configs:\n"
            + "".join(
                f"  - job_name: auth-{i}\n    honor_labels: true\n    static_configs: [{{targets: ['{t}']}}]\n"
                for i, t in enumerate(targets)
            )
        )
        flags = [f"--storage.tsdb.path={tmp}/data", "--rules.alert.resend-delay=1s"]
        with _serving("prometheus", config, port, flags) as url:
            yield url


@contextmanager
def counter_target() -> Iterator[tuple[str, Counter]]:
    """``host:port`` of metrics served from this process, and their counter ``auth_failures_total``, which the
    test increments while it wants authentication to fail."""
    registry = CollectorRegistry()
    failures = Counter("auth_failures", "authentication failures", registry=registry)

    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = generate_latest(registry)
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    serving = Serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics))
    try:
        yield f"127.0.0.1:{serving.server.server_address[1]}", failures
    finally:
        serving.stop()


class RecordingProxy:
    """A reverse proxy that records each request's method, path and query, and forwards it unchanged."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.received: list[tuple[str, str]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: object) -> None:
                pass

            def _any(self) -> None:
                proxy.received.append((self.command, self.path))
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else None
                reply = httpx.request(self.command, proxy.upstream + self.path, content=body, timeout=30)
                self.send_response(reply.status_code)
                self.send_header("content-type", reply.headers.get("content-type", "application/octet-stream"))
                self.send_header("content-length", str(len(reply.content)))
                self.end_headers()
                self.wfile.write(reply.content)

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = Serving(self.server)

    def close(self) -> None:
        self.serving.stop()


class FaultServer:
    """A Prometheus-shaped API that misbehaves by path: ``/hang/...`` never answers, ``/warn/...`` answers with
    a warning, ``/huge/...`` answers 10 MB, ``/drop/...`` sends half a response and closes the connection."""

    BODY = (
        b'{"status":"success","warnings":["partial response: store eu-1 unavailable"],"data":{"resultType":'
        b'"matrix","result":[{"metric":{"__name__":"auth_failures_total","instance":"a:1"},'
        b'"values":[[1700000000,"0"],[1700000015,"3"]]}]}}'
    )

    def __init__(self) -> None:
        self.received: list[tuple[str, str]] = []
        self.release = threading.Event()
        fault = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: object) -> None:
                pass

            def do_GET(self) -> None:
                fault.received.append((self.command, self.path))
                mode = self.path.split("/")[1]
                if mode == "deny":  # a server that echoes the credential it was sent, in its error and a warning
                    said = self.headers.get("authorization", "")
                    body = json.dumps({"status": "error", "errorType": "unauthorized", "error": f"refused {said}"})
                    if self.path.startswith("/deny/ok"):
                        body = json.dumps(
                            {
                                "status": "success",
                                "warnings": [f"slow for {said}"],
                                "data": {"resultType": "matrix", "result": []},
                            }
                        )
                    payload = body.encode()
                    self.send_response(200 if self.path.startswith("/deny/ok") else 401)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                if mode == "hang":
                    fault.release.wait(30)
                    return
                if mode == "huge":
                    chunk = b'{"status":"success","data":{"resultType":"matrix","result":[' + b" " * (1 << 20)
                    self.send_response(200)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(10 * len(chunk)))
                    self.end_headers()
                    for _ in range(10):
                        try:
                            self.wfile.write(chunk)
                        except OSError:
                            return
                    return
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(fault.BODY)))
                self.end_headers()
                if mode == "drop":
                    self.wfile.write(fault.BODY[: len(fault.BODY) // 2])
                    self.wfile.flush()
                    self.close_connection = True  # the server closes it now, half the body short
                    return
                self.wfile.write(fault.BODY)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.serving = Serving(self.server)

    def close(self) -> None:
        self.release.set()
        self.serving.stop()


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_chain(root_name: str, host: str = "localhost") -> tuple[list[x509.Certificate], ec.EllipticCurvePrivateKey]:
    """A root, an intermediate and a leaf for ``host``: the chain presented (leaf first) and the leaf's key."""
    now = datetime.now(UTC)

    def issue(
        subject: str, issuer: str, key: ec.EllipticCurvePrivateKey, signer: ec.EllipticCurvePrivateKey, ca: bool
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(subject))
            .issuer_name(_name(issuer))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(days=1))
            .not_valid_after(now + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if not ca:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        return builder.sign(signer, hashes.SHA256())

    root_key, mid_key, leaf_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(3))
    root = issue(root_name, root_name, root_key, root_key, True)
    mid = issue(f"{root_name} intermediate", root_name, mid_key, root_key, True)
    leaf = issue(host, f"{root_name} intermediate", leaf_key, mid_key, False)
    return [leaf, mid, root], leaf_key


@contextmanager
def tls_server(chain: list[x509.Certificate], key: ec.EllipticCurvePrivateKey) -> Iterator[tuple[str, list[bytes]]]:
    """``host:port`` of a TLS server presenting ``chain``, and the bytes each connection sent after its
    handshake (a read-only check sends none)."""
    with tempfile.TemporaryDirectory(prefix="caseboard-tls-") as tmp:
        cert = Path(tmp) / "chain.pem"
        cert.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain))
        keyfile = Path(tmp) / "key.pem"
        keyfile.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, keyfile)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    received: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                with context.wrap_socket(raw, server_side=True) as conn:
                    conn.settimeout(2)
                    try:
                        received.append(conn.recv(4096))
                    except (OSError, ssl.SSLError):
                        received.append(b"")
            except (OSError, ssl.SSLError):
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{listener.getsockname()[1]}", received
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def have_alertmanager() -> bool:
    return shutil.which("prometheus-alertmanager") is not None


@contextmanager
def alertmanager(webhook: str | None = None, token: str | None = None, group_interval_s: int = 2) -> Iterator[str]:
    """The URL of a private Alertmanager (Debian's ``prometheus-alertmanager``), no cluster, temporary storage;
    with ``webhook`` it posts every group of alerts there (with ``token`` as a bearer, resolutions included),
    grouped by alert name, again every ``group_interval_s``."""
    with tempfile.TemporaryDirectory(prefix="caseboard-am-") as tmp:
        port = free_port()
        config = Path(tmp) / "alertmanager.yml"
        if webhook is None:
            config.write_text("route: {receiver: none}\nreceivers: [{name: none}]\n")
        else:
            (Path(tmp) / "token").write_text(token or "")
            interval = f"{group_interval_s}s"
            config.write_text(
                f"route: {{receiver: hook, group_by: [alertname], group_wait: 1s, group_interval: {interval}, "
                f"repeat_interval: {interval}}}\n"
                f"receivers: [{{name: hook, webhook_configs: [{{url: '{webhook}', send_resolved: true, "
                f"http_config: {{authorization: {{type: Bearer, credentials_file: '{tmp}/token'}}}}}}]}}]\n"
            )
        flags = [f"--storage.path={tmp}/data", "--cluster.listen-address="]
        with _serving("prometheus-alertmanager", config, port, flags) as url:
            yield url


def webhook_notifications(alertmanager_url: str) -> float:
    """How many webhook notifications an Alertmanager has sent (its ``alertmanager_notifications_total``)."""
    for line in httpx.get(f"{alertmanager_url}/metrics", timeout=5).text.splitlines():
        if line.startswith('alertmanager_notifications_total{integration="webhook"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0
