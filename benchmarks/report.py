"""The auditor's report of a 10,000-commit incident: ``caseboard report FILE --out report.html``.

The incident is the replay section's workload (``benchmarks/replay.py``: a head played through the
coordinator, then observations that slide the full selection, with a correct hash chain), built in
PostgreSQL and exported to a recorded incident file. ``report_10000_s`` is the median time to verify the
file, walk its 10,000 versions (each version's changes and status changes), render the page and write it;
the goal is under 10 s (``--quick`` builds 1,000 commits). ``report_vs_replay`` is that time over
``caseboard replay FILE`` (verify, fold, render the head) of the same file in the same run: what the walk
and the page cost beyond a replay. ``report_10000_cpu_s`` is the report's CPU time (the process's), which
a machine shared with other work inflates less than the elapsed time.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from benchmarks.context import BenchContext, median
from benchmarks.replay import WORKSPACE, build
from caseboard.ledger import open_ledger
from caseboard.logs import configure_logging
from caseboard.reducers import get_reducer
from caseboard.replay.rebuild import replay_file
from caseboard.replay.transfer import export
from caseboard.report import model, page
from caseboard.report.attached import Holder
from caseboard.report.source import file_record


def report(path: Path, out: Path) -> int:
    """What ``caseboard report`` does with a file; the size of the page written."""
    built = model.build_from(file_record(path), get_reducer(), holder=Holder())  # a file with no sidecar
    assert built.intact and built.version == built.recorded
    return out.write_text(page.render(built), encoding="utf-8")


def run(ctx: BenchContext) -> dict[str, float]:
    configure_logging("warning", "json", cache=True)  # the section has a process of its own
    commits = 1_000 if ctx.quick else 10_000
    rounds = 1 if ctx.quick else min(ctx.rounds, 3)
    with tempfile.TemporaryDirectory(prefix="caseboard-bench-report-") as tmp, ctx.fresh_schema() as url:
        incident, out = Path(tmp) / "incident.jsonl", Path(tmp) / "report.html"
        ledger = open_ledger(url)
        try:
            build(ledger, commits)
            with incident.open("w", encoding="utf-8") as handle:
                assert export(ledger, WORKSPACE, handle) == commits
        finally:
            ledger.close()
        report_s, report_cpu_s, replay_s = [], [], []
        size = 0
        for _ in range(rounds):
            started, cpu = time.perf_counter(), time.process_time()
            size = report(incident, out)
            report_s.append(time.perf_counter() - started)
            report_cpu_s.append(time.process_time() - cpu)
            started = time.perf_counter()
            assert replay_file(incident)["workspace_version"] == commits
            replay_s.append(time.perf_counter() - started)
    print(
        f"report of {commits} commits: {median(report_s):.2f}s, {median(report_cpu_s):.2f}s of CPU "
        f"({size / 1e6:.1f} MB of HTML); "
        f"replay of the same file {median(replay_s):.2f}s",
        flush=True,
    )
    return {
        "report_10000_s": median(report_s),
        "report_10000_cpu_s": median(report_cpu_s),
        "report_vs_replay": median(report_s) / median(replay_s),
    }
