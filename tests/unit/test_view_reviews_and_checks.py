"""The view and the controller on reviews made against a version (issue 24), incomplete checks, unsupported
answers and findings within their coverage (issue 25)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from caseboard.domain.items import Role
from caseboard.projections.model_view import ModelView, build_view
from caseboard.reducers import CURRENT, get_reducer
from caseboard.workers.controller import CycleMemory, decide_next
from caseboard.workers.followups import followups
from caseboard.workers.runtime import bounded_view
from tests.unit.board import T0, Board, answer, claim, hyp, iso, link, obs, proposal, question, result, review


def view_of(board: Board, budget: int = 20000, role: Role = Role.PLANNER) -> ModelView:
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    commits = board.ledger.read(board.workspace_id, upto=state.version)
    return build_view(state, commits, role, budget, CURRENT)


def entry(view: ModelView, ref: str) -> Any:
    return next(e for e in view.entries if e.ref == ref)


def reviewed_board() -> Board:
    """Issue 24's scenario: the retain made against v5 lands at v7, after c2 challenged h at v6."""
    board = Board("review-1")
    board.open()
    board.ok("specialist", [obs("o1")])
    board.ok("planner", [hyp("h", supporting_evidence=["o1"])])
    board.ok("planner", [proposal("p", 3, "h")])
    board.ok("specialist", [obs("c1", "GC pauses began earlier"), link("c1", "h", "challenges")], "specialist-1")
    board.ok("specialist", [obs("c2", "cache hit ratio was normal"), link("c2", "h", "challenges")], "specialist-2")
    board.ok("planner", [review("p", "retained", against=5)])
    assert board.head == 7
    return board


def test_each_review_is_shown_with_the_version_it_was_made_against_and_the_changes_it_did_not_cover() -> None:
    view = view_of(reviewed_board())
    shown = entry(view, "p@7")
    assert shown.section == "reviews" and shown.provenance.status == "retained"
    assert shown.note == (
        "proposal p; last review retained made against version 5; did not cover the changes at version 6"
    )
    flagged = entry(view, "p")
    assert flagged.section == "revalidation" and flagged.provenance.status == "requires_revalidation"
    assert "made against version 5; did not cover the changes at version 6" in (flagged.note or "")


def checked_board() -> Board:
    """Issue 25's scenario: chk covered one of three instances and did not finish."""
    board = Board("check-1")
    board.open()
    board.ok("planner", [hyp("h", "certificate chain differs on instance 3")])
    request = {"type": "work_request", "request_id": "chk", "kind": "certificate_check", "target": "payments-api-1..3"}
    board.ok("planner", [request])
    board.ok("verifier", [claim("chk")])
    query = {"time_range": [iso(T0), iso(T0 + timedelta(hours=1))], "targets": ["payments-api-1"], "completed": False}
    board.ok("verifier", [result("chk", 1, summary="no chain differences found", query=query)])
    return board


def test_an_incomplete_check_is_shown_with_its_coverage_in_the_reserved_part() -> None:
    board = checked_board()
    assert board.work("chk")["status"] == "incomplete"
    shown = entry(view_of(board), "chk")
    assert shown.section == "blocking" and shown.provenance.status == "incomplete"
    assert shown.excerpt.startswith('"incomplete: the query did not complete within 2026-03-02T14:00:00Z..')
    assert "targets payments-api-1: no chain differences found" in shown.excerpt


def test_an_open_question_is_shown_with_its_unsupported_answer_beside_it() -> None:
    board = checked_board()
    board.ok("planner", [question("q", about="h")])
    board.ok("planner", [answer("q")])
    view = view_of(board)
    at = next(i for i, e in enumerate(view.entries) if e.ref == "q")
    beside = view.entries[at + 1]
    assert view.entries[at].section == beside.section == "open_questions"
    assert beside.kind == "answer" and beside.note == "answer to q"
    assert beside.provenance.status.startswith("unsupported: cites no evidence")


def test_a_completed_query_without_an_observation_reads_as_no_findings_within_its_coverage() -> None:
    board = Board("check-2")
    board.open()
    board.ok("planner", [{"type": "work_request", "request_id": "w", "kind": "log_query", "target": "auth logs"}])
    board.ok("specialist", [claim("w")])
    query = {"time_range": [iso(T0), iso(T0 + timedelta(hours=1))], "targets": ["auth-1"], "completed": True}
    board.ok("specialist", [result("w", 1, summary="nothing unusual", query=query)])
    shown = entry(view_of(board), "w")
    assert shown.section == "results"
    assert shown.excerpt.startswith('"no findings within 2026-03-02T14:00:00Z..2026-03-02T15:00:00Z')


