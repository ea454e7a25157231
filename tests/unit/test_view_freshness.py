"""Freshness judged when evidence is used (issue 23): the view as of a time of use, the controller's re-checks,
and what a reader of a version is told about evidence expired since."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from caseboard.dispatcher.notification import Notification
from caseboard.projections.freshness import expired_since, stale_now_header, stale_now_line
from caseboard.projections.model_view import judgment_basis
from caseboard.reducers import CURRENT
from caseboard.workers.controller import Controller
from caseboard.workers.runtime import bounded_view
from tests.unit.board import Board, FakeClock, hyp, iso, link, obs, proposal
from tests.unit.freshness_board import BEFORE, EXPIRES, MONTHS_LATER, fresh_board, view_of


def snapshot_notice(board: Board) -> Notification:
    return Notification(
        id=f"{board.workspace_id}/{board.head}/snapshot",
        kind="snapshot_changed",
        audience="snapshot",
        workspace_id=board.workspace_id,
        workspace_version=board.head,
    )


def controller_items(board: Board, clock: FakeClock) -> list[dict[str, Any]]:
    controller = Controller(board.ledger, clock=clock, turn_timeout_s=60)
    return controller.contribute(snapshot_notice(board), bounded_view(board.show())) or []


def test_a_view_used_after_its_evidence_expired_marks_it_stale_and_its_proposal_as_needing_revalidation() -> None:
    board = fresh_board()
    view = view_of(board, MONTHS_LATER)
    assert view.as_of == "2026-09-01T08:00:00Z" and "as of 2026-09-01T08:00:00Z" in view.text
    assert view.stale == ["o-health"]
    assert view.stale_proposals == {"p1": ["o-health"]}
    reserved = [(e.section, e.ref) for e in view.entries if e.section == "revalidation"]
    assert reserved == [("revalidation", "p1"), ("revalidation", "o-health")]
    p1 = next(e for e in view.entries if e.ref == "p1")
    assert p1.provenance.status == "requires_revalidation"
    assert p1.note is not None and "because of stale evidence: o-health" in p1.note
    health = next(e for e in view.entries if e.ref == "o-health")
    assert "STALE: expired at 2026-05-11T09:05:00Z" in health.provenance.status


def test_a_view_as_of_a_time_before_the_expiry_marks_nothing_stale() -> None:
    board = fresh_board()
    view = view_of(board, BEFORE)
    assert view.as_of == "2026-05-11T09:04:00Z"
    assert view.stale == [] and view.stale_proposals == {}
    assert [e.section for e in view.entries if e.section in ("revalidation",)] == []
    assert next(e for e in view.entries if e.ref == "p1").provenance.status == "current"


def test_a_view_without_a_time_of_use_is_judged_at_the_versions_commit_time() -> None:
    board = fresh_board()
    view = view_of(board, None)
    assert view.as_of == "2026-05-11T09:03:00Z" and view.stale == []


def test_the_view_of_a_past_version_with_an_explicit_as_of_is_the_same_after_later_commits() -> None:
    board = fresh_board()
    first = view_of(board, MONTHS_LATER, version=4)
    board.clock.now = MONTHS_LATER
    board.ok("specialist", [obs("o-later", "checkout-db still healthy", expires_at=iso(MONTHS_LATER))])
    again = view_of(board, MONTHS_LATER, version=4)
    assert first == again
    assert view_of(board, MONTHS_LATER).built_from_version == 5


def test_the_projection_of_the_version_keeps_its_bytes_and_says_nothing_stale_at_its_commit_time() -> None:
    board = fresh_board()
    before = json.dumps(board.show(4), sort_keys=True)
    view_of(board, MONTHS_LATER)
    assert json.dumps(board.show(4), sort_keys=True) == before
    assert board.observation("o-health", 4)["stale"] is False
    assert board.proposal_status("p1", 4) == "current"


def test_a_reader_of_the_version_is_told_which_evidence_has_expired_since() -> None:
    board = fresh_board()
    document = board.show(4)
    assert expired_since(document, BEFORE) == []
    assert expired_since(document, MONTHS_LATER) == [("o-health", "2026-05-11T09:05:00Z")]
    line = stale_now_line(document, MONTHS_LATER)
    assert line is not None and line.startswith("stale_now: o-health expired at 2026-05-11T09:05:00Z")
    assert "after this version's commit time 2026-05-11T09:03:00Z" in line
    assert stale_now_header(document, MONTHS_LATER) == "o-health"
    assert stale_now_header(document, BEFORE) is None


def test_evidence_expired_at_the_versions_own_time_is_not_reported_again_as_stale_now() -> None:
    board = fresh_board()
    board.clock.now = EXPIRES + timedelta(minutes=1)
    board.ok("specialist", [obs("o-other")])
    document = board.show()
    assert board.observation("o-health")["stale"] is True
    assert expired_since(document, MONTHS_LATER) == []


def test_a_challenge_that_expires_flags_the_proposal_resting_on_the_challenged_hypothesis() -> None:
    board = fresh_board()
    board.ok(
        "specialist", [obs("o-contra", "db p99 spiked", expires_at=iso(EXPIRES)), link("o-contra", "h", "challenges")]
    )
    view = view_of(board, MONTHS_LATER)
    assert sorted(view.stale) == ["o-contra", "o-health"]
    assert sorted(view.stale_proposals["p1"]) == ["o-contra", "o-health"]


def test_a_summary_rests_on_its_sources_so_a_proposal_over_a_summary_of_expired_evidence_is_flagged() -> None:
    board = fresh_board()
    summary = obs("sum1", "checkout-db was healthy throughout", derived_from=["o-health"])
    board.ok("reporter", [summary])
    board.ok("planner", [hyp("h2", "the database is fine", supporting_evidence=["sum1"]), proposal("p2", 5, "h2")])
    view = view_of(board, MONTHS_LATER)
    assert view.stale == ["o-health"]
    assert view.stale_proposals == {"p1": ["o-health"], "p2": ["o-health"]}


def test_the_controllers_next_cycle_requests_a_recheck_of_the_stale_observations_source() -> None:
    board = fresh_board()
    items = controller_items(board, FakeClock(MONTHS_LATER))
    [recheck] = [i for i in items if i["type"] == "work_request"]
    assert recheck["request_id"] == "recheck-o-health"
    assert (recheck["kind"], recheck["target"]) == ("recheck", "checkout-db/db-primary")
    assert "p1" in str(recheck["question"]) and "2026-05-11T09:05:00Z" in str(recheck["question"])
    [cycle] = [i for i in items if i["type"] == "cycle"]
    assert cycle["scheduled"] == ["planner-1", "recheck-specialist"]
    assert items[-1] is cycle  # the cycle after the work it schedules
    board.clock.now = MONTHS_LATER
    board.ok("controller", items, "controller")
    assert board.work("recheck-o-health")["status"] == "awaiting_result"
    again = controller_items(board, FakeClock(MONTHS_LATER + timedelta(minutes=5)))
    assert not [i for i in again if i["type"] == "work_request"]


def test_the_controller_requests_no_recheck_before_the_evidence_expires() -> None:
    board = fresh_board()
    items = controller_items(board, FakeClock(BEFORE))
    assert not [i for i in items if i["type"] == "work_request"]


def test_the_controller_keeps_rechecks_within_the_pending_work_limit() -> None:
    board = fresh_board(max_pending_work=1)
    board.ok("planner", [{"type": "work_request", "request_id": "w1", "kind": "log_query", "target": "logs"}])
    items = controller_items(board, FakeClock(MONTHS_LATER))
    assert not [i for i in items if i["type"] == "work_request"]
    [cycle] = [i for i in items if i["type"] == "cycle"]
    assert "planner-1" in cycle["scheduled"]  # p1 requires revalidation now: the planner is wanted


def test_with_no_cycles_left_the_handoff_names_the_proposal_resting_on_expired_evidence() -> None:
    board = fresh_board(max_investigation_cycles=1)
    board.ok("controller", [{"type": "cycle", "number": 1, "scheduled": ["planner-1"]}], "controller")
    items = controller_items(board, FakeClock(MONTHS_LATER))
    [status] = items
    assert status["type"] == "status" and status["to"] == "budget_exhausted"
    assert "proposal p1 rests on expired evidence" in str(status["handoff"])


def test_a_judgment_built_on_a_view_records_the_views_time_of_use_in_its_output() -> None:
    board = fresh_board()
    view = view_of(board, MONTHS_LATER)
    basis = judgment_basis(view)
    assert basis == {"view_as_of": "2026-09-01T08:00:00Z", "view_version": 4, "view_role": "planner"}
    item = {
        "type": "judgment",
        "invocation_id": "inv-1",
        "component": "planner",
        "model": "m-1",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": view.built_from_version,
        "output": basis,
    }
    board.ok("planner", [item])
    [commit] = board.ledger.read(board.workspace_id, after=4)
    assert commit.items[0].model_dump()["output"]["view_as_of"] == "2026-09-01T08:00:00Z"


def test_one_controller_reads_each_version_it_decides_on_whether_later_or_earlier_than_the_last() -> None:
    board = fresh_board()
    controller = Controller(board.ledger, clock=FakeClock(MONTHS_LATER), turn_timeout_s=60)
    first = controller.contribute(snapshot_notice(board), bounded_view(board.show())) or []
    assert "recheck-o-health" in [i.get("request_id") for i in first]
    board.clock.now = MONTHS_LATER
    board.ok("controller", first, "controller")
    assert controller.followups_at(board.workspace_id, 5, CURRENT, MONTHS_LATER).requests == ()
    earlier = controller.followups_at(board.workspace_id, 4, CURRENT, MONTHS_LATER)  # loaded afresh
    assert [r["request_id"] for r in earlier.requests] == ["recheck-o-health"]
    assert controller.followups_at(board.workspace_id, 5, CURRENT, MONTHS_LATER).stale_proposals == ("p1",)
