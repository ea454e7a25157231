"""A reducer made by replacing one rule of a released one (docs/reducers.md's recipe) shows that rule in every
output derived from it, under its own name: the projection, ``explain``, ``compare``'s facets and the
coordinator's draft (ADR 0170). And the current reducer is a setting, ``CASEBOARD_REDUCER``, handed down by the
composition root."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from caseboard.app import build_app
from caseboard.coordinator import Coordinator
from caseboard.domain.errors import ConfigurationError
from caseboard.projections import Workspaces
from caseboard.reducers import CURRENT, REDUCERS, ProposalRec, WorkspaceState, get_reducer
from caseboard.replay.compare import facets
from caseboard.replay.history import explain, history
from caseboard.replay.rebuild import fold
from caseboard.replay.records import read_file
from caseboard.settings import DEFAULT_REDUCER, Settings
from tests.unit.board import Board, hyp, iso, obs, proposal
from tests.unit.freshness_board import EXPIRES, START

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
V3 = get_reducer("workspace-rules-v3")


def expiry_is_no_reason(state: WorkspaceState, proposal: ProposalRec, as_of: datetime | None) -> str:
    """v3's status judged as of no time: an observation's expiry does not send a plan back to review."""
    return V3.proposal_status(state, proposal, None)


ACME = dataclasses.replace(V3, name="acme-rules-v4", proposal_status=expiry_is_no_reason)


def statuses(projection: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["status"] for p in projection["proposals"]}


def test_the_projection_shows_the_replaced_rule_under_the_reducers_own_name() -> None:
    commits = list(read_file(CORPUS / "expired-evidence-044.jsonl"))
    differing = []
    for version in range(1, commits[-1].version + 1):
        state = fold(commits, ACME, version)
        shown = ACME.render(state)
        assert shown["reducer_version"] == "acme-rules-v4"
        rule = {p.id: expiry_is_no_reason(state, p, state.at) for p in state.proposals.values()}
        assert statuses(shown) == rule
        assert facets(shown)["proposal_status"] == rule  # what compare compares
        released = statuses(V3.render(fold(commits, V3, version)))
        if released != rule:
            differing.append((version, released, rule))
    assert [version for version, _, _ in differing] == [8, 9]  # v3 flags proposal-001 once its evidence expired
    assert all(before["proposal-001"] == "requires_revalidation" for _, before, _ in differing)
    assert all(after["proposal-001"] != "requires_revalidation" for _, _, after in differing)


def test_explain_and_the_projection_agree_under_the_replaced_rule() -> None:
    commits = list(read_file(CORPUS / "expired-evidence-044.jsonl"))
    for reducer in (V3, ACME):
        told = explain(history(commits, reducer).steps, "proposal-001")
        shown = statuses(reducer.render(fold(commits, reducer)))
        assert told["status"] == shown["proposal-001"], reducer.name
    assert explain(history(commits, ACME).steps, "proposal-001")["status"] != "requires_revalidation"


def test_the_coordinator_records_the_status_the_replaced_rule_gives() -> None:
    recorded = {}
    for reducer in (V3, ACME):
        board = Board()
        board.coordinator = Coordinator(board.ledger, Workspaces(board.ledger, reducer), clock=board.clock)
        board.clock.now = START
        board.open()
        board.ok("specialist", [obs("o-health", "checkout-db healthy", event_time=iso(START), expires_at=iso(EXPIRES))])
        board.ok("planner", [hyp("h", "checkout latency is not the database", supporting_evidence=["o-health"])])
        board.clock.now = EXPIRES  # the evidence has expired when the plan is proposed
        outcome = board.ok("planner", [proposal("p1", board.head, "h")])
        recorded[reducer.name] = outcome["items"][0]["recorded_status"]
        assert board.show()["reducer_version"] == reducer.name
    assert recorded == {"workspace-rules-v3": "requires_revalidation", "acme-rules-v4": "current"}


def test_the_current_reducer_is_a_setting_handed_to_every_part_by_the_composition_root() -> None:
    assert DEFAULT_REDUCER == CURRENT and DEFAULT_REDUCER in REDUCERS
    assert Settings.from_env({}).reducer == CURRENT
    settings = Settings.from_env({"CASEBOARD_REDUCER": "workspace-rules-v2"})
    assert settings.current_reducer is get_reducer("workspace-rules-v2")
    app = build_app(settings, database_url="memory://")
    try:
        assert app.workspaces.reducer is settings.current_reducer
        assert app.coordinator().workspaces.reducer is settings.current_reducer
        board = Board()
        board.ledger, board.coordinator = app.ledger, app.coordinator()  # type: ignore[assignment]
        board.open()
        assert app.workspaces.show(board.workspace_id)["reducer_version"] == "workspace-rules-v2"
    finally:
        app.close()


def test_an_unknown_current_reducer_is_one_line_naming_the_registered_ones() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Settings.from_env({"CASEBOARD_REDUCER": "acme-rules-v9"})
    assert str(refused.value) == (
        f"CASEBOARD_REDUCER: unknown reducer 'acme-rules-v9'; known reducers: {', '.join(REDUCERS)}"
    )
