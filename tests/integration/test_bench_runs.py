"""``make bench`` runs end to end on PostgreSQL (tiny sizes): its last line is the JSON object of figures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.conftest import ROOT, service_missing

pytestmark = pytest.mark.postgres

COMMIT_FIGURES = {
    "commit_vs_raw_insert",
    "raw_insert_per_s",
    "eventsourcing_save_vs_raw_insert",
    "commit_8_writers_vs_raw_insert",
    "commit_8_threads_vs_raw_insert",
    "commits_per_group_commit_8_threads",
    "raw_8_writers_vs_raw_insert",
    "commit_cost_10000_vs_100",
    "commit_cost_10000_vs_100_mean",
    "raw_client_cpu_us",
    "commit_client_cpu_us",
}
POSTGRES_CPU_FIGURES = {"raw_postgres_cpu_us", "commit_postgres_cpu_us"}
"""Given when this machine runs the PostgreSQL (from /proc): 0 is possible at quick sizes, which /proc counts in
10 ms ticks."""


def quick_bench(section: str, postgres: str) -> dict[str, float]:
    """``scripts/bench.py --quick --only SECTION``'s last line, which must be one JSON object."""
    env = {**os.environ, "CASEBOARD_BENCH_POSTGRES_URL": postgres}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--quick", "--only", section],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def test_quick_commit_bench_ends_with_one_json_object_of_positive_figures(postgres_available: str) -> None:
    figures = quick_bench("commit", postgres_available)
    assert isinstance(figures, dict)
    assert COMMIT_FIGURES <= set(figures) <= COMMIT_FIGURES | POSTGRES_CPU_FIGURES
    assert all(isinstance(value, float) for value in figures.values()), figures
    assert all(figures[name] > 0 for name in COMMIT_FIGURES), figures
    assert all(figures[name] >= 0 for name in POSTGRES_CPU_FIGURES & set(figures)), figures
    if urlparse(postgres_available).hostname in ("127.0.0.1", "localhost") and Path("/proc").is_dir():
        assert set(figures) >= POSTGRES_CPU_FIGURES, "this machine's PostgreSQL is in /proc: its CPU is counted"


def test_quick_sources_bench_gives_the_overhead_around_a_real_prometheus_range_query(postgres_available: str) -> None:
    if shutil.which("prometheus") is None:
        service_missing("prometheus", FileNotFoundError("Debian's prometheus is not installed"))
    figures = quick_bench("sources", postgres_available)
    assert set(figures) == {
        "source_query_overhead_ms_p50",
        "source_query_overhead_ms_p99",
        "source_query_ms_p50",
        "source_query_ms_p99",
    }
    assert 0 < figures["source_query_overhead_ms_p50"] <= figures["source_query_overhead_ms_p99"]
    assert 0 < figures["source_query_ms_p50"] <= figures["source_query_ms_p99"]
