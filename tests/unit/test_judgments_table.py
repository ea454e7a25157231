"""`caseboard judgments`' table: a figure a call did not record is shown as '-', never as Python's None."""

from __future__ import annotations

from typing import Any

from caseboard.agent.audit import table


def entry(**figures: Any) -> dict[str, Any]:
    return {
        "workspace_version": 2,
        "input_workspace_version": 1,
        "author": {"principal": "controller"},
        "model": "triage-model-2026-01",
        "usage": None,
        "latency_ms": None,
        "refusal": None,
        "contributed": [],
        **figures,
    }


def test_a_judgment_without_usage_or_latency_shows_dashes() -> None:
    # The demo's recorded judgment has neither: its line read "-  None".
    row = table([entry()]).splitlines()[1]
    assert "None" not in row
    assert row.split()[-3:] == ["-", "-", "-"]


def test_recorded_figures_are_shown_as_they_are() -> None:
    row = table([entry(usage={"total_tokens": 1234}, latency_ms=56.5, contributed=["hypothesis"])]).splitlines()[1]
    assert row.split()[-3:] == ["1234", "56.5", "hypothesis"]
