"""Real servers on 127.0.0.1 for the quickstart (``caseboard pilot``) and the tests of the sources, each stopped
by whoever started it. Programs run in a process group of their own, so that a Ctrl-C at the terminal reaches
the process that started them, which stops each whole group (``Child``).

prometheus       Debian's ``prometheus`` with temporary storage, scraping targets every second
alertmanager     Debian's ``prometheus-alertmanager``, no cluster, posting every group to a webhook
make_chain       a root, an intermediate and a leaf certificate, made with ``cryptography``
tls_server       a TLS server presenting such a chain
Serving          an ``http.server`` answering on a thread until stopped
"""

from __future__ import annotations

import glob
import http.server
import os
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

PROMETHEUS = "prometheus"
ALERTMANAGER = "prometheus-alertmanager"


def free_port() -> int:
    """A loopback TCP port nobody listened on a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def in_use(port: int) -> bool:
    """True when a loopback TCP port is listened on (one a closed connection left waiting is free to take)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def wait_for(url: str, timeout: float = 120.0, alive: Child | None = None) -> None:
    """Returns once ``url`` answers below 500; ``alive``: a process that must not have exited meanwhile."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if alive is not None and alive.exited():
            raise RuntimeError(f"{alive.name} exited with status {alive.process.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=1.0, verify=False).status_code < 500:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


class Child:
    """A program started in a process group of its own; ``stop`` ends the whole group (SIGTERM, then SIGKILL
    after ``grace_s``) and reaps the program."""

    def __init__(
        self,
        name: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        log: Path | None = None,
        stdout: int | IO[bytes] | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
    ) -> None:
        self.name = name
        self.stop_signal = stop_signal
        self.log = log
        sink: int | IO[bytes] | None = stdout
        if log is not None:
            sink = log.open("ab")
        elif sink is None:
            sink = subprocess.DEVNULL
        try:
            self.process = subprocess.Popen(
                list(args),
                env=None if env is None else dict(env),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL,
                process_group=0,
            )
        finally:
            if log is not None and not isinstance(sink, int) and sink is not None:
                sink.close()
        self.pid = self.process.pid

    def exited(self) -> bool:
        return self.process.poll() is not None

    def stop(self, grace_s: float = 10.0) -> None:
        for sig in (self.stop_signal, signal.SIGKILL):
            with suppress(ProcessLookupError):
                os.killpg(self.pid, sig)
            try:
                self.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                continue
            with suppress(ProcessLookupError):  # the program is gone; anything it left in its group goes with it
                os.killpg(self.pid, signal.SIGKILL)
            return


@contextmanager
def child(
    name: str,
    args: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    log: Path | None = None,
    stop_signal: signal.Signals = signal.SIGTERM,
) -> Iterator[Child]:
    running = Child(name, args, env=env, log=log, stop_signal=stop_signal)
    try:
        yield running
    finally:
        running.stop()


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


def postgres_bin() -> Path | None:
    """The folder of PostgreSQL's ``initdb`` and ``postgres``: ``CASEBOARD_TEST_PG_BIN``, the newest
    ``/usr/lib/postgresql/*/bin``, else ``PATH``'s."""
    configured = os.environ.get("CASEBOARD_TEST_PG_BIN")
    if configured:
        return Path(configured)
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).parent if on_path else None


@contextmanager
def private_postgres(port: int, log: Path) -> Iterator[Child]:
    """A fresh PostgreSQL cluster in a temporary folder (``initdb``), its server in the foreground on ``port`` of
    127.0.0.1 (no Unix socket), until the block ends (a fast shutdown; the folder is removed). As root it runs
    as ``postgres``, since PostgreSQL refuses root. Its database: ``postgresql://postgres@127.0.0.1:<port>/postgres``."""
    programs = postgres_bin()
    if programs is None or not (programs / "initdb").exists():
        raise FileNotFoundError("PostgreSQL's initdb")
    with (
        tempfile.TemporaryDirectory(prefix="caseboard-pg-") as folder,
        _postgres(programs, Path(folder), port, log) as server,
    ):
        yield server


@contextmanager
def _postgres(programs: Path, folder: Path, port: int, log: Path) -> Iterator[Child]:
    import psycopg

    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data = folder / "data"
    init = [*as_user, str(programs / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
    with log.open("ab") as sink:
        done = subprocess.run([*init, "-E", "UTF8"], stdout=sink, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed (status {done.returncode}); see {log}")
    settings = {
        "listen_addresses": "127.0.0.1",
        "unix_socket_directories": "",
        "fsync": "off",
        "max_connections": "100",
        "shared_buffers": "32MB",
    }
    args = [*as_user, str(programs / "postgres"), "-D", str(data), "-p", str(port)]
    args += [word for name, value in settings.items() for word in ("-c", f"{name}={value}")]
    with child("postgres", args, log=log, stop_signal=signal.SIGINT) as running:  # SIGINT: a fast shutdown
        end = time.monotonic() + 60
        while True:
            try:
                psycopg.connect(
                    host="127.0.0.1", port=port, user="postgres", dbname="postgres", connect_timeout=2
                ).close()
                break
            except psycopg.OperationalError:
                if running.exited() or time.monotonic() > end:
                    raise RuntimeError(f"PostgreSQL did not start on port {port}; see {log}") from None
                time.sleep(0.1)
        yield running


def have_prometheus() -> bool:
    return shutil.which(PROMETHEUS) is not None


def have_alertmanager() -> bool:
    return shutil.which(ALERTMANAGER) is not None


@contextmanager
def _serving(program: str, config: Path, port: int, flags: list[str], log: Path | None) -> Iterator[str]:
    """``program`` (Prometheus or Alertmanager) on ``port`` of 127.0.0.1 with ``config``, until the block ends."""
    args = [program, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}", "--log.level=error", *flags]
    with child(program, args, log=log) as running:
        wait_for(f"http://127.0.0.1:{port}/-/ready", alive=running)
        yield f"http://127.0.0.1:{port}"


@contextmanager
def prometheus(
    targets: list[str],
    rules: str | None = None,
    alertmanager: str | None = None,
    *,
    port: int | None = None,
    log: Path | None = None,
) -> Iterator[str]:
    """The URL of a private Prometheus scraping ``targets`` every second, with temporary storage; with
    ``alertmanager`` (its URL) it sends the alerts of ``rules`` there, again every second."""
    with tempfile.TemporaryDirectory(prefix="caseboard-prom-") as tmp:
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
        with _serving(PROMETHEUS, config, port or free_port(), flags, log) as url:
            yield url


@contextmanager
def alertmanager(
    webhook: str | None = None,
    token: str | None = None,
    group_interval_s: int = 2,
    *,
    port: int | None = None,
    log: Path | None = None,
) -> Iterator[str]:
    """The URL of a private Alertmanager (Debian's ``prometheus-alertmanager``), no cluster, temporary storage;
    with ``webhook`` it posts every group of alerts there (with ``token`` as a bearer, resolutions included),
    grouped by alert name, again every ``group_interval_s``."""
    with tempfile.TemporaryDirectory(prefix="caseboard-am-") as tmp:
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
        with _serving(ALERTMANAGER, config, port or free_port(), flags, log) as url:
            yield url


def webhook_notifications(alertmanager_url: str) -> float:
    """How many webhook notifications an Alertmanager has sent (its ``alertmanager_notifications_total``)."""
    for line in httpx.get(f"{alertmanager_url}/metrics", timeout=5).text.splitlines():
        if line.startswith('alertmanager_notifications_total{integration="webhook"}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


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
def tls_server(
    chain: list[x509.Certificate], key: ec.EllipticCurvePrivateKey, port: int = 0
) -> Iterator[tuple[str, list[bytes]]]:
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
    listener = socket.create_server(("127.0.0.1", port))
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
