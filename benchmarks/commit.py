"""The commit path on PostgreSQL, against raw single-row INSERTs measured in the same run.

- ``commit_vs_raw_insert``: commits/s through ``Coordinator.submit`` (one observation per commit, one writer,
  one workspace, contributions parsed beforehand, the per-commit log event rendered to /dev/null) over raw
  INSERT commits/s; raw and coordinator alternate in chunks of each round, each rate is the median of the
  rounds.
  ``eventsourcing_save_vs_raw_insert`` is eventsourcing's own one-event save over the same raw rate, for
  context (``benchmarks/stock.py``).
- ``commit_8_writers_vs_raw_insert``: total commits/s of 8 writer processes on 8 workspaces over the
  single-writer raw rate, measured alone just before in each round; ``raw_8_writers_vs_raw_insert`` is the
  same for 8 raw writers, for context.
- ``commit_cost_10000_vs_100``: median latency of a commit on a workspace whose ledger is ~10,000 commits
  long over one ~100 commits long, the two measured alternately. ``commit_cost_10000_vs_100_mean`` is the
  ratio of means over a window two snapshot periods wide, so the amortized snapshot cost shows.
- ``commit_client_cpu_us`` and ``commit_postgres_cpu_us`` against ``raw_client_cpu_us`` and
  ``raw_postgres_cpu_us``: the CPU of one write on each side of these ratios, the writing process's own and
  the local PostgreSQL's (every one of its processes, from /proc), medians of alternated runs of
  ``CPU_WRITES`` one-observation commits and as many raw INSERTs (context: on a machine whose cores are
  saturated, as with 8 writers on 2, the CPU of a write bounds the rate).
"""

from __future__ import annotations

import functools
import statistics
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.context import BenchContext, median, postgres_cpu_s, postgres_ticks
from benchmarks.stock import StockSaver
from benchmarks.workload import (
    accept,
    clock,
    create_raw_table,
    log_to_devnull,
    observation,
    observations,
    open_workspace,
    raw_writer,
    sample_payload,
    schema_of,
    submit_all,
)
from benchmarks.writers import run_writers
from caseboard.coordinator import Coordinator
from caseboard.domain.contribution import Contribution
from caseboard.ledger import open_ledger
from caseboard.projections.workspaces import SNAPSHOT_SPACING


@dataclass(frozen=True)
class Sizes:
    single: int  # commits per single-writer round, raw and through the coordinator
    chunk: int  # raw and coordinator alternate every ``chunk`` commits within a round
    writers: int
    per_writer: int  # commits per writer per round
    short: int  # the short ledger's typical length
    long: int  # the long ledger's length
    window: int  # commits measured around the long length (two snapshot periods: 2 * (long // SNAPSHOT_SPACING))


