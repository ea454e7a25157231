"""Each health figure explained by a scenario that produces it, played through the coordinator
(docs/health.md): an invalidation of each kind, an expired dependency, a lapsed lease, an exhausted budget,
a correction; and the figures the ledger cannot hold say so instead of 0."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from caseboard.projections.health import NOT_INSTRUMENTED, HealthFold, health, ledger_health, tenant_health
from tests.unit.board import (
    T0,
    Board,
    claim,
    cycle,
    hyp,
    iso,
    link,
    obs,
    proposal,
    question,
    result,
    review,
    status,
    verification,
    work_request,
)


def report(board: Board, version: int | None = None) -> dict[str, Any]:
    return ledger_health(board.ledger, board.workspace_id, version)


def planned(board: Board) -> Board:
    """Opened, one observation supporting one hypothesis, a proposal on it: current (version 4)."""
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("proposal-1", 3, "hyp-1")], expected_version=3)
    assert board.proposal_status("proposal-1") == "current"
    return board


def test_a_fresh_plan_has_no_invalidation_and_no_outstanding_work() -> None:
    figures = report(planned(Board()))
    assert figures["invalidations"]["total"] == 0
    assert figures["stale_evidence_in_use"]["total"] == 0
    assert figures["outstanding_work"]["awaiting_result"] == 0
    assert figures["outcomes"]["reached"] == []


def test_a_challenge_on_a_dependency_is_an_invalidation_by_contradictory_evidence() -> None:
    board = planned(Board())
    board.ok("specialist", [obs("obs-2", "logins recovered before the rollback")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    figures = report(board)
    assert figures["invalidations"]["events"] == [
        {"proposal": "proposal-1", "version": 6, "change": "contradictory_evidence", "was": "current"}
    ]
    assert figures["invalidations"]["by_change"]["contradictory_evidence"] == 1
    assert report(board, 5)["invalidations"]["total"] == 0  # as of the version before the challenge


def test_a_refuted_dependency_is_an_invalidation_by_refutation() -> None:
    board = planned(Board())
    board.ok("planner", [work_request("check-1")])
    board.ok("verifier", [claim("check-1")])
    board.ok("verifier", [result("check-1", 1)])
    board.ok("verifier", [verification("hyp-1", "check-1", "refuted")])
    assert report(board)["invalidations"]["by_change"]["dependency_refuted"] == 1


def test_a_withdrawn_proposal_under_another_is_an_invalidation_by_withdrawal_and_a_correction() -> None:
    board = planned(Board())
    board.ok("planner", [proposal("proposal-2", 4, "proposal-1")], expected_version=4)
    board.ok("planner", [review("proposal-1", "withdrawn")])
    figures = report(board)
    assert [(e["proposal"], e["change"]) for e in figures["invalidations"]["events"]] == [
        ("proposal-2", "dependency_withdrawn")
    ]
    assert figures["operator_corrections"]["reviews_withdrawn"] == 1


def test_a_scope_change_is_an_invalidation_by_changed_constraints() -> None:
    board = planned(Board())
    board.ok("operator", [{"type": "constraints", "goal": "Find why logins fail in eu-west"}])
    assert report(board)["invalidations"]["by_change"]["constraints_changed"] == 1


def test_an_expired_dependency_is_stale_evidence_in_use_once_a_commit_clock_passes_it() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1", expires_at=iso(T0 + timedelta(seconds=60)))])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("proposal-1", 3, "hyp-1")], expected_version=3)
    assert report(board)["stale_evidence_in_use"]["total"] == 0
    board.clock.advance(120)
    board.ok("planner", [question("q-1")])
    figures = report(board)
    assert figures["stale_evidence_in_use"]["observations"] == [
        {
            "observation": "obs-1",
            "expires_at": iso(T0 + timedelta(seconds=60)),
            "expired_for_s": 60.0,
            "proposals": ["proposal-1"],
        }
    ]
    assert figures["invalidations"]["events"][0]["change"] == "evidence_expired"
    assert report(board, 4)["stale_evidence_in_use"]["total"] == 0


def test_a_claim_whose_lease_runs_out_is_a_lapsed_lease_with_its_age() -> None:
    board = Board()
    board.open()
    board.ok("planner", [work_request("logs-1")])
    board.ok("specialist", [claim("logs-1", lease_s=60)])
    assert report(board)["outstanding_work"]["claimed"] == 1
    board.clock.advance(90)
    board.ok("planner", [question("q-1")])
    work = report(board)["outstanding_work"]
    assert (work["awaiting_result"], work["claimed"], work["lease_lapsed"]) == (0, 0, 1)
    assert work["requests"] == [
        {"request_id": "logs-1", "status": "lease_lapsed", "age_s": 90.0, "claimed_for_s": 90.0, "generation": 1}
    ]
    assert work["oldest_age_s"] == 90.0


def test_an_exhausted_budget_is_an_outcome_with_the_time_from_opening() -> None:
    board = Board()
    board.open(max_investigation_cycles=2)
    board.ok("controller", [cycle(1)])
    board.clock.advance(30)
    board.ok("controller", [cycle(2)])
    board.clock.advance(30)
    board.ok("controller", [status("budget_exhausted")])
    figures = report(board)
    assert figures["cycles"] == {"used": 2, "budget": 2, "scheduled_since_open": 2, "reopens": 0}
    assert [(o["outcome"], o["version"], o["seconds_from_open"]) for o in figures["outcomes"]["reached"]] == [
        ("budget_exhausted", 4, 60.0)
    ]
    assert tenant_health([figures])["workspaces_at_cycle_budget"] == 1


def test_an_accepted_plan_challenged_later_is_counted_as_a_correction() -> None:
    board = planned(Board())
    board.ok("operator", [review("proposal-1", "accepted")], expected_version=4)
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    figures = report(board)
    assert figures["operator_corrections"]["accepted_then_revalidation"] == ["proposal-1"]
    assert figures["invalidations"]["events"][-1]["was"] == "accepted"


def test_figures_the_ledger_cannot_hold_say_not_instrumented_never_zero() -> None:
    board = planned(Board())
    refused = board.submit("specialist", [obs("obs-1")])  # a duplicate id: refused, nothing appended
    assert not refused["ok"]
    figures = report(board)
    assert figures["refusals_by_reason"] == NOT_INSTRUMENTED
    assert figures["duplicate_deliveries_absorbed"] == NOT_INSTRUMENTED
    assert tenant_health([figures])["refusals_by_reason"] == NOT_INSTRUMENTED


def test_folding_in_two_parts_gives_the_figures_of_one_fold() -> None:
    board = planned(Board())
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    commits = board.ledger.read(board.workspace_id)
    for cut in range(1, len(commits)):
        fold = HealthFold().feed_all(commits[:cut])
        assert fold.report() == health(commits[:cut])
        fold.feed_all(commits[cut:])
        assert fold.report() == health(commits)


def test_a_version_beyond_the_head_is_refused() -> None:
    board = planned(Board())
    with pytest.raises(Exception, match="version 9 does not exist"):
        report(board, 9)
