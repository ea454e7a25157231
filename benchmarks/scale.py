"""caseboard at a platform's scale: many workspaces, long ledgers, more server processes, many subscribers.

Every ledger here is built from real sealed commits: a template workspace is played through the coordinator
on an in-memory ledger, then its chain is re-sealed under other workspace ids (``replay.transfer.renamed``,
the path of ``caseboard import --as``) and bulk-appended to PostgreSQL with ``Ledger.append_many`` (the
import path, one transaction per batch). Figures, each measured in one run:

- ``commit_cost_10000_workspaces_vs_1``: median commit latency on a ledger of 10,000 workspaces, 1,000 of them
  (100 commits long each) written in turn, over the median on a ledger of one workspace; the two alternate
  commit by commit (goal at most 1.2).
- ``rss_per_cached_workspace_kb``: the process's resident set grown by loading those 1,000 workspaces of 100
  commits into the workspace cache, per workspace (goal at most 20); ``workspace_cache_bound`` is the cache's
  capacity (``Workspaces.capacity``) and ``workspace_cache_bound_mb`` what that many cost at that size.
- ``cold_load_10000_commits_ms``: p99 of loading a 10,000-commit workspace that is not in the cache (its
  latest snapshot and the commits after it, as the coordinator left them) (goal under 50).
  ``cold_load_longest_tail_ms``: the same workspace played on to the version before its next snapshot is due,
  the longest fold after a snapshot at that length (context).
- ``http_2_workers_vs_1``: commits/s of ``caseboard serve --workers 2`` over ``--workers 1``, the same
  writers, the two alternating round by round; ``cpu_count`` beside it.
- ``sse_1000_subscribers_p99_ms``: p99 from a commit's response to its ``commit`` event at each of 1,000
  subscribers of that workspace's ``/events`` stream, 500 on each of two server processes (the commits go
  through the first) (goal under 100). Two, because one process holding more than about 1,000 connections
  fails its commits: the append waits on its PostgreSQL socket with ``select()``, which cannot watch a
  descriptor above 1023 (``caseboard/ledger/libpq.py``); ``sse_1000_subscribers_commits_refused`` counts
  commits that were not answered 201.
- ``verify_vs_raw_sha256``: bytes/s of ``verify_file`` (``caseboard verify --anchor HEAD``, the auditor's check:
  the head hash kept elsewhere, docs/adr/0021) of a 100,000-commit export over SHA-256 of the same lines (goal at
  least 0.5); the lines up to the anchor are checked by their hashes and links (docs/adr/0197), in segments by
  ``verify_jobs`` processes, the cores of the machine (docs/adr/0182). ``verify_one_pass_vs_raw_sha256``: the same
  in one pass, one core; ``verify_unanchored_vs_raw_sha256``: ``caseboard verify`` without an anchor, which
  decodes every line to check that its bytes are the commit's compact JSON (context).
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchmarks.context import BenchContext, median, p99_of
from benchmarks.http import KeepAlive, _observation, _open, _run_writers
from benchmarks.replay import WORKSPACE as LONG_EXPORT
from benchmarks.replay import build as build_long_chain
from benchmarks.workload import accept, clock, log_to_devnull, observation, open_workspace
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.items import Role
from caseboard.keys import open_key_store
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections.workspaces import Workspaces
from caseboard.replay.transfer import export, renamed
from caseboard.replay.verify import default_jobs, verify_file


@dataclass(frozen=True)
class Sizes:
    workspaces: int  # in the ledger
    written: int  # of them, written in turn (each ``long_each`` commits long)
    long_each: int
    passes: int  # commits per written workspace measured
    cold_commits: int  # the cold-loaded workspace's length
    cold_loads: int
    http_commits: int  # per writer per round
    subscribers: int
    sse_commits: int
    export_commits: int


FULL = Sizes(10_000, 1000, 100, 1, 10_000, 30, 100, 1000, 20, 100_000)
QUICK = Sizes(300, 30, 20, 1, 1000, 10, 20, 50, 3, 2000)
BATCH = 2000  # commits per append_many transaction
HTTP_WRITERS = 8
SSE_SERVERS = 2  # subscribers split over two server processes; commits go through the first


def run(ctx: BenchContext) -> dict[str, float]:
    sizes = QUICK if ctx.quick else FULL
    log_to_devnull()
    figures: dict[str, float] = {}
    with ctx.fresh_schema() as many_url, ctx.fresh_schema() as one_url:
        figures.update(many_workspaces(many_url, one_url, sizes))
    with ctx.fresh_schema() as url:
        figures.update(cold_load(url, sizes))
    with ctx.fresh_schema() as url:
        figures.update(http_workers(url, sizes, 1 if ctx.quick else min(ctx.rounds, 2)))
    with ctx.fresh_schema() as url:
        figures.update(subscribers(url, sizes))
    figures.update(verify_speed(sizes))
    return figures


def template(length: int) -> list[Commit]:
    """A workspace ``length`` commits long (open, then observations), played through the coordinator."""
    memory = open_ledger("memory://")
    coordinator = Coordinator(memory)
    accept(coordinator, open_workspace("ws-template"))
    for number in range(1, length):
        accept(coordinator, observation("ws-template", number))
    return memory.read("ws-template")


def bulk_append(ledger: EventsourcingLedger, chains: Iterator[list[Commit]]) -> int:
    pending: list[Commit] = []
    count = 0
    for chain in chains:
        pending.extend(chain)
        if len(pending) >= BATCH:
            ledger.append_many(pending)
            count, pending = count + len(pending), []
    if pending:
        ledger.append_many(pending)
    return count + len(pending)


def rss_kb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def many_workspaces(many_url: str, one_url: str, sizes: Sizes) -> dict[str, float]:
    short, long = template(2), template(sizes.long_each)
    many, one = open_ledger(many_url), open_ledger(one_url)
    try:
        started = clock()
        written = [f"ws-{n:05d}" for n in range(sizes.written)]
        idle = (f"ws-idle-{n:05d}" for n in range(sizes.workspaces - sizes.written))
        rows = bulk_append(many, (list(renamed(iter(long), w)) for w in written))
        rows += bulk_append(many, (list(renamed(iter(short), w)) for w in idle))
        print(f"{sizes.workspaces} workspaces ({rows} commits) imported in {clock() - started:.1f}s", flush=True)
        workspaces = Workspaces(many)
        many.head(written[0])  # the pool's connection is open before the resident set is read
        gc.collect()
        before = rss_kb()
        for workspace_id in written:
            workspaces.current(workspace_id)
        gc.collect()
        per_workspace = (rss_kb() - before) / sizes.written
        bound = workspaces.capacity
        print(
            f"{sizes.written} cached workspaces of {sizes.long_each} commits: {per_workspace:.1f} KB each; "
            f"the cache holds at most {bound} ({bound * per_workspace / 1024:.0f} MB at that size)",
            flush=True,
        )
        wide, narrow = Coordinator(many, workspaces), Coordinator(one)
        accept(narrow, open_workspace("ws-alone"))
        alone_version = 1
        wide_costs: list[float] = []
        narrow_costs: list[float] = []
        for turn in range(sizes.passes):
            for workspace_id in written:
                wide_commit = observation(workspace_id, sizes.long_each + turn)
                narrow_commit = observation("ws-alone", alone_version)
                alone_version += 1
                started = clock()
                accept(wide, wide_commit)
                middle = clock()
                accept(narrow, narrow_commit)
                wide_costs.append(middle - started)
                narrow_costs.append(clock() - middle)
    finally:
        many.close()
        one.close()
    wide_ms, narrow_ms = median(wide_costs) * 1e3, median(narrow_costs) * 1e3
    print(f"commit median: {sizes.workspaces} workspaces {wide_ms:.3f} ms, one workspace {narrow_ms:.3f} ms")
    return {
        "commit_cost_10000_workspaces_vs_1": wide_ms / narrow_ms,
        "rss_per_cached_workspace_kb": per_workspace,
        "workspace_cache_bound": float(bound),
        "workspace_cache_bound_mb": bound * per_workspace / 1024,
    }


def cold_load(url: str, sizes: Sizes) -> dict[str, float]:
    """The workspace is played through the coordinator (which writes its snapshots) on an in-memory ledger,
    then its commits and stored snapshots are appended to PostgreSQL as they are. Then it is played on to the
    version before its next snapshot, the longest fold after a snapshot near that length, and loaded again."""
    memory = open_ledger("memory://")
    coordinator = Coordinator(memory)
    accept(coordinator, open_workspace("ws-cold"))
    for number in range(1, sizes.cold_commits):
        accept(coordinator, observation("ws-cold", number))
    ledger = open_ledger(url)
    try:
        at_length = _cold_loads(coordinator, memory, ledger, sizes)
        number = sizes.cold_commits
        while not coordinator.workspaces.snapshot_due("ws-cold", number + 2):
            accept(coordinator, observation("ws-cold", number))
            number += 1
        longest = _cold_loads(coordinator, memory, ledger, sizes)
    finally:
        ledger.close()
    return {"cold_load_10000_commits_ms": at_length, "cold_load_longest_tail_ms": longest}


def _cold_loads(
    coordinator: Coordinator, memory: EventsourcingLedger, ledger: EventsourcingLedger, sizes: Sizes
) -> float:
    """The p99 of loading ws-cold from ``ledger`` after copying there what ``memory`` holds beyond it."""
    reducer = coordinator.workspaces.reducer.name
    head = ledger.head("ws-cold")
    bulk_append(ledger, iter([memory.read("ws-cold", after=head)]))
    snapshots = list(memory.snapshots.select_events(f"{reducer}/ws-cold", gt=head, limit=10**6))
    if snapshots:
        ledger.snapshots.insert_events(snapshots)
    latest = ledger.latest_snapshot("ws-cold", reducer, upto=2**62)
    version = memory.head("ws-cold")
    costs = []
    for _ in range(sizes.cold_loads):
        workspaces = Workspaces(ledger)
        started = clock()
        state = workspaces.current("ws-cold")
        costs.append(clock() - started)
        assert state.version == version
    p99 = p99_of(costs) * 1e3
    after = version - (latest.version if latest else 0)
    print(
        f"cold load of {version} commits ({after} after the latest snapshot): median "
        f"{median(costs) * 1e3:.1f} ms, p99 {p99:.1f} ms",
        flush=True,
    )
    return p99


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def serve(url: str, workers: int, *extra: str) -> Iterator[int]:
    port = _free_port()
    env = {**os.environ, "CASEBOARD_DATABASE_URL": url, "CASEBOARD_LOG_LEVEL": "warning"}
    command = [sys.executable, "-m", "caseboard", "serve", "--port", str(port), "--workers", str(workers), *extra]
    errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=errors)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                    probe.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if probe.recv(64).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("caseboard serve did not start")
            time.sleep(0.05)
        yield port
    except BaseException:
        errors.seek(0)
        sys.stdout.write(errors.read().decode(errors="replace")[-3000:])
        raise
    finally:
        process.terminate()
        process.wait(timeout=30)
        errors.close()


def http_workers(url: str, sizes: Sizes, rounds: int) -> dict[str, float]:
    keys = open_key_store(url)
    ledger = open_ledger(url)
    coordinator = Coordinator(ledger)
    try:
        tokens = [keys.create(f"specialist-{n}", (Role.SPECIALIST,), "bench").token for n in range(HTTP_WRITERS)]
        rates: dict[int, list[float]] = {1: [], 2: []}
        for number in range(rounds):
            for workers in (1, 2):
                ids = [f"http-{workers}-{number}-{n}" for n in range(HTTP_WRITERS)]
                for workspace_id in ids:
                    assert coordinator.submit(parse_contribution(_open(workspace_id)))["ok"]
                with serve(url, workers) as port:
                    connections = [KeepAlive(port, token) for token in tokens]

                    def remote(n: int, i: int, to: list[KeepAlive] = connections, ids: list[str] = ids) -> None:
                        body = json.dumps({"items": [_observation(f"obs-{i}")]}).encode()
                        status, payload = to[n].post(f"/workspaces/{ids[n]}/contributions", body)
                        assert status == 201, payload

                    rate, _ = _run_writers(HTTP_WRITERS, sizes.http_commits, remote)
                    for connection in connections:
                        connection.close()
                rates[workers].append(rate)
                print(f"round {number + 1}: --workers {workers}: {rate:.0f} commits/s", flush=True)
    finally:
        keys.close()
        ledger.close()
    ratio = median([two / one for one, two in zip(rates[1], rates[2], strict=True)])
    cpus = os.cpu_count() or 1
    print(f"--workers 2 over --workers 1: {ratio:.2f} ({HTTP_WRITERS} writers, {cpus} CPUs)", flush=True)
    return {"http_2_workers_vs_1": ratio, "cpu_count": float(cpus)}


async def _subscribe(port: int, token: str, path: str, seen: dict[int, float], ready: asyncio.Event) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    await writer.drain()
    try:
        while line := await reader.readline():
            if line.startswith(b"retry:"):
                ready.set()
            elif line.startswith(b"id: "):
                seen.setdefault(int(line[4:]), clock())
            elif line.startswith(b"event: end"):
                return
    finally:
        writer.close()


async def _fan_out(ports: list[int], token: str, writer_token: str, sizes: Sizes) -> tuple[list[float], int]:
    path = "/workspaces/sse-0/events?after=1&timeout_s=120"
    seen: list[dict[int, float]] = [{} for _ in range(sizes.subscribers)]
    ready = [asyncio.Event() for _ in range(sizes.subscribers)]
    tasks = [
        asyncio.create_task(_subscribe(ports[n % len(ports)], token, path, seen[n], ready[n]))
        for n in range(sizes.subscribers)
    ]
    port = ports[0]
    await asyncio.wait_for(asyncio.gather(*(r.wait() for r in ready)), 60)
    await asyncio.sleep(1.0)  # every stream past its first poll
    loop = asyncio.get_running_loop()
    committed: dict[int, float] = {}
    connection = KeepAlive(port, writer_token)
    refused = 0
    for number in range(sizes.sse_commits):
        body = json.dumps({"items": [_observation(f"obs-{number}")]}).encode()
        status, payload = await loop.run_in_executor(None, connection.post, "/workspaces/sse-0/contributions", body)
        if status == 201:
            committed[json.loads(payload)["workspace_version"]] = clock()
        else:  # counted and shown: the load of the subscribers is on the commit path too
            refused += 1
            print(f"a commit under {sizes.subscribers} subscribers got {status}: {payload[:200]!r}", flush=True)
        await asyncio.sleep(0.5)
    connection.close()
    deadline = clock() + 30
    while clock() < deadline and any(len(s) < len(committed) for s in seen):
        await asyncio.sleep(0.1)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    missing = sum(len(set(committed) - set(s)) for s in seen)
    assert missing == 0 and committed, f"{missing} deliveries missing of {len(committed)} commits"
    return [s[version] - at for s in seen for version, at in committed.items()], refused


def subscribers(url: str, sizes: Sizes) -> dict[str, float]:
    keys = open_key_store(url)
    ledger = open_ledger(url)
    try:
        assert Coordinator(ledger).submit(parse_contribution(_open("sse-0")))["ok"]
        reader = keys.create("reader", (Role.OPERATOR,), "bench").token
        writer = keys.create("specialist-0", (Role.SPECIALIST,), "bench").token
        limit = str(sizes.subscribers // SSE_SERVERS + 64)
        flags = ("--max-connections", limit, "--max-connections-per-client", limit)  # all from one address
        with serve(url, 1, *flags) as first, serve(url, 1, *flags) as second:
            delays, refused = asyncio.run(_fan_out([first, second][:SSE_SERVERS], reader, writer, sizes))
    finally:
        keys.close()
        ledger.close()
    p99 = p99_of(delays) * 1e3
    print(
        f"{sizes.subscribers} subscribers, {sizes.sse_commits} commits: delivery median "
        f"{median(delays) * 1e3:.0f} ms, p99 {p99:.0f} ms",
        flush=True,
    )
    return {"sse_1000_subscribers_p99_ms": p99, "sse_1000_subscribers_commits_refused": float(refused)}


def verify_speed(sizes: Sizes) -> dict[str, float]:
    memory = open_ledger("memory://")
    started = clock()
    build_long_chain(memory, sizes.export_commits)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "long.jsonl"
        with path.open("w") as out:
            count = export(memory, LONG_EXPORT, out)
        print(f"exported {count} commits ({path.stat().st_size / 1e6:.0f} MB) in {clock() - started:.1f}s")
        head = json.loads(path.read_bytes().rsplit(b"\n", 2)[-2])["hash"]  # the anchor an auditor keeps
        verify_s: list[float] = []
        one_pass_s: list[float] = []
        unanchored_s: list[float] = []
        raw_s: list[float] = []
        rounds = 1 if sizes.export_commits < 10_000 else 5
        for round_ in range(rounds):
            checks = [(head, None, verify_s), (head, 1, one_pass_s)]
            if round_ < 2:  # the full check of every line takes ten times as long: two rounds of it
                checks.append((None, None, unanchored_s))
            for anchor, jobs, times in checks:
                started = clock()
                report = verify_file(path, anchor, jobs=jobs)
                times.append(clock() - started)
                assert report.problem is None and report.commits == count
                assert report.anchored_version == (None if anchor is None else count)
            started = clock()
            with path.open("rb") as lines:
                for line in lines:
                    hashlib.sha256(line).hexdigest()
            raw_s.append(clock() - started)
    print(
        f"verify --anchor {median(verify_s):.2f}s ({default_jobs()} processes; one pass {median(one_pass_s):.2f}s), "
        f"without an anchor {median(unanchored_s):.2f}s, SHA-256 of the same lines {median(raw_s):.2f}s",
        flush=True,
    )
    return {
        "verify_vs_raw_sha256": median(raw_s) / median(verify_s),
        "verify_one_pass_vs_raw_sha256": median(raw_s) / median(one_pass_s),
        "verify_unanchored_vs_raw_sha256": median(raw_s) / median(unanchored_s),
        "verify_jobs": float(default_jobs()),
    }
