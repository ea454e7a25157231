"""Every HTTP and MCP read of ledger content goes through the chain's guard (``replay/audit.py::ReadGuard``,
ADR 0144): no route or tool reads commits or folds a state from the ledger by itself."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "caseboard"
DIRECT = re.compile(r"\.ledger\.read\(|\.iter_commits\(|\.raw_rows\(|\bledger_records\(|\.show\(|\.head_state\(")
ALLOWED = {
    # the ledger-wide health figures at each scrape: sums, no ledger content (docs/health.md)
    "api/metrics.py": 1,
    # the follower's ``ledger`` is ``services.CheckedCommits``, the guard's reads
    "api/event_hub.py": 2,
    # intake reads which alert notices the head holds, to leave them out; nothing of it is served (ADR 0161)
    "api/routes_intake.py": 1,
}


def test_no_route_or_tool_reads_the_ledger_past_the_guard() -> None:
    found: dict[str, int] = {}
    for folder in ("api", "mcp_server"):
        for path in sorted((ROOT / folder).glob("*.py")):
            hits = len(DIRECT.findall(path.read_text()))
            if hits:
                found[str(path.relative_to(ROOT))] = hits
    assert found == ALLOWED


def test_the_view_folds_at_a_version_and_reads_every_row_under_it_through_the_guard() -> None:
    source = (ROOT / "api" / "routes_read.py").read_text()
    assert source.count("state_at(") == 1
    assert "guard.commits(key, upto=state.version)" in source
