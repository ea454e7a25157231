"""Issue 25 on SQLite and PostgreSQL: an incomplete check, an unsupported answer or a summary is not evidence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from caseboard.domain.items import Role
from caseboard.projections.model_view import build_view
from tests.unit.board import Board, answer, claim, hyp, obs, question, result, verification

TARGETS = "payments-api-1..3"
PARTIAL = {
    "time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"],
    "filters": {"check": "certificate_chain"},
    "targets": ["payments-api-1"],
    "completed": False,
}


def check_request(request_id: str) -> dict[str, Any]:
    return {"type": "work_request", "request_id": request_id, "kind": "certificate_check", "target": TARGETS}


@pytest.fixture
def board(durable_url: str) -> Iterator[Board]:
    board = Board("checks-1", url=durable_url)
    board.open()
    board.ok("specialist", [obs("o1", "TLS handshake failures on payments-api-3")])
    board.ok(
        "planner",
        [hyp("h", "certificate chain differs on instance 3", supporting_evidence=["o1"]), check_request("chk")],
    )
    yield board
    board.ledger.close()


def finish(board: Board, request_id: str, **fields: Any) -> None:
    generation = board.ok("verifier", [claim(request_id)])["items"][0]["generation"]
    board.ok("verifier", [result(request_id, generation, summary="no chain differences found", **fields)])


def test_an_unfinished_check_is_incomplete_and_cannot_refute_the_claim(board: Board) -> None:
    finish(board, "chk", query=PARTIAL)
    work = board.work("chk")
    assert work["status"] == "incomplete"
    assert work["coverage"] == {
        "time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:00:00Z"],
        "filters": {"check": "certificate_chain"},
        "targets": ["payments-api-1"],
        "completed": False,
    }
    assert "did not complete" in work["finding"] and "payments-api-1" in work["finding"]
    projection = board.show()
    assert projection["incomplete_work"][0]["request_id"] == "chk"
    refused = board.submit("verifier", [verification("h", "chk", "refuted")])
    assert refused["reason"] == "invalid"
    assert refused["field"] == "items[0].check"
    assert "incomplete" in refused["message"] and "inconclusive" in refused["message"]
    assert board.hypothesis_status("h") == "supported"
    board.ok("verifier", [verification("h", "chk", "inconclusive")])
    assert board.hypothesis_status("h") == "supported"
    assert [c.items[0].type for c in board.ledger.iter_commits("checks-1")][-1] == "verification"


def test_an_incomplete_check_cannot_be_claimed_again(board: Board) -> None:
    finish(board, "chk", query=PARTIAL)
    refused = board.submit("verifier", [claim("chk")])
    assert refused["reason"] == "invalid"
    assert "incomplete" in refused["message"]


def test_a_failed_check_cannot_confirm_a_claim(board: Board) -> None:
    generation = board.ok("verifier", [claim("chk")])["items"][0]["generation"]
    board.ok("verifier", [result("chk", generation, "failed", summary="the checker timed out")])
    refused = board.submit("verifier", [verification("h", "chk", "confirmed")])
    assert refused["reason"] == "invalid"
    assert "failed" in refused["message"]


def test_a_completed_query_with_no_observation_reads_as_no_findings_within_its_coverage(board: Board) -> None:
    finish(
        board,
        "chk",
        query={**PARTIAL, "targets": ["payments-api-1", "payments-api-2", "payments-api-3"], "completed": True},
    )
    work = board.work("chk")
    assert work["status"] == "completed"
    assert work["finding"].startswith("no findings within 2026-03-02T13:00:00Z..2026-03-02T14:00:00Z")
    assert "payments-api-3" in work["finding"]
    board.ok("verifier", [verification("h", "chk", "refuted")])
    assert board.hypothesis_status("h") == "refuted"


def test_an_answer_without_evidence_leaves_its_question_open_and_one_citing_an_observation_closes_it(
    board: Board,
) -> None:
    board.ok("planner", [question("q1", about="h")])
    board.ok("planner", [{**answer("q1"), "text": "no, all the same"}])
    entry = next(q for q in board.show()["questions"] if q["id"] == "q1")
    assert entry["status"] == "open"
    assert entry["unsupported_answers"][0]["text"] == "no, all the same"
    assert board.show()["selected_items"]["hypotheses"][0]["open_questions"] == ["which hosts were affected?"]
    board.ok("planner", [answer("q1", "o1")])
    entry = next(q for q in board.show()["questions"] if q["id"] == "q1")
    assert entry["status"] == "answered"
    assert board.show()["selected_items"]["hypotheses"][0]["open_questions"] == []


def test_an_answer_citing_an_incomplete_check_settles_nothing(board: Board) -> None:
    finish(board, "chk", query=PARTIAL)
    board.ok("planner", [question("q1", about="h")])
    board.ok("planner", [answer("q1", "chk")])
    assert next(q for q in board.show()["questions"] if q["id"] == "q1")["status"] == "open"


def test_a_hypothesis_supported_only_by_a_summary_is_not_supported(board: Board) -> None:
    board.ok("reporter", [obs("sum1", "auth failures across the fleet since 14:03", derived_from=["o1"])])
    board.ok("planner", [hyp("h-fleet", "fleet-wide auth failure", supporting_evidence=["sum1"])])
    assert board.hypothesis_status("h-fleet") == "proposed"
    details = next(h for h in board.show()["hypotheses"] if h["id"] == "h-fleet")
    assert details["supporting_sources"] == ["o1"]
    board.ok("planner", [hyp("h-one", "auth failure on one instance", supporting_evidence=["o1", "sum1"])])
    assert board.hypothesis_status("h-one") == "supported"
    assert next(h for h in board.show()["hypotheses"] if h["id"] == "h-one")["supporting_sources"] == ["o1"]


def test_the_planners_view_shows_the_incomplete_check_with_its_coverage_in_its_reserved_part(board: Board) -> None:
    finish(board, "chk", query=PARTIAL)
    state = board.coordinator.workspaces.state_at("checks-1")
    commits = list(board.ledger.iter_commits("checks-1"))
    view = build_view(state, commits, Role.PLANNER, 4000, board.coordinator.workspaces.reducer.name)
    entry = next(e for e in view.entries if e.ref == "chk")
    assert entry.section in ("blocking", "incomplete_checks", "contradictions", "open_questions")
    assert "payments-api-1" in entry.text and "did not complete" in entry.text
