"""``make bench`` section ``agent`` runs end to end on PostgreSQL (tiny sizes): its last line is its figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.postgres


def test_quick_agent_bench_reports_the_participant_turn_over_the_bare_submit(postgres_available: str) -> None:
    env = {**os.environ, "CASEBOARD_BENCH_POSTGRES_URL": postgres_available}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench.py"), "--quick", "--only", "agent"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) == {"agent_turn_vs_bare_submit", "agent_turn_ms", "agent_bare_submit_ms"}
    assert figures["agent_turn_ms"] > 0 and figures["agent_bare_submit_ms"] > 0
    assert figures["agent_turn_vs_bare_submit"] == pytest.approx(
        figures["agent_turn_ms"] / figures["agent_bare_submit_ms"], rel=0.5
    )