def controller_view(board: Board) -> tuple[dict[str, Any], Any]:
    state = board.coordinator.workspaces.state_at(board.workspace_id)
    return bounded_view(board.show()), followups(state, get_reducer(CURRENT), T0 + timedelta(hours=2))


def memory_of(board: Board) -> CycleMemory:
    memory = CycleMemory()
    for commit in board.ledger.read(board.workspace_id):
        memory.fold(commit)
    return memory


def test_the_controller_requests_what_an_incomplete_check_did_not_cover() -> None:
    board = checked_board()
    view, found = controller_view(board)
    decision = decide_next(view, memory_of(board), T0 + timedelta(hours=2), found=found)
    assert decision.action == "cycle"
    [rest] = [i for i in decision.items if i["type"] == "work_request"]
    assert (rest["request_id"], rest["kind"]) == ("chk-rest", "certificate_check")
    assert rest["target"].startswith("payments-api-1..3 (what chk did not cover")
    assert "certificate-check-specialist" in decision.items[-1]["scheduled"]
    board.ok("controller", list(decision.items), "controller")
    _, again = controller_view(board)
    assert again.requests == () and len(again.missing_coverage) == 1


def test_a_workspace_whose_checks_are_incomplete_when_the_cycles_run_out_ends_evidence_incomplete() -> None:
    board = checked_board()
    for number in range(1, 7):
        board.ok("controller", [{"type": "cycle", "number": number, "scheduled": ["planner-1"]}], "controller")
    board.ok("specialist", [obs("o-new")])  # new evidence: the planner is wanted, and no cycle is left
    view, found = controller_view(board)
    decision = decide_next(view, memory_of(board), T0 + timedelta(hours=2), found=found)
    [status] = decision.items
    assert status["to"] == "evidence_incomplete"
    assert "checks did not complete" in status["reason"]
    assert status["handoff"].startswith("Missing coverage: check chk (certificate_check, payments-api-1..3) is ")
    assert "incomplete: the query did not complete within" in status["handoff"]
    assert "targets payments-api-1" in status["handoff"]


def test_a_completed_rest_leaves_no_coverage_missing() -> None:
    board = checked_board()
    view, found = controller_view(board)
    decision = decide_next(view, memory_of(board), T0 + timedelta(hours=2), found=found)
    board.ok("controller", list(decision.items), "controller")
    board.ok("verifier", [claim("chk-rest")])
    query = {"time_range": [iso(T0), iso(T0 + timedelta(hours=1))], "targets": ["payments-api-2"], "completed": True}
    board.ok("verifier", [result("chk-rest", 1, summary="chains identical", query=query)])
    _, after = controller_view(board)
    assert after.missing_coverage == () and after.requests == ()


def test_a_verification_and_an_answer_on_a_check_without_coverage_are_shown_as_coverage_insufficient() -> None:
    """Rule 1 of docs/rules-of-evidence.md in the model-facing view: the hypothesis's note names the
    verification that settled nothing and what its check missed; the answer beside the open question says why
    it did not close it."""
    board = Board("coverage-1")
    board.open()
    board.ok("specialist", [obs("o1")])
    board.ok("planner", [hyp("h", supporting_evidence=["o1"]), question("q", about="h")])
    request = {"type": "work_request", "request_id": "chk", "kind": "certificate_check", "target": "the chain"}
    board.ok("planner", [request])
    board.ok("verifier", [claim("chk")])
    board.ok("verifier", [result("chk", 1, query=None)])
    board.ok("verifier", [{"type": "verification", "claim": "h", "check": "chk", "result": "refuted"}], "verifier-2")
    board.ok("specialist", [answer("q", "chk")])
    view = view_of(board)
    assert entry(view, "h").provenance.status == "supported"
    assert "coverage_insufficient: refuted by verifier-2 missing chk:query" in (entry(view, "h").note or "")
    assert entry(view, f"q@{board.head}").provenance.status == (
        "coverage_insufficient: missing chk:query, so the question stays open"
    )
