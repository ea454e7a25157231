"""``make bench`` section ``agent`` runs end to end on PostgreSQL (tiny sizes): its last line is its figures."""

from __future__ import annotations

import pytest

from tests.integration.test_bench_runs import quick_bench

pytestmark = pytest.mark.postgres


def test_quick_agent_bench_reports_the_participant_turn_over_the_bare_submit(postgres_available: str) -> None:
    figures = quick_bench("agent", postgres_available)
    assert set(figures) == {"agent_turn_vs_bare_submit", "agent_turn_ms", "agent_bare_submit_ms"}
    assert figures["agent_turn_ms"] > 0 and figures["agent_bare_submit_ms"] > 0
    assert figures["agent_turn_vs_bare_submit"] == pytest.approx(
        figures["agent_turn_ms"] / figures["agent_bare_submit_ms"], rel=0.5
    )