FULL = Sizes(
    single=2000, chunk=100, writers=8, per_writer=300, short=100, long=10_000, window=2 * (10_000 // SNAPSHOT_SPACING)
)
QUICK = Sizes(single=20, chunk=10, writers=8, per_writer=5, short=10, long=120, window=20)
CPU_WRITES = 3000  # per side and run of ``cpu_per_write``: /proc counts CPU in 10 ms ticks, ~3 us a write here
CPU_WORKSPACE = 300  # commits per workspace there: one that long takes no snapshot, as in the 8 writers' rounds


def run(ctx: BenchContext) -> dict[str, float]:
    sizes = QUICK if ctx.quick else FULL
    log_to_devnull()
    payload = sample_payload()
    print(f"one observation per commit; stored commit {len(payload)} bytes; raw rows carry the same bytes")
    with ctx.fresh_schema() as ledger_url:
        ledger = open_ledger(ledger_url)
        try:
            create_raw_table(ctx.postgres_url, schema_of(ledger_url))
            coordinator = Coordinator(ledger)
            raw, commit, stock = single_writer(ctx, coordinator, ledger_url, payload, sizes)
            with raw_writer(ctx.postgres_url, schema_of(ledger_url), payload) as alone:
                many = run_writers(
                    ledger_url, alone, writers=sizes.writers, per_writer=sizes.per_writer, rounds=ctx.rounds
                )
            for number, rates in enumerate(many, 1):
                print(
                    f"{sizes.writers} writers, round {number}: raw {rates.raw:7.0f}/s  coordinator "
                    f"{rates.commit:7.0f}/s  (one raw writer alone {rates.alone:7.0f}/s: "
                    f"{rates.commit / rates.alone:.2f})"
                )
            threaded, per_group = threaded_writers(ctx, ledger_url, payload, sizes)
            cpu = cpu_per_write(ctx, coordinator, ledger_url, payload)
            median_ratio, mean_ratio = commit_cost(coordinator, sizes)
        finally:
            ledger.close()
    alone_rate = median([r.alone for r in many])
    many_raw, many_commit = median([r.raw for r in many]), median([r.commit for r in many])
    print(
        f"medians: 1 writer: raw {raw:.0f}/s, coordinator {commit:.0f}/s; {sizes.writers} writers: "
        f"raw {many_raw:.0f}/s, coordinator {many_commit:.0f}/s; one raw writer alone {alone_rate:.0f}/s"
    )
    return {
        "commit_vs_raw_insert": commit / raw,
        "raw_insert_per_s": raw,  # the disk decides it: compare ratios only between machines that agree on it
        "eventsourcing_save_vs_raw_insert": stock,  # context: the stock save on this machine
        "commit_8_writers_vs_raw_insert": many_commit / alone_rate,
        "raw_8_writers_vs_raw_insert": many_raw / alone_rate,
        "commit_8_threads_vs_raw_insert": threaded,
        "commits_per_group_commit_8_threads": per_group,
        "commit_cost_10000_vs_100": median_ratio,
        "commit_cost_10000_vs_100_mean": mean_ratio,
        **cpu,
    }


def single_writer(
    ctx: BenchContext, coordinator: Coordinator, ledger_url: str, payload: bytes, sizes: Sizes
) -> tuple[float, float, float]:
    """Median raw and coordinator commits/s of one writer, and the median ratio of eventsourcing's own save
    to the raw rate of the same round. Within a round raw and coordinator alternate in chunks, so that both
    see the same load on a shared machine."""
    raws: list[float] = []
    commits: list[float] = []
    stocks: list[float] = []
    stock = StockSaver(ctx.postgres_url, schema_of(ledger_url), len(payload) - 100)
    with raw_writer(ctx.postgres_url, schema_of(ledger_url), payload) as raw:
        warm_up = min(sizes.single, 100)
        accept(coordinator, open_workspace("ws-warm-up"))
        raw.insert("raw-warm-up", warm_up)
        submit_all(coordinator, observations("ws-warm-up", 1, warm_up))
        for number in range(1, ctx.rounds + 1):
            workspace_id = f"ws-single-{number}"
            accept(coordinator, open_workspace(workspace_id))
            contributions = observations(workspace_id, 1, sizes.single)
            raw_s = commit_s = 0.0
            for first in range(0, sizes.single, sizes.chunk):
                chunk = contributions[first : first + sizes.chunk]
                started = clock()
                raw.insert(f"raw-single-{number}", len(chunk), first=first + 1)
                middle = clock()
                submit_all(coordinator, chunk)
                raw_s, commit_s = raw_s + middle - started, commit_s + clock() - middle
            raws.append(sizes.single / raw_s)
            commits.append(sizes.single / commit_s)
            stocks.append(stock.save(sizes.single // 4) / raws[-1])
            print(
                f"1 writer, round {number}: raw {raws[-1]:7.0f}/s  coordinator {commits[-1]:7.0f}/s  "
                f"({commits[-1] / raws[-1]:.2f}; eventsourcing's own save {stocks[-1]:.2f})"
            )
    stock.close()
    return median(raws), median(commits), median(stocks)


def cpu_per_write(ctx: BenchContext, coordinator: Coordinator, ledger_url: str, payload: bytes) -> dict[str, float]:
    """Microseconds of CPU per write, this process's and the local PostgreSQL's, for raw INSERTs and for
    commits, run in turn ``ctx.rounds`` times (medians); no PostgreSQL figure for a database elsewhere."""
    count, length = (CPU_WRITES, CPU_WORKSPACE) if not ctx.quick else (10, 10)
    spent: dict[str, list[float]] = {}

    def measured(side: str, write: Callable[[], None]) -> None:
        client, server = time.process_time(), postgres_ticks()
        write()
        spent.setdefault(f"{side}_client_cpu_us", []).append((time.process_time() - client) / count * 1e6)
        after = postgres_ticks()
        if server is not None and after is not None:
            spent.setdefault(f"{side}_postgres_cpu_us", []).append(postgres_cpu_s(server, after) / count * 1e6)

    with raw_writer(ctx.postgres_url, schema_of(ledger_url), payload) as raw:
        for number in range(ctx.rounds):
            contributions: list[Contribution] = []
            for first in range(0, count, length):
                workspace_id = f"ws-cpu-{number}-{first}"
                accept(coordinator, open_workspace(workspace_id))
                contributions.extend(observations(workspace_id, 1, length))
            measured("raw", functools.partial(raw.insert, f"raw-cpu-{number}", count))
            measured("commit", functools.partial(submit_all, coordinator, contributions))
    figures = {name: median(values) for name, values in spent.items()}
    print(
        "CPU per write (this process, PostgreSQL): raw "
        f"{figures['raw_client_cpu_us']:.0f} us, {figures.get('raw_postgres_cpu_us', float('nan')):.0f} us; "
        f"commit {figures['commit_client_cpu_us']:.0f} us, {figures.get('commit_postgres_cpu_us', float('nan')):.0f} us"
    )
    return figures


def threaded_writers(ctx: BenchContext, ledger_url: str, payload: bytes, sizes: Sizes) -> tuple[float, float]:
    """The same writers as threads of one process sharing one ledger and coordinator, as the API process
    serves its callers (concurrent commits share group commits), against one raw writer measured just
    before, in each round: (median ratio, median rows per group commit)."""
    ratios: list[float] = []
    batch_sizes: list[float] = []
    ledger = open_ledger(ledger_url)
    coordinator = Coordinator(ledger)
    group = getattr(ledger.events, "group", None)
    try:
        with raw_writer(ctx.postgres_url, schema_of(ledger_url), payload) as raw:
            for number in range(1, ctx.rounds + 1):
                started = clock()
                raw.insert(f"raw-threads-{number}", sizes.per_writer)
                alone = sizes.per_writer / (clock() - started)
                work = []
                for n in range(sizes.writers):
                    workspace_id = f"ws-thread-{number}-{n}"
                    accept(coordinator, open_workspace(workspace_id))
                    work.append(observations(workspace_id, 1, sizes.per_writer))
                barrier = threading.Barrier(sizes.writers + 1)
                threads = [threading.Thread(target=_write, args=(barrier, coordinator, w)) for w in work]
                for thread in threads:
                    thread.start()
                batches, rows = (group.batches, group.rows) if group else (0, 0)
                barrier.wait()
                started = clock()
                for thread in threads:
                    thread.join()
                rate = sizes.writers * sizes.per_writer / (clock() - started)
                ratios.append(rate / alone)
                batch = (group.rows - rows) / max(1, group.batches - batches) if group else 1.0
                batch_sizes.append(batch)
                print(
                    f"{sizes.writers} writer threads, round {number}: coordinator {rate:7.0f}/s  "
                    f"(one raw writer alone {alone:7.0f}/s: {ratios[-1]:.2f}; {batch:.1f} commits per group commit)"
                )
    finally:
        ledger.close()
    return median(ratios), median(batch_sizes)


def _write(barrier: threading.Barrier, coordinator: Coordinator, contributions: list[Contribution]) -> None:
    barrier.wait()
    submit_all(coordinator, contributions)


def commit_cost(coordinator: Coordinator, sizes: Sizes) -> tuple[float, float]:
    """Latency of a commit at ledger length ~long over ~short: ratio of medians, ratio of means."""
    long_id = "ws-long"
    accept(coordinator, open_workspace(long_id))
    first = sizes.long - sizes.window // 2  # the long workspace's version before the window
    started = clock()
    for number in range(1, first):
        accept(coordinator, observation(long_id, number))
    print(f"grew {long_id} to version {first} in {clock() - started:.1f}s")
    long_window = observations(long_id, first, sizes.window)
    short_ids = iter(f"ws-short-{n}" for n in range(1, 10**6))
    short_id, short_version = next(short_ids), 2 * sizes.short  # opens a short workspace at the first step
    long_costs: list[float] = []
    short_costs: list[float] = []
    for contribution in long_window:
        if short_version >= 2 * sizes.short:  # short workspaces span versions 2 .. 2*short
            short_id, short_version = next(short_ids), 1
            accept(coordinator, open_workspace(short_id))
        short_commit = observation(short_id, short_version)
        started = clock()
        accept(coordinator, contribution)
        middle = clock()
        accept(coordinator, short_commit)
        ended = clock()
        short_version += 1
        long_costs.append(middle - started)
        short_costs.append(ended - middle)
    for label, costs in (("~" + str(sizes.short), short_costs), ("~" + str(sizes.long), long_costs)):
        print(
            f"ledger length {label:>7}: median {statistics.median(costs) * 1e3:.3f} ms, "
            f"mean {statistics.fmean(costs) * 1e3:.3f} ms, max {max(costs) * 1e3:.1f} ms"
        )
    return (
        statistics.median(long_costs) / statistics.median(short_costs),
        statistics.fmean(long_costs) / statistics.fmean(short_costs),
    )
