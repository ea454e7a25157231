"""The quickstart, ``caseboard pilot``, run as a person runs it: real Prometheus, Alertmanager, PostgreSQL and
Redis of its own, the demo service, caseboard's processes and the model twin. The alert opens one workspace,
the checks run against the real sources, the earlier failures challenge the certificate hypothesis, the
workspace escalates to a person, the handoff reaches the receiver signed and once; Ctrl-C then leaves nothing
running."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql

from caseboard.database_url import DatabaseUrl
from caseboard.handoff.signing import verify
from caseboard.ledger import open_ledger
from caseboard.pilot.servers import have_alertmanager, have_prometheus, postgres_bin
from tests.conftest import service_missing

LINKS_PRINTED = re.compile(r"^  verify    caseboard verify (\S+)$")


def descendants(root: int) -> set[int]:
    """Every process below ``root`` now, by the parent each names in /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid in parents.get(todo.pop(), []):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def mentioning(text: str) -> list[int]:
    """The live processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if text in command and alive(int(entry.name)):
                found.append(int(entry.name))
    return found


def read_lines(stream: Any, into: queue.Queue[str | None]) -> None:
    for line in stream:
        into.put(line.rstrip("\n"))
    into.put(None)  # the end of its output


def wait_for_links(lines: queue.Queue[str | None], seen: list[str], timeout: float) -> str:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            line = lines.get(timeout=1)
        except queue.Empty:
            continue
        if line is None:
            break
        seen.append(line)
        found = LINKS_PRINTED.match(line)
        if found:
            return found.group(1)
    raise AssertionError("the links were not printed in time:\n" + "\n".join(seen[-40:]))


def test_the_quickstart_escalates_an_alert_to_a_person_and_ctrl_c_stops_everything(tmp_path: Path) -> None:
    if not (have_prometheus() and have_alertmanager()):
        service_missing("prometheus", FileNotFoundError("Debian's prometheus and prometheus-alertmanager"))
    if shutil.which("redis-server") is None or postgres_bin() is None:
        service_missing("redis-server and initdb", FileNotFoundError("the pilot's private Redis and PostgreSQL"))
    run = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env["CASEBOARD_LOG_LEVEL"] = "warning"
    started = time.monotonic()
    pilot = subprocess.Popen(
        [sys.executable, "-m", "caseboard", "pilot", "--dir", str(run), "--timeout", "600"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,  # its own group, as a terminal's foreground job: Ctrl-C reaches the group
    )
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=read_lines, args=(pilot.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        export = Path(wait_for_links(lines, seen, timeout=660))
        took = time.monotonic() - started
        below = descendants(pilot.pid)
        output = "\n".join(seen)
        assert "recorded replies" in output and "not by a model" in output  # the twin says so at start
        [database] = re.findall(r"a private PostgreSQL on port \d+ \((\S+);", output)
        checked = check_the_record(database, run, export, output)
    finally:
        if pilot.poll() is None:
            os.killpg(pilot.pid, signal.SIGINT)  # what Ctrl-C at the terminal does
        try:
            status = pilot.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(pilot.pid, signal.SIGKILL)
            raise
        reader.join(10)
        if pilot.stdout is not None:
            pilot.stdout.close()
    while not lines.empty():
        line = lines.get()
        if line is not None:
            seen.append(line)
    assert status == 130, "\n".join(seen[-20:])
    assert seen[-1].startswith("pilot ") and seen[-1].endswith("s: stopped: nothing it started is running")
    assert len(below) >= 12, below  # PostgreSQL, Redis, Prometheus, Alertmanager, the service, six of caseboard's
    assert [pid for pid in below if alive(pid)] == []
    assert mentioning(str(run)) == []
    assert checked["status"] == "human_review_required" and took < 600
    print(f"the pilot printed its links after {took:.0f} s")


def check_the_record(database: str, run: Path, export: Path, output: str) -> dict[str, Any]:
    url = DatabaseUrl.parse(database)
    with psycopg.connect(**url.conninfo) as conn:
        rows = conn.execute(
            psycopg.sql.SQL("SELECT originator_id FROM {}.caseboard_commits WHERE originator_version = 1").format(
                psycopg.sql.Identifier(url.schema)
            )
        )
        opened = [row[0] for row in rows]
    assert len(opened) == 1, opened  # exactly one workspace, however often Alertmanager sent the group
    [key] = opened
    ledger = open_ledger(database)
    try:
        commits = ledger.read(key)
    finally:
        ledger.close()
    first = commits[0]
    assert (first.author.principal, first.author.role.value) == ("alertmanager", "intake")
    assert first.items[0].type == "open" and commits[1].items[0].source.system == "alertmanager"
    results = {i.request_id: (c.author.principal, i) for c in commits for i in c.items if i.type == "work_result"}
    assert set(results) == {"changes-001", "chains-002", "failures-003"}
    instances = {"payments-api-1", "payments-api-2", "payments-api-3"}
    for request in ("changes-001", "failures-003"):
        who, result = results[request]
        assert who == "metrics-query-specialist" and result.status == "completed"
        assert result.query.operation == "range_query" and set(result.query.answered) == instances
    who, chains = results["chains-002"]
    assert who == "certificate-check-specialist" and chains.status == "completed"
    assert len(chains.query.answered) == 2 and chains.observation.statement.startswith(
        "2 targets present 2 different chains"
    )
    verification = next(i for c in commits for i in c.items if i.type == "verification")
    assert (verification.check, verification.result) == ("changes-001", "confirmed")
    link = next(i for c in commits for i in c.items if i.type == "link")
    assert (link.relation, link.hypothesis) == ("challenges", "hyp-certificate-change")
    observations = {i.id: i for c in commits for i in c.items if i.type == "observation"}
    observations.update(
        {i.observation.id: i.observation for c in commits for i in c.items if i.type == "work_result" and i.observation}
    )
    change = next(
        o
        for o in observations.values()
        if o.statement.startswith('certificate_changes_total{instance="payments-api-3"')
    )
    early = observations[link.observation]
    assert early.statement.startswith('auth_failures_total{instance="payments-api-2"')
    assert early.event_time < change.event_time  # the failures began before the certificate changed
    last = commits[-1].items[-1]
    assert last.type == "status" and last.to.value == "human_review_required"
    assert "hyp-certificate-change" in (last.handoff or "")
    assert "hypotheses: hyp-certificate-change confirmed_before_challenge" in output

    secret = (run / "webhook.secret").read_bytes()
    kept = [json.loads(p.read_text()) for p in sorted((run / "handoffs").glob("*.json"))]
    assert kept, "no request reached the receiver"
    deliveries = {k["headers"]["Caseboard-Delivery"] for k in kept}
    assert deliveries == {f"{key}@{commits[-1].version}/handoff"}  # one handoff, delivered once in effect
    for request in kept:
        body = request["body"].encode()
        assert verify(secret, body, request["headers"]["Caseboard-Signature"])
        assert not verify(b"another secret", body, request["headers"]["Caseboard-Signature"])
    assert output.count("the handoff arrived at the receiver") == 1
    document = json.loads(kept[0]["body"])
    assert document["trigger"] == "human_review_required" and document["workspace_id"] == key.split("/", 1)[1]

    verified = subprocess.run(
        [sys.executable, "-m", "caseboard", "verify", str(export), "--format", "json"], capture_output=True, text=True
    )
    assert verified.returncode == 0 and json.loads(verified.stdout)["intact"] is True, verified.stdout
    assert (run / "report.html").stat().st_size > 0
    return {"status": last.to.value}


def test_without_prometheus_the_quickstart_says_what_to_install_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    env["PATH"] = str(tmp_path)  # nothing on it: no prometheus, no prometheus-alertmanager
    done = subprocess.run(
        [sys.executable, "-m", "caseboard", "pilot", "--dir", str(tmp_path / "run")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "apt-get install prometheus prometheus-alertmanager" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_run_folder_that_holds_what_a_run_did_not_make_is_refused_and_kept(tmp_path: Path) -> None:
    # Before: a run emptied its --dir first, whatever it held: --dir . removed the user's own files.
    (tmp_path / "thesis.txt").write_text("precious\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
    command = [sys.executable, "-m", "caseboard", "pilot", "--dir", "."]
    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr == (
        f"caseboard: --dir {tmp_path} holds files caseboard did not make, and it empties that folder first: give a "
        "new or empty folder (one an older caseboard made has no .caseboard-made: remove it by hand)\n"
    )
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.txt"]


def test_a_base_port_whose_range_is_in_use_is_refused_in_one_line_before_anything_starts(tmp_path: Path) -> None:
    if not (have_prometheus() and have_alertmanager()):
        service_missing("prometheus", FileNotFoundError("Debian's prometheus and prometheus-alertmanager"))
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        base = port - 3  # the taken port inside the run's range, not at its start
        env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOARD_")}
        command = [sys.executable, "-m", "caseboard", "pilot", "--base-port", str(base), "--dir", str(tmp_path / "run")]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"caseboard: --base-port {base}: the pilot listens on ports {base} to {base + 9}")
    assert f" {port} " in done.stderr or f" {port}, " in done.stderr
    assert not (tmp_path / "run").exists()
