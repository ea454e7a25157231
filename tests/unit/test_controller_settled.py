"""The controller rules of ADR 0125: a refuted alternative is settled, an inconclusive verification does not want
the verifier again, and a check that never completes gets a bounded chain of rests and a bounded handoff."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from caseboard.domain.items import MAX_TEXT
from caseboard.reducers import CURRENT, REDUCERS, get_reducer
from caseboard.workers.controller import POINT_LIMIT, ControllerDecision, CycleMemory, decide_next, handoff
from caseboard.workers.followups import REST_LIMIT, Followups, followups
from caseboard.workers.runtime import bounded_view
from tests.unit.board import T0, Board, claim, cycle, hyp, iso, judgment, obs, result, verification

LATER = T0 + timedelta(hours=2)
"""Past every turn timeout of the cycles the tests record."""
WHOLE = {
    "time_range": [iso(T0), iso(T0 + timedelta(hours=1))],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-1"],
    "completed": True,
}
PART = {**WHOLE, "completed": False}


def decide(board: Board) -> tuple[ControllerDecision, Followups]:
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    found = followups(state, get_reducer(CURRENT), LATER)
    memory = CycleMemory()
    for commit in board.ledger.read(board.workspace_id):
        memory.fold(commit)
    return decide_next(bounded_view(board.show()), memory, LATER, found=found), found


def checked(board: Board, request_id: str, query: dict[str, Any], kind: str = "certificate_check") -> None:
    request = {"type": "work_request", "request_id": request_id, "kind": kind, "target": "payments-api-1..3"}
    board.ok("planner", [request])
    runner = "certificate-specialist"  # not an author of the evidence the check settles (rule 3 of ADR 0135)
    board.ok("specialist", [claim(request_id)], principal=runner)
    board.ok("specialist", [result(request_id, 1, summary="chains compared", query=query)], principal=runner)


def explained(*verdicts: tuple[str, str]) -> Board:
    """A workspace with one hypothesis per verdict, each checked by its own completed check and verified so."""
    board = Board("settled-1")
    board.open()
    for at, (hypothesis, _) in enumerate(verdicts):
        board.ok("specialist", [obs(f"o-{hypothesis}", f"reading {at}")])
        board.ok("planner", [hyp(hypothesis, f"explanation {at}", supporting_evidence=[f"o-{hypothesis}"])])
        checked(board, f"chk-{hypothesis}", WHOLE)
    board.ok("controller", [cycle(1)], "controller")
    board.ok("verifier", [verification(h, f"chk-{h}", outcome) for h, outcome in verdicts])
    return board


def test_a_confirmed_explanation_beside_a_refuted_alternative_goes_to_human_review() -> None:
    board = explained(("h-cert", "refuted"), ("h-capacity", "confirmed"))
    selected = {h["id"]: h["status"] for h in board.show()["selected_items"]["hypotheses"]}
    assert selected == {"h-cert": "refuted", "h-capacity": "confirmed"}  # the refuted one stays selected
    decision, _ = decide(board)
    [status] = decision.items
    assert status["to"] == "human_review_required"
    assert status["handoff"].startswith("Confirmed: h-capacity. Refuted: h-cert. Unresolved: ")
    board.ok("controller", list(decision.items), "controller")
    assert board.show()["status"] == "human_review_required"


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_every_reducer_shows_a_verdict_as_the_status_of_its_hypothesis(name: str) -> None:
    board = explained(("h-cert", "refuted"), ("h-capacity", "confirmed"))
    reducer = get_reducer(name)
    state = board.folded(name)
    statuses = {h["id"]: h["status"] for h in reducer.render(state)["hypotheses"]}
    assert statuses == {"h-cert": "refuted", "h-capacity": "confirmed"}


def test_refuted_claims_alone_are_no_explanation_to_review() -> None:
    decision, _ = decide(explained(("h-cert", "refuted")))
    [status] = decision.items
    assert status["to"] == "evidence_incomplete"
    assert "no confirmed explanation for the goal" in status["handoff"]


def test_an_inconclusive_verification_does_not_want_the_verifier_again_and_the_run_ends_incomplete() -> None:
    board = explained(("h-release", "inconclusive"))
    assert board.hypothesis_status("h-release") == "supported"
    decision, _ = decide(board)
    assert decision.action == "status", decision
    [status] = decision.items
    assert status["to"] == "evidence_incomplete"
    assert "the verification of h-release was inconclusive" in status["handoff"]
    assert "hypothesis h-release is supported" in status["handoff"]


def test_a_check_completed_after_an_inconclusive_verification_wants_the_verifier_again() -> None:
    board = explained(("h-release", "inconclusive"))
    checked(board, "chk-h-release-again", WHOLE)
    decision, _ = decide(board)
    assert decision.action == "cycle"
    assert "verifier-1" in decision.scheduled


def test_a_verifier_turn_that_verified_nothing_leaves_the_verifier_wanted() -> None:
    board = Board("settled-2")
    board.open()
    board.ok("specialist", [obs("o-h")])
    board.ok("planner", [hyp("h", "the release broke checkout", supporting_evidence=["o-h"])])
    checked(board, "chk-h", WHOLE)
    board.ok("controller", [cycle(1)], "controller")
    board.ok("verifier", [judgment("inv-1", board.head)])  # its model's reply was no verification
    decision, _ = decide(board)
    assert decision.action == "cycle"
    assert decision.scheduled == ("verifier-1",)


def test_a_check_that_never_completes_gets_a_bounded_chain_of_rests_then_ends_incomplete() -> None:
    board = Board("rests-1")
    board.open(max_investigation_cycles=20)
    board.ok("planner", [hyp("h", "certificate chain differs on instance 3")])
    checked(board, "chk", PART)
    board.ok("controller", [cycle(1)], "controller")
    rests = []
    for _ in range(REST_LIMIT + 3):
        decision, _ = decide(board)
        requested = [i["request_id"] for i in decision.items if i["type"] == "work_request"]
        if decision.action != "cycle":
            break
        board.ok("controller", list(decision.items), "controller")
        [rest] = requested
        rests.append(rest)
        board.ok("specialist", [claim(rest)])
        board.ok("specialist", [result(rest, 1, summary="timed out again", query=PART)])
    assert rests == ["chk-rest", "chk-rest-rest"][:REST_LIMIT]
    [status] = decision.items
    assert status["to"] == "evidence_incomplete"
    assert status["handoff"].count("missing coverage: check ") == 1  # one line for the check and its rests
    assert f"after {REST_LIMIT + 1} attempts (last {rests[-1]})" in status["handoff"]
    board.ok("controller", list(decision.items), "controller")
    assert board.show()["status"] == "evidence_incomplete"


def test_the_handoff_of_many_incomplete_checks_stays_within_a_status_item_and_lands() -> None:
    board = Board("rests-2")
    board.open(max_investigation_cycles=1, max_pending_work=100)
    board.ok("planner", [hyp("h", "certificate chain differs on one instance")])
    long_target = "payments-api " + "instance-with-a-long-name " * 12
    for number in range(40):
        request = {"type": "work_request", "request_id": f"chk-{number:02}", "kind": "certificate_check"}
        board.ok("planner", [{**request, "target": long_target}])
        board.ok("specialist", [claim(f"chk-{number:02}")])
        board.ok("specialist", [result(f"chk-{number:02}", 1, summary="timed out " * 30, query=PART)])
    board.ok("controller", [cycle(1)], "controller")
    board.ok("specialist", [obs("o-new")])  # the planner is wanted and no cycle is left
    decision, found = decide(board)
    assert len(found.missing_coverage) == 40
    assert len("; ".join(found.missing_coverage)) > MAX_TEXT
    [status] = decision.items
    assert status["to"] == "evidence_incomplete"
    assert len(status["handoff"]) <= MAX_TEXT
    assert status["handoff"].startswith("Missing coverage (40): check chk-00 (certificate_check, payments-api ")
    assert " more. Unresolved (" in status["handoff"]
    assert "evidence not yet weighed by the planner: o-new" in status["handoff"]
    board.ok("controller", list(decision.items), "controller")  # the status item is no longer refused
    assert board.show()["status"] == "evidence_incomplete"


def test_a_handoff_that_fits_is_whole_and_one_that_does_not_names_counts_and_the_first_points() -> None:
    points = [f"work w-{n} is awaiting_result" for n in range(3)]
    assert handoff(("Unresolved", "; ", points)) == "Unresolved: " + "; ".join(points)
    many = [f"check c-{n} is incomplete: " + "x" * 400 for n in range(100)]
    text = handoff(("Missing coverage", "; ", many), ("Unresolved", "; ", points), limit=2000)
    assert len(text) <= 2000
    missing, unresolved = text.split(". Unresolved")
    assert missing.startswith("Missing coverage (100): check c-0 is incomplete: x")
    assert all(len(p) <= POINT_LIMIT for p in missing.removeprefix("Missing coverage (100): ").split("; "))
    assert missing.endswith(" more") and "check c-1 " in missing
    assert unresolved == " (3): " + "; ".join(points)


def suspected(name: str) -> Board:
    """A hypothesis its planner made at cycle 1, a completed check of it, and evidence recorded after the claim."""
    board = Board(name)
    board.open(max_investigation_cycles=20)
    board.ok("specialist", [obs("o-alert", "auth failures alert fired at 14:05")])
    board.ok("controller", [cycle(1)], "controller")
    suspicion = hyp("h-cert", "the certificate change initiated the failures", supporting_evidence=["o-alert"])
    board.ok("planner", [suspicion])
    checked(board, "chk-cert", WHOLE)
    return board


def scheduled_next(board: Board) -> tuple[str, ...]:
    decision, _ = decide(board)
    assert decision.action == "cycle", decision
    board.ok("controller", list(decision.items), "controller")
    return decision.scheduled


@pytest.mark.parametrize("evidence_first", [True, False])
def test_the_planner_weighs_late_evidence_against_the_claim_as_verified_whichever_arrives_first(
    evidence_first: bool,
) -> None:
    """The pilot's race (ADR 0179): evidence that a claim is wrong lands while the claim awaits its verdict. Were
    the planner scheduled beside the verifier, it would weigh the evidence against the unverified claim and be
    asked nothing once the verdict confirmed it; it waits one cycle for the verdict instead."""
    board = suspected(f"late-evidence-{evidence_first}")
    early = obs("o-early", "auth failures on payments-api-2 began at 13:58, before the change")
    if evidence_first:
        board.ok("specialist", [early], principal="metrics-specialist")
    assert scheduled_next(board) == ("verifier-1",)  # the planner waits for the verdict
    if not evidence_first:
        board.ok("specialist", [early], principal="metrics-specialist")
    board.ok("verifier", [verification("h-cert", "chk-cert", "confirmed")])
    assert board.hypothesis_status("h-cert") == "confirmed"
    assert scheduled_next(board) == ("planner-1",)  # the early failures are new to it, the claim now confirmed


def test_a_verifier_wanted_again_does_not_keep_the_planner_waiting() -> None:
    board = suspected("verifier-again")
    board.ok("specialist", [obs("o-early", "auth failures began at 13:58")], principal="metrics-specialist")
    assert scheduled_next(board) == ("verifier-1",)
    board.ok("verifier", [judgment("inv-1", board.head)])  # its turn verified nothing
    assert scheduled_next(board) == ("planner-1", "verifier-1")
