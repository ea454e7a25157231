"""The coordinator, routing and model-view suites with ``workspace-rules-v2`` as the current reducer.

Nothing outside ``caseboard/reducers`` knows which reducer is current: a deployment names it in
``CASEBOARD_REDUCER`` (ADR 0170) and parts built without settings, as these suites' boards are, use
``CURRENT``, its default; switch it and the coordinator decides, routing routes and the model view renders
with it. The suites run in a pytest of their own with the
plugin ``tests.unit.reducer_v2_current`` (v2 current from before any module is imported); the tests of what
only v3 does are run there too and must fail under v2, and v2's own expectations for them are below.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from caseboard.coordinator import Coordinator
from caseboard.domain.items import Role
from caseboard.projections import Workspaces
from caseboard.projections.model_view import build_view
from caseboard.reducers import get_reducer
from tests.unit.board import Board, claim, hyp, iso, link, obs, proposal, result, review, work_request
from tests.unit.freshness_board import EXPIRES, MONTHS_LATER, fresh_board
from tests.unit.reducer_v2_current import V3_ONLY

ROOT = Path(__file__).resolve().parents[2]
V2 = "workspace-rules-v2"
SUITES = [
    "tests/unit/test_decide.py",  # the coordinator
    "tests/unit/test_rules.py",
    "tests/unit/test_routing.py",  # routing
    "tests/unit/test_model_view.py",  # the model view
    "tests/unit/test_view_attention.py",
    "tests/unit/test_view_freshness.py",
    "tests/unit/test_view_reviews_and_checks.py",
]


def suites_under_v2(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.unit.reducer_v2_current", *extra, *SUITES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_coordinator_routing_and_model_view_suites_pass_with_v2_current() -> None:
    run = suites_under_v2("-W", "error")
    assert run.returncode == 0, run.stdout[-4000:]
    summary = run.stdout.strip().splitlines()[-1]
    passed = int(summary.split(" passed")[0].split()[-1])
    assert passed >= 100, summary
    assert f"{len(V3_ONLY)} deselected" in summary, summary


def test_what_only_v3_does_fails_with_v2_current() -> None:
    """Each test left out of the v2 run exists and really depends on v3: under v2 every one of them fails."""
    run = suites_under_v2("--only-v3-tests")
    assert run.returncode == 1
    failed = sorted(line.split(" ")[1] for line in run.stdout.splitlines() if line.startswith("FAILED "))
    assert [name.split(" - ")[0] for name in failed] == sorted(V3_ONLY)


def v2_board(board: Board | None = None) -> Board:
    board = board or Board()
    board.coordinator = Coordinator(
        board.ledger, Workspaces(board.ledger, get_reducer(V2)), clock=board.clock, trust_timestamps=False
    )
    return board


def opened_v2() -> Board:
    board = v2_board()
    board.open()
    return board


def test_v2_keeps_one_idempotency_key_per_workspace_whoever_used_it() -> None:
    board = opened_v2()
    board.ok("specialist", [obs("obs-1")], idempotency_key="k-1")
    other = board.submit("specialist", [obs("obs-2")], "specialist-2", idempotency_key="k-1")
    assert (other["ok"], other["reason"]) == (False, "idempotency_mismatch")


def test_v2_records_the_proposal_status_its_own_rules_give() -> None:
    """A challenge with an unverified event time is not material in v2: the coordinator records the proposal
    ``current`` under v2, where v3 records it ``requires_revalidation``."""
    outcomes = {}
    for name in (V2, "workspace-rules-v3"):
        board = Board()
        board.coordinator = Coordinator(board.ledger, Workspaces(board.ledger, get_reducer(name)), clock=board.clock)
        board.open()
        board.ok("specialist", [obs("obs-1"), obs("obs-2", event_time_quality="unverified")])
        board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
        board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
        outcome = board.ok("planner", [proposal("prop-1", 3, "hyp-1")])
        outcomes[name] = outcome["items"][0]["recorded_status"]
    assert outcomes == {V2: "current", "workspace-rules-v3": "requires_revalidation"}


def test_v2_makes_a_retained_proposal_current_and_lists_no_reviews() -> None:
    board = opened_v2()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("prop-1", board.head, "hyp-1")])
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert board.proposal_status("prop-1") == "requires_revalidation"
    board.ok("planner", [review("prop-1", "retained", board.head)])
    assert board.proposal_status("prop-1") == "current"
    assert "reviews" not in board.show()


def test_v2_shows_a_result_whose_query_did_not_complete_as_completed() -> None:
    board = opened_v2()
    board.ok("planner", [work_request("req-1")])
    generation = board.ok("specialist", [claim("req-1", 60)])["items"][0]["generation"]
    query = {"time_range": ["2026-03-02T13:30:00Z", "2026-03-02T14:00:00Z"], "completed": False}
    board.ok("specialist", [result("req-1", generation, query=query)])
    assert board.work("req-1")["status"] == "completed"
    assert "incomplete_work" not in board.show()


def test_v2s_model_view_does_not_flag_a_plan_for_an_expired_challenge_of_its_hypothesis() -> None:
    board = v2_board(fresh_board())
    board.ok(
        "specialist", [obs("o-contra", "db p99 spiked", expires_at=iso(EXPIRES)), link("o-contra", "h", "challenges")]
    )
    state = board.coordinator.workspaces.state_at(board.workspace_id, None)
    commits = board.ledger.read(board.workspace_id, upto=state.version)
    view = build_view(state, commits, Role.PLANNER, 6000, V2, as_of=MONTHS_LATER)
    assert sorted(view.stale) == ["o-contra", "o-health"]
    assert view.stale_proposals == {"p1": ["o-health"]}  # v3: ["o-contra", "o-health"]


@pytest.mark.parametrize(("name", "told"), [(V2, False), ("workspace-rules-v3", True)])
def test_routing_tells_the_planner_what_the_current_reducer_judges_stale(name: str, told: bool) -> None:
    """An unverified challenge is material in v3, not in v2: the planner is told to revalidate under v3 only."""
    from caseboard.dispatcher.route import route

    board = Board()
    board.coordinator = Coordinator(board.ledger, Workspaces(board.ledger, get_reducer(name)), clock=board.clock)
    board.open()
    board.ok("specialist", [obs("obs-1"), obs("obs-2", event_time_quality="unverified")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"]), proposal("prop-1", 2, "hyp-1")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    state = board.coordinator.workspaces.current(board.workspace_id)
    [commit] = board.ledger.read(board.workspace_id, after=board.head - 1)
    kinds = {(n.kind, n.subject) for n in route(commit, state, get_reducer(name))}
    assert (("proposal_requires_revalidation", "prop-1") in kinds) is told
