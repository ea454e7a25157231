"""The coordinator's rules (DESIGN.md §3, §4) on the in-memory ledger, with a clock the test controls."""

from __future__ import annotations

from typing import Any

import pytest

from caseboard.reducers import REDUCERS, get_reducer
from tests.unit.board import (
    T0,
    Board,
    answer,
    claim,
    cycle,
    hyp,
    iso,
    judgment,
    link,
    obs,
    open_item,
    proposal,
    question,
    reclaim,
    renew,
    reopen,
    result,
    review,
    selection,
    status,
    verification,
    work_request,
)


def opened(**limits: int) -> Board:
    board = Board()
    board.open(**limits)
    return board


def refused(
    board: Board,
    reason: str,
    role: str,
    items: list[dict[str, Any]],
    principal: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """Submit, expect the refusal ``reason``, and check that nothing was appended."""
    head = board.head
    outcome = board.submit(role, items, principal, **extra)
    assert outcome["ok"] is False, outcome
    assert outcome["reason"] == reason, outcome
    assert board.head == head
    return outcome


def claimed(board: Board, request_id: str = "req-1", principal: str = "specialist-1", lease_s: int = 60) -> int:
    """Request and claim ``request_id``; the claim's generation."""
    if request_id not in [w["request_id"] for w in board.show()["work"]]:
        board.ok("planner", [work_request(request_id)])
    return int(board.ok("specialist", [claim(request_id, lease_s)], principal)["items"][0]["generation"])


def supported_proposal(board: Board) -> None:
    """obs-1 supports hyp-1 (by planner-1); prop-1 depends on hyp-1 and is current."""
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("prop-1", board.head, "hyp-1")])
    assert board.proposal_status("prop-1") == "current"


# -- idempotency


def test_a_retry_with_the_same_key_and_content_returns_the_original_outcome_and_appends_nothing() -> None:
    board = opened()
    first = board.ok("specialist", [obs("obs-1")], idempotency_key="s-1/obs-1")
    again = board.submit("specialist", [obs("obs-1")], idempotency_key="s-1/obs-1")
    assert again["ok"] is True
    assert {k: v for k, v in again.items() if k != "idempotent_replay"} == first
    assert board.head == 2


def test_a_retry_is_replayed_even_when_its_expected_version_is_now_stale() -> None:
    board = opened()
    first = board.ok("specialist", [obs("obs-1")], expected_version=1, idempotency_key="k-1")
    board.ok("specialist", [obs("obs-2")])
    again = board.submit("specialist", [obs("obs-1")], expected_version=1, idempotency_key="k-1")
    assert again["ok"] is True, again
    assert again["workspace_version"] == first["workspace_version"] == 2
    assert again["items"] == first["items"]
    assert board.head == 3


def test_the_same_key_with_other_content_is_an_idempotency_mismatch() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1")], idempotency_key="k-1")
    outcome = refused(board, "idempotency_mismatch", "specialist", [obs("obs-2")], idempotency_key="k-1")
    assert outcome["field"] == "idempotency_key"


def test_an_idempotency_key_belongs_to_the_principal_that_used_it() -> None:
    board = opened()
    first = board.ok("specialist", [obs("obs-1")], idempotency_key="k-1")
    other = board.ok("specialist", [obs("obs-2")], "specialist-2", idempotency_key="k-1")
    assert other["workspace_version"] == first["workspace_version"] + 1
    retry = board.ok("specialist", [obs("obs-1")], idempotency_key="k-1")
    assert retry["idempotent_replay"] is True
    assert retry["workspace_version"] == first["workspace_version"]
    refused(board, "idempotency_mismatch", "specialist", [obs("obs-3")], "specialist-2", idempotency_key="k-1")


def test_a_refused_contribution_does_not_use_up_its_idempotency_key() -> None:
    board = opened()
    refused(board, "unknown_reference", "specialist", [link("obs-1", "hyp-1")], idempotency_key="k-1")
    board.ok("specialist", [obs("obs-1")], idempotency_key="k-1")


# -- expected_version


def test_a_version_conflict_carries_the_current_version_and_a_summary_of_the_commits_since() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("specialist", [obs("obs-2")], "specialist-2")
    outcome = refused(board, "version_conflict", "planner", [proposal("prop-1", 2, "hyp-1")], expected_version=2)
    assert outcome["current_version"] == 4
    assert outcome["field"] == "expected_version"
    assert [c["workspace_version"] for c in outcome["since"]] == [3, 4]
    assert outcome["since"][0]["items"] == ["hypothesis hyp-1"]
    assert outcome["since"][1]["author"] == "specialist-2"
    assert outcome["since"][1]["items"] == ["observation obs-2"]


def test_a_writer_with_the_current_expected_version_lands() -> None:
    board = opened()
    assert board.ok("specialist", [obs("obs-1")], expected_version=1)["workspace_version"] == 2


# -- claims, leases, generations


def test_the_first_claim_gets_generation_1_and_a_lease_from_the_commit_clock() -> None:
    board = opened()
    board.ok("planner", [work_request("req-1")])
    outcome = board.ok("specialist", [claim("req-1", 90)])
    assert outcome["items"][0]["generation"] == 1
    assert outcome["items"][0]["lease_expires_at"] == "2026-03-02T14:01:30Z"
    assert board.work("req-1")["status"] == "claimed"
    assert board.show()["pending_work"] == [{"request_id": "req-1", "status": "claimed"}]


def test_a_claim_under_another_principals_live_lease_is_lease_held() -> None:
    board = opened()
    claimed(board, lease_s=60)
    board.clock.advance(59)
    outcome = refused(board, "lease_held", "specialist", [claim("req-1")], "specialist-2")
    assert outcome["lease_expires_at"].startswith("2026-03-02T14:01:00")
    assert outcome["field"] == "items[0].request_id"


def test_a_lapsed_lease_lets_a_new_claim_take_over_with_the_next_generation() -> None:
    board = opened()
    claimed(board, lease_s=60)
    board.clock.advance(60)
    outcome = board.ok("verifier", [claim("req-1")], "verifier-1")
    assert outcome["items"][0]["generation"] == 2
    assert outcome["items"][0]["fenced_holder"] == "specialist-1"
    assert board.work("req-1")["holder"] == "verifier-1"


def test_a_zombie_writer_after_a_lapsed_lease_is_fenced_even_at_the_current_version() -> None:
    board = opened()
    claimed(board, lease_s=60)
    board.clock.advance(61)
    board.ok("specialist", [claim("req-1")], "specialist-2")
    current = board.head
    outcome = refused(board, "fenced", "specialist", [result("req-1", 1)], "specialist-1", expected_version=current)
    assert outcome["field"] == "items[0].generation"
    assert outcome["current_generation"] == 2
    refused(board, "fenced", "specialist", [renew("req-1", 1)], "specialist-1", expected_version=current)
    assert board.work("req-1")["status"] == "claimed"
    assert board.work("req-1")["result_summary"] is None


def test_the_lease_is_judged_by_the_commit_clock_not_by_a_trusted_timestamp_alone() -> None:
    board = Board(trust_timestamps=True)
    board.ok("operator", [open_item()], at=iso(T0))
    board.ok("planner", [work_request("req-1")], at=iso(T0))
    board.ok("specialist", [claim("req-1", 60)], "specialist-1", at=iso(T0))
    refused(board, "lease_held", "specialist", [claim("req-1")], "specialist-2", at="2026-03-02T14:00:59Z")
    assert board.ok("specialist", [claim("req-1")], "specialist-2", at="2026-03-02T14:01:01Z")


def test_a_reclaim_returns_the_request_to_awaiting_result_and_fences_the_old_holder() -> None:
    board = opened()
    generation = claimed(board)
    outcome = board.ok("controller", [reclaim("req-1")])
    assert outcome["items"][0]["fenced_generation"] == generation
    assert outcome["items"][0]["fenced_holder"] == "specialist-1"
    assert board.show()["pending_work"] == [{"request_id": "req-1", "status": "awaiting_result"}]
    current = board.head
    refused(board, "fenced", "specialist", [result("req-1", generation)], expected_version=current)
    refused(board, "fenced", "specialist", [renew("req-1", generation)], expected_version=current)
    again = board.ok("specialist", [claim("req-1")], "specialist-2")
    assert again["items"][0]["generation"] == 2
    refused(board, "fenced", "specialist", [result("req-1", 1)])


def test_a_renewal_by_someone_other_than_the_holder_is_forbidden() -> None:
    board = opened()
    generation = claimed(board)
    refused(board, "forbidden", "specialist", [renew("req-1", generation)], "specialist-2")
    refused(board, "forbidden", "specialist", [result("req-1", generation)], "specialist-2")


def test_the_holder_renews_and_then_delivers_its_result() -> None:
    board = opened()
    generation = claimed(board, lease_s=60)
    board.clock.advance(50)
    renewed = board.ok("specialist", [renew("req-1", generation, 120)])
    assert renewed["items"][0]["lease_expires_at"] == "2026-03-02T14:02:50Z"
    board.clock.advance(60)
    refused(board, "lease_held", "specialist", [claim("req-1")], "specialist-2")
    board.ok("specialist", [result("req-1", generation)])
    assert board.work("req-1")["status"] == "completed"
    assert board.show()["pending_work"] == []


def test_a_failed_result_leaves_pending_work_and_is_not_shown_as_clean() -> None:
    board = opened()
    generation = claimed(board)
    board.ok("specialist", [result("req-1", generation, "failed")])
    assert board.show()["pending_work"] == []
    assert board.work("req-1")["status"] == "failed"


# -- limits


def test_open_questions_are_bounded_by_max_open_questions() -> None:
    board = opened(max_open_questions=2)
    board.ok("planner", [question("q-1"), question("q-2")])
    refused(board, "limit_exceeded", "planner", [question("q-3")])
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [answer("q-1", "obs-1")])
    board.ok("planner", [question("q-3")])


def test_questions_within_one_contribution_count_against_the_limit() -> None:
    """The third question of one contribution is over max_open_questions: held, while the first two land
    (rule 9, ADR 0168); questions alone over the limit are refused whole."""
    board = opened(max_open_questions=2)
    outcome = board.ok("planner", [question("q-1"), question("q-2"), question("q-3")])
    assert [(entry["index"], entry["limit"]) for entry in outcome["held"]] == [(2, "max_open_questions")]
    outcome = refused(board, "limit_exceeded", "planner", [question("q-4"), question("q-5")])
    assert outcome["field"] == "items[0]"


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_held_item_is_folded_as_its_escalation_alone_in_every_reducer(name: str) -> None:
    """Every reducer folds a held question as nothing but the escalation recorded with it (ADR 0168): no open
    question is counted, the workspace is human_review_required, and the other items landed."""
    board = opened(max_open_questions=1)
    board.ok("planner", [question("q-1")])
    board.ok("specialist", [obs("obs-1"), question("q-2")])
    view = get_reducer(name).render(board.folded(name))
    assert view["counters"]["open_questions"] == 1
    assert view["status"] == "human_review_required"
    assert "obs-1" in view["selected_items"]["observations"]
    assert [(h["type"], h["id"]) for h in view.get("held", [])] == (
        [] if name != "workspace-rules-v4" else [("question", "q-2")]
    )


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_an_open_question_about_a_hypothesis_is_shown_under_it_in_every_reducer(name: str) -> None:
    board = opened()
    board.ok("planner", [hyp("hyp-1"), question("q-1", about="hyp-1"), question("q-2")])
    reducer = get_reducer(name)
    view = reducer.render(board.folded(name))
    [selected] = view["selected_items"]["hypotheses"]
    assert (selected["id"], selected["open_questions"]) == ("hyp-1", ["which hosts were affected?"])


def test_proposals_are_bounded_by_max_proposals() -> None:
    board = opened(max_proposals=1)
    board.ok("planner", [proposal("prop-1", 1)])
    refused(board, "limit_exceeded", "planner", [proposal("prop-2", 1)])
    board.ok("planner", [review("prop-1", "withdrawn")])
    board.ok("planner", [proposal("prop-2", 1)])


@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_a_withdrawn_or_revised_proposal_is_final_and_leaves_the_active_count_in_every_reducer(name: str) -> None:
    board = opened()
    board.ok("planner", [proposal("prop-1", 1), proposal("prop-2", 1)])
    board.ok("planner", [review("prop-1", "withdrawn")])
    board.ok("planner", [review("prop-2", "revised")])
    board.ok("planner", [proposal("prop-3", 1)])
    reducer = get_reducer(name)
    view = reducer.render(board.folded(name))
    assert view["counters"]["active_proposals"] == 1
    assert {p["id"]: p["status"] for p in view["proposals"]} == {
        "prop-1": "withdrawn",
        "prop-2": "revised",
        "prop-3": "current",
    }


def test_pending_work_is_bounded_by_max_pending_work() -> None:
    board = opened(max_pending_work=1)
    generation = claimed(board)
    refused(board, "limit_exceeded", "planner", [work_request("req-2")])
    board.ok("specialist", [result("req-1", generation)])
    board.ok("planner", [work_request("req-2")])


# -- cycles


def test_cycles_are_numbered_in_order_and_bounded_by_max_investigation_cycles() -> None:
    board = opened(max_investigation_cycles=2)
    refused(board, "invalid", "controller", [cycle(2)])
    assert board.ok("controller", [cycle(1)])["items"][0]["cycles_left"] == 1
    refused(board, "invalid", "controller", [cycle(1)])
    board.ok("controller", [cycle(2)])
    outcome = refused(board, "limit_exceeded", "controller", [cycle(3)])
    assert "2" in outcome["message"]
    assert board.show()["cycles_used"] == 2


def test_no_new_work_is_scheduled_once_the_budget_is_exhausted() -> None:
    board = opened()
    board.ok("controller", [status("budget_exhausted")])
    refused(board, "limit_exceeded", "planner", [work_request("req-1")])
    refused(board, "limit_exceeded", "controller", [work_request("req-1")])
    refused(board, "limit_exceeded", "controller", [cycle(1)])


def test_reopening_an_exhausted_budget_resets_the_cycles() -> None:
    board = opened(max_investigation_cycles=1)
    board.ok("controller", [cycle(1)])
    board.ok("controller", [status("budget_exhausted")])
    board.ok("operator", [reopen("operator-2", max_investigation_cycles=3)])
    projection = board.show()
    assert projection["status"] == "investigating"
    assert projection["cycles_used"] == 0
    assert projection["runtime_limits"]["max_investigation_cycles"] == 3
    board.ok("controller", [cycle(1)])
    board.ok("planner", [work_request("req-1")])


# -- selection


def test_a_new_observation_beyond_capacity_displaces_the_oldest_unreferenced_one() -> None:
    board = opened(max_selected_items=2)
    board.ok("specialist", [obs("obs-1")])
    board.ok("specialist", [obs("obs-2")])
    outcome = board.ok("specialist", [obs("obs-3")])
    decision = outcome["items"][0]
    assert decision["selected"] == ["obs-3"]
    assert decision["deselected"] == ["obs-1"]
    assert "obs-3" in decision["deselection"][0]["reason"]
    assert "unreferenced" in decision["deselection"][0]["reason"]
    assert board.show()["selected_items"]["observations"] == ["obs-2", "obs-3"]
    assert board.observation("obs-1")["selected"] is False


def test_the_policy_displaces_the_unreferenced_first_wherever_it_sits_and_says_how_each_ranked() -> None:
    board = opened(max_selected_items=3)
    board.ok("specialist", [obs("obs-1")])
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    first = board.ok("specialist", [obs("obs-3")])["items"][0]
    assert (first["selected"], first["deselected"]) == (["obs-3"], ["obs-2"])
    assert first["deselection"][0]["reason"] == "room for observation 'obs-3': ranked lowest (unreferenced, v3)"
    second = board.ok("planner", [hyp("hyp-2")])["items"][0]
    assert second["deselected"] == ["obs-3"]  # it sits after hyp-1 in the selection
    third = board.ok("planner", [hyp("hyp-3")])["items"][0]
    assert third["deselected"] == ["obs-1"]
    assert third["deselection"][0]["reason"] == "room for hypothesis 'hyp-3': ranked lowest (referenced, v2)"


def test_one_item_that_brings_several_contradictions_counts_each_against_the_room() -> None:
    board = opened(max_selected_items=3)
    board.ok("specialist", [obs("obs-a"), obs("obs-b"), obs("obs-c")])
    board.ok("controller", [selection(deselect=("obs-a", "obs-b"))])
    outcome = board.ok("planner", [hyp("hyp-1", challenging_evidence=["obs-a", "obs-b"])])
    decision = outcome["items"][0]
    assert (decision["selected"], decision["deselected"]) == (["hyp-1", "obs-a", "obs-b"], ["obs-c"])
    assert board.show()["counters"]["selected_items"] == 3


def test_a_plain_observation_never_displaces_evidence_that_something_refers_to() -> None:
    board = opened(max_selected_items=2)
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-2"])])
    outcome = board.ok("specialist", [obs("obs-3")])
    assert outcome["items"][0]["not_selected"] == [{"id": "obs-3", "reason": "max_selected_items reached"}]
    projection = board.show()
    assert projection["selected_items"]["observations"] == ["obs-2"]
    assert [h["id"] for h in projection["selected_items"]["hypotheses"]] == ["hyp-1"]


def test_derived_summaries_do_not_count_against_max_selected_items() -> None:
    board = opened(max_selected_items=1)
    board.ok("specialist", [obs("obs-1")])
    board.ok("reporter", [obs("sum-1", derived_from=["obs-1"]), obs("sum-2", derived_from=["obs-1"])])
    projection = board.show()
    assert projection["selected_items"]["derived_summaries"] == ["sum-1", "sum-2"]
    assert projection["counters"]["selected_items"] == 1
    board.ok("specialist", [obs("obs-2")])
    assert board.observation("obs-2")["selected"] is False


def test_a_challenge_displaces_supporting_evidence_and_escalates_only_when_nothing_can_go() -> None:
    board = opened(max_selected_items=2)
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("specialist", [obs("obs-2")])
    assert board.observation("obs-2")["selected"] is False
    outcome = board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert outcome["items"][0]["selected"] == ["obs-2"]
    assert outcome["items"][0]["deselected"] == ["obs-1"]
    projection = board.show()
    assert projection["status"] == "investigating"
    assert projection["selected_items"]["hypotheses"][0]["challenging_evidence"] == ["obs-2"]
    assert projection["selected_items"]["hypotheses"][0]["status"] == "challenged"
    outcome = board.ok("planner", [hyp("hyp-2")])
    assert outcome["items"][0]["escalated"]["to"] == "human_review_required"
    assert "hyp-2" in outcome["items"][0]["escalated"]["reason"]
    assert board.show()["status"] == "human_review_required"


def test_a_contradiction_with_no_room_beside_hypotheses_escalates_naming_the_evidence() -> None:
    board = opened(max_selected_items=2)
    board.ok("planner", [hyp("hyp-1"), hyp("hyp-2")])
    board.ok("specialist", [obs("obs-1")])
    assert board.observation("obs-1")["selected"] is False
    outcome = board.ok("planner", [link("obs-1", "hyp-1", "challenges")])
    escalated = outcome["items"][0]["escalated"]
    assert escalated["to"] == "human_review_required"
    assert escalated["reason"] == "contradicting evidence 'obs-1' does not fit within max_selected_items"
    assert outcome["items"][0]["not_selected"] == [{"id": "obs-1", "reason": "max_selected_items reached; escalated"}]
    assert board.show()["status"] == "human_review_required"


def test_a_challenge_that_fits_is_selected_rather_than_dropped() -> None:
    board = opened(max_selected_items=5)
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("controller", [selection(select=(), deselect=("obs-1",))])
    board.ok("specialist", [obs("obs-2")])
    board.ok("controller", [selection(deselect=("obs-2",))])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert board.observation("obs-2")["selected"] is True
    assert board.show()["status"] == "investigating"


def test_deselecting_a_contradiction_of_a_selected_hypothesis_is_refused() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"], challenging_evidence=["obs-2"])])
    outcome = refused(board, "invalid", "controller", [selection(deselect=("obs-2",))])
    assert outcome["field"] == "items[0].deselect[0]"
    board.ok("controller", [selection(deselect=("obs-1",))])
    board.ok("controller", [selection(deselect=("hyp-1", "obs-2"))])


def test_selecting_a_derived_summary_again_at_capacity_is_allowed_since_it_does_not_count() -> None:
    board = opened(max_selected_items=1)
    board.ok("specialist", [obs("obs-1")])
    board.ok("reporter", [obs("sum-1", derived_from=["obs-1"])])
    board.ok("controller", [selection(deselect=("sum-1",))])
    assert board.show()["selected_items"]["derived_summaries"] == []
    outcome = board.ok("controller", [selection(select=("sum-1",))])
    assert outcome["items"][0]["selected"] == ["sum-1"]
    projection = board.show()
    assert projection["selected_items"]["derived_summaries"] == ["sum-1"]
    assert projection["counters"]["selected_items"] == 1


def test_a_derived_summary_brought_back_as_a_contradiction_takes_no_room() -> None:
    board = opened(max_selected_items=2)
    board.ok("specialist", [obs("obs-1")])
    board.ok("reporter", [obs("sum-1", derived_from=["obs-1"])])
    board.ok("controller", [selection(deselect=("sum-1",))])
    board.ok("planner", [hyp("hyp-1")])
    assert board.show()["counters"]["selected_items"] == 2
    outcome = board.ok("planner", [link("sum-1", "hyp-1", "challenges")])
    assert outcome["items"][0] == {**outcome["items"][0], "selected": ["sum-1"]}
    assert not {"deselected", "not_selected", "escalated"} & set(outcome["items"][0])
    projection = board.show()
    assert projection["selected_items"]["observations"] == ["obs-1"]
    assert projection["selected_items"]["derived_summaries"] == ["sum-1"]


def test_a_selection_beyond_capacity_is_refused() -> None:
    board = opened(max_selected_items=1)
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    refused(board, "limit_exceeded", "controller", [selection(select=("obs-2",))])
    board.ok("controller", [selection(select=("obs-2",), deselect=("obs-1",))])
    assert board.show()["selected_items"]["observations"] == ["obs-2"]


# -- closed workspace


def closed_board() -> tuple[Board, int]:
    board = opened()
    generation = claimed(board)
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("operator", [status("closed")])
    return board, generation


def test_a_late_observation_is_recorded_as_a_late_arrival_and_not_selected() -> None:
    board, _ = closed_board()
    outcome = board.ok("specialist", [obs("obs-late")])
    assert outcome["items"][0]["late_arrival"] is True
    projection = board.show()
    assert projection["status"] == "closed"
    assert "obs-late" not in projection["selected_items"]["observations"]
    assert board.observation("obs-late")["late_arrival"] is True
    assert board.observation("obs-late")["selected"] is False
    assert [a["ref"] for a in projection["late_arrivals"]] == ["obs-late"]


def test_a_late_work_result_is_recorded_as_a_late_arrival() -> None:
    board, generation = closed_board()
    body = {k: v for k, v in obs("obs-r").items() if k != "type"}
    outcome = board.ok("specialist", [result("req-1", generation, observation=body)])
    assert outcome["items"][0]["late_arrival"] is True
    projection = board.show()
    assert [a["type"] for a in projection["late_arrivals"]] == ["work_result", "observation"]
    assert board.observation("obs-r")["selected"] is False
    assert projection["status"] == "closed"


@pytest.mark.parametrize(
    ("role", "items"),
    [
        ("planner", [hyp("hyp-2")]),
        ("planner", [link("obs-1", "hyp-1", "challenges")]),
        ("planner", [question("q-1")]),
        ("planner", [proposal("prop-1", 1)]),
        ("planner", [work_request("req-2")]),
        ("controller", [cycle(1)]),
        ("operator", [status("investigating")]),
        ("specialist", [obs("obs-late"), link("obs-late", "hyp-1")]),
    ],
)
def test_other_items_are_refused_on_a_closed_workspace(role: str, items: list[dict[str, Any]]) -> None:
    board, _ = closed_board()
    refused(board, "workspace_closed", role, items)


def test_reopen_is_explicit_by_an_operator_with_an_owner_and_a_new_budget() -> None:
    board, _ = closed_board()
    refused(board, "forbidden", "controller", [reopen()])
    board.ok("operator", [reopen("operator-7", max_investigation_cycles=2, max_proposals=3)])
    projection = board.show()
    assert projection["status"] == "investigating"
    assert projection["status_detail"]["owner"] == "operator-7"
    assert projection["runtime_limits"]["max_investigation_cycles"] == 2
    assert projection["runtime_limits"]["max_proposals"] == 3
    board.ok("planner", [hyp("hyp-2")])


def test_reopening_an_investigating_workspace_is_refused() -> None:
    board = opened()
    refused(board, "invalid", "operator", [reopen()])


# -- reviews


def test_a_retained_review_makes_a_proposal_current_again_and_keeps_its_basis() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert board.proposal_status("prop-1") == "requires_revalidation"
    board.ok("planner", [review("prop-1", "retained", board.head)])
    record = next(p for p in board.show()["proposals"] if p["id"] == "prop-1")
    assert record["status"] == "current"
    assert record["based_on_workspace_version"] == 3
    details = next(p for p in board.show()["proposal_records"] if p["id"] == "prop-1")
    assert details["last_checked_against_version"] == board.head - 1
    assert details["last_review_against_version"] == board.head - 1


def test_a_stale_proposal_is_recorded_as_requires_revalidation() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    outcome = board.ok("planner", [proposal("prop-1", 3, "hyp-1")])
    assert outcome["items"][0]["recorded_status"] == "requires_revalidation"
    fresh = board.ok("planner", [proposal("prop-2", 4, "hyp-1")])
    assert fresh["items"][0]["recorded_status"] == "current"


def test_only_an_operator_accepts_and_only_with_expected_version_and_only_while_current() -> None:
    board = opened()
    supported_proposal(board)
    refused(board, "forbidden", "planner", [review("prop-1", "accepted")], expected_version=board.head)
    outcome = refused(board, "invalid", "operator", [review("prop-1", "accepted")])
    assert outcome["field"] == "expected_version"
    assert (
        "accepting a proposal requires expected_version: acceptance is decided on a known version"
        in (outcome["message"])
    )
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    refused(board, "invalid", "operator", [review("prop-1", "accepted")], expected_version=board.head)
    board.ok("planner", [review("prop-1", "retained", board.head)])
    board.ok("operator", [review("prop-1", "accepted")], expected_version=board.head)
    assert board.proposal_status("prop-1") == "accepted"


def test_an_operator_may_not_record_a_planners_review() -> None:
    board = opened()
    supported_proposal(board)
    refused(board, "forbidden", "operator", [review("prop-1", "retained")])


def test_an_accepted_proposal_requires_revalidation_after_a_new_challenge() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("operator", [review("prop-1", "accepted")], expected_version=board.head)
    assert board.proposal_status("prop-1") == "accepted"
    board.ok("specialist", [obs("obs-2")])
    assert board.proposal_status("prop-1") == "accepted"
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert board.proposal_status("prop-1") == "requires_revalidation"


def test_a_proposal_built_on_another_requires_revalidation_when_the_one_underneath_does() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("planner", [proposal("prop-2", board.head, "prop-1")])
    assert board.proposal_status("prop-2") == "current"
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    assert board.proposal_status("prop-1") == "requires_revalidation"
    assert board.proposal_status("prop-2") == "requires_revalidation"


def test_a_withdrawn_proposal_cannot_be_reviewed_again() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("planner", [review("prop-1", "withdrawn")])
    assert board.proposal_status("prop-1") == "withdrawn"
    refused(board, "invalid", "planner", [review("prop-1", "retained")])


# -- verification


def checked(board: Board) -> None:
    board.ok("planner", [work_request("check-1")])
    board.ok("verifier", [claim("check-1")], "verifier-1")
    board.ok("verifier", [result("check-1", 1)], "verifier-1")


def test_the_author_of_a_hypothesis_may_not_verify_it() -> None:
    board = opened()
    supported_proposal(board)
    checked(board)
    outcome = refused(board, "forbidden", "verifier", [verification("hyp-1", "check-1", "confirmed")], "planner-1")
    assert outcome["field"] == "items[0].claim"


def test_a_verification_cites_a_completed_check() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("planner", [work_request("check-1")])
    refused(board, "invalid", "verifier", [verification("hyp-1", "check-1", "confirmed")])


def test_a_refutation_refutes_the_hypothesis_and_its_dependents_require_revalidation() -> None:
    board = opened()
    supported_proposal(board)
    checked(board)
    board.ok("planner", [proposal("prop-2", board.head, "obs-1")])
    board.ok("verifier", [verification("hyp-1", "check-1", "refuted")])
    assert board.hypothesis_status("hyp-1") == "refuted"
    assert board.proposal_status("prop-1") == "requires_revalidation"
    assert board.proposal_status("prop-2") == "current"


def test_a_confirmation_is_not_a_material_change() -> None:
    board = opened()
    supported_proposal(board)
    checked(board)
    board.ok("verifier", [verification("hyp-1", "check-1", "confirmed")])
    assert board.hypothesis_status("hyp-1") == "confirmed"
    assert board.proposal_status("prop-1") == "current"


def test_a_verifier_who_authored_the_claim_under_another_case_may_not_verify_it() -> None:
    board = opened()
    supported_proposal(board)
    checked(board)
    outcome = refused(board, "forbidden", "verifier", [verification("hyp-1", "check-1", "confirmed")], "Planner-1")
    assert outcome["field"] == "items[0].claim"


def ran(board: Board, request_id: str, principal: str, role: str = "specialist", **fields: Any) -> None:
    """``principal`` claims and completes ``request_id`` (requested here)."""
    board.ok("planner", [work_request(request_id)])
    board.ok(role, [claim(request_id), result(request_id, 1, **fields)], principal)


RUNNERS = [
    ("planner-1", "specialist", "run by 'planner-1', who authored 'hyp-1'"),  # the claim's author
    ("PLANNER-1", "verifier", "run by 'PLANNER-1', who authored 'hyp-1'"),  # under another case
    ("specialist-1", "specialist", "who recorded 'obs-1'"),  # the author of its support
    ("Specialist-1", "verifier", "who recorded 'obs-1'"),
]


def test_a_check_run_by_the_claims_author_or_its_sources_cannot_verify_it() -> None:
    for runner, role, why in RUNNERS:
        board = opened()
        supported_proposal(board)  # specialist-1's obs-1 supports planner-1's hyp-1
        ran(board, "check-1", runner, role)
        for outcome in ("confirmed", "refuted", "inconclusive"):
            refusal = refused(board, "forbidden", "verifier", [verification("hyp-1", "check-1", outcome)])
            assert refusal["field"] == "items[0].check" and why in refusal["message"], refusal
        assert board.hypothesis_status("hyp-1") == "supported"


def test_the_check_that_produced_a_claims_support_cannot_verify_it() -> None:
    board = opened()
    board.ok("planner", [hyp("hyp-1")])
    ran(board, "query-1", "specialist-2", observation={k: v for k, v in obs("obs-2").items() if k != "type"})
    board.ok("planner", [link("obs-2", "hyp-1")])
    refusal = refused(board, "forbidden", "verifier", [verification("hyp-1", "query-1", "confirmed")])
    assert refusal["field"] == "items[0].check" and "produced 'obs-2'" in refusal["message"]


def test_a_check_run_by_the_source_of_a_summary_under_the_claim_cannot_verify_it() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1")], "specialist-2")
    board.ok("reporter", [obs("sum-1", derived_from=["obs-1"])])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["sum-1"])])
    ran(board, "check-1", "specialist-2")
    refusal = refused(board, "forbidden", "verifier", [verification("hyp-1", "check-1", "confirmed")])
    assert "who recorded 'obs-1'" in refusal["message"]


def test_an_independent_check_settles_the_claim() -> None:
    board = opened()
    supported_proposal(board)
    ran(board, "check-1", "verifier-2", "verifier")
    board.ok("verifier", [verification("hyp-1", "check-1", "confirmed")])
    assert board.hypothesis_status("hyp-1") == "confirmed"


# -- a judgment's record


@pytest.mark.parametrize(
    ("shown", "revisions", "field", "why"),
    [
        (3, {"obs-1": 5}, "items[0].evidence_revisions.obs-1", "not at 5"),  # read after the version shown
        (3, {"obs-1": 99}, "items[0].evidence_revisions.obs-1", "not at 99"),
        (3, {"obs-2": 3}, "items[0].evidence_revisions.obs-2", "after version 3"),  # recorded after it
        (4, {"obs-2": 3}, "items[0].evidence_revisions.obs-2", "recorded at version 4"),  # read before recorded
        (4, {"obs-1": 2, "q-1": 2}, "items[0].evidence_revisions.q-1", "recorded at version 3"),
        (6, {}, "items[0].input_workspace_version", "beyond"),
    ],
)
def test_a_judgment_whose_record_disagrees_with_the_ledger_is_refused(
    shown: int, revisions: dict[str, int], field: str, why: str
) -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1")])  # version 2
    board.ok("planner", [question("q-1")])  # 3
    board.ok("specialist", [obs("obs-2")])  # 4
    item = {**judgment("j-1", shown), "evidence_revisions": revisions}
    refusal = refused(board, "invalid", "planner", [item])
    assert refusal["field"] == field and why in refusal["message"], refusal
    board.ok("planner", [{**item, "input_workspace_version": 4, "evidence_revisions": {"obs-1": 4, "q-1": 3}}])


# -- exhausted means stopped


def test_after_the_budget_is_exhausted_nothing_is_claimed_or_requested_until_a_reopen() -> None:
    board = opened()
    board.ok("planner", [work_request("req-1")])
    board.ok("controller", [status("budget_exhausted")])
    refused(board, "limit_exceeded", "specialist", [claim("req-1")])
    refused(board, "limit_exceeded", "verifier", [claim("req-1")])
    refusal = refused(board, "invalid", "operator", [status("investigating")])
    assert refusal["field"] == "items[0].to" and "reopen" in refusal["message"]
    board.ok("controller", [status("human_review_required")])  # an escalation is not a resumption
    refused(board, "invalid", "operator", [status("investigating")])
    refused(board, "limit_exceeded", "specialist", [claim("req-1")])
    refused(board, "limit_exceeded", "planner", [work_request("req-2")])
    refused(board, "limit_exceeded", "controller", [cycle(1)])
    board.ok("operator", [reopen("operator-2")])
    board.ok("specialist", [claim("req-1")])
    board.ok("planner", [work_request("req-2")])


def test_a_reopen_renews_the_budget_with_at_least_one_cycle() -> None:
    board = opened(max_investigation_cycles=0)
    board.ok("controller", [status("budget_exhausted")])
    refusal = refused(board, "invalid", "operator", [reopen("operator-2")])
    assert refusal["field"] == "items[0].runtime_limits.max_investigation_cycles"
    refused(board, "invalid", "operator", [reopen("operator-2", max_investigation_cycles=0)])
    board.ok("operator", [reopen("operator-2", max_investigation_cycles=1)])
    board.ok("controller", [cycle(1)])


def test_a_verification_decided_on_a_version_not_reached_is_refused() -> None:
    """Rule 4: the version a verification states it was decided on has been reached (as a review's)."""
    board = opened()
    supported_proposal(board)
    checked(board)
    ahead = {**verification("hyp-1", "check-1", "confirmed"), "based_on_workspace_version": board.head + 1}
    outcome = refused(board, "invalid", "verifier", [ahead])
    assert outcome["field"] == "items[0].based_on_workspace_version"
    board.ok("verifier", [{**ahead, "based_on_workspace_version": board.head}])
    assert board.hypothesis_status("hyp-1") == "confirmed"


# -- freshness, constraints


def test_an_expired_observation_is_stale_at_the_commit_time_and_its_dependents_require_revalidation() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1", expires_at="2026-03-02T14:10:00Z"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok(
        "planner",
        [proposal("prop-1", 3, "hyp-1"), proposal("prop-2", 3, "obs-1"), proposal("prop-3", 3, "obs-2")],
    )
    before = board.head
    board.clock.advance(11 * 60)
    assert board.proposal_status("prop-1") == "current"  # no commit since: the shown version's clock is 14:00
    board.ok("specialist", [obs("obs-3")])
    assert board.observation("obs-1")["stale"] is True
    assert board.observation("obs-2")["stale"] is False
    assert board.proposal_status("prop-1") == "requires_revalidation"
    assert board.proposal_status("prop-2") == "requires_revalidation"
    assert board.proposal_status("prop-3") == "current"
    assert board.observation("obs-1", before)["stale"] is False
    assert board.proposal_status("prop-1", before) == "current"


def test_a_constraints_change_makes_every_proposal_require_revalidation() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("planner", [proposal("prop-2", board.head)])
    board.ok("operator", [{"type": "constraints", "goal": "Find why logins and payments fail"}])
    assert board.proposal_status("prop-1") == "requires_revalidation"
    assert board.proposal_status("prop-2") == "requires_revalidation"
    assert board.show()["goal"] == "Find why logins and payments fail"
    board.ok("planner", [proposal("prop-3", board.head)])
    assert board.proposal_status("prop-3") == "current"


def test_unrelated_observations_and_bookkeeping_are_not_material() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("specialist", [obs("obs-9")])
    board.ok("planner", [question("q-1", about="hyp-1"), work_request("req-1")])
    board.ok("controller", [cycle(1)])
    assert board.proposal_status("prop-1") == "current"


# -- status transitions


@pytest.mark.parametrize("to", ["supported_conclusion", "closed", "investigating"])
def test_a_controller_may_not_set_an_operators_status(to: str) -> None:
    board = opened()
    outcome = refused(board, "forbidden", "controller", [status(to)])
    assert outcome["field"] == "items[0].to"


@pytest.mark.parametrize("to", ["evidence_incomplete", "budget_exhausted", "human_review_required"])
def test_a_controller_sets_the_escalation_statuses(to: str) -> None:
    board = opened()
    board.ok("controller", [status(to)])
    assert board.show()["status"] == to


@pytest.mark.parametrize("role", ["planner", "specialist", "reporter", "verifier"])
def test_other_roles_may_not_change_the_status(role: str) -> None:
    refused(opened(), "forbidden", role, [status("evidence_incomplete")])


def test_an_operator_sets_supported_conclusion_and_closes() -> None:
    board = opened()
    board.ok("operator", [status("supported_conclusion")])
    assert board.show()["status"] == "supported_conclusion"
    board.ok("operator", [status("closed")])
    assert board.show()["status"] == "closed"


def test_acceptance_judges_freshness_at_its_own_commit_time() -> None:
    board = opened()
    board.ok("specialist", [obs("obs-1", expires_at="2026-03-02T14:10:00Z")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [proposal("prop-1", 3, "hyp-1")])
    board.clock.advance(10 * 60)
    outcome = refused(board, "invalid", "operator", [review("prop-1", "accepted")], expected_version=board.head)
    assert "requires_revalidation" in outcome["message"]


def test_a_new_hypothesis_whose_contradiction_cannot_fit_escalates() -> None:
    board = opened(max_selected_items=2)
    board.ok("planner", [hyp("hyp-a"), hyp("hyp-b")])
    board.ok("specialist", [obs("obs-1")])
    assert board.observation("obs-1")["selected"] is False
    outcome = board.ok("planner", [hyp("hyp-1", challenging_evidence=["obs-1"])])
    assert outcome["items"][0]["escalated"]["to"] == "human_review_required"
    assert board.show()["status"] == "human_review_required"


def test_a_challenge_to_a_deselected_live_hypothesis_selects_it_again() -> None:
    board = opened(max_selected_items=3)
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1")])
    board.ok("operator", [selection(deselect=("hyp-1",))])
    assert board.show()["selected_items"]["hypotheses"] == []
    outcome = board.ok("planner", [link("obs-1", "hyp-1", "challenges")])
    assert outcome["items"][0]["selected"] == ["hyp-1"]
    assert "escalated" not in outcome["items"][0]
    projection = board.show()
    assert [h["id"] for h in projection["selected_items"]["hypotheses"]] == ["hyp-1"]
    assert projection["status"] == "investigating"


def test_selecting_a_hypothesis_while_deselecting_its_contradiction_is_refused() -> None:
    board = opened(max_selected_items=3)
    board.ok("specialist", [obs("obs-1"), obs("obs-2")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"], challenging_evidence=["obs-2"])])
    board.ok("operator", [selection(deselect=("hyp-1", "obs-2"))])
    outcome = refused(board, "invalid", "controller", [selection(select=("hyp-1",), deselect=("obs-2",))])
    assert outcome["field"] == "items[0].deselect[0]"


def test_selecting_a_hypothesis_keeps_its_contradiction_selected() -> None:
    board = opened(max_selected_items=4)
    board.ok("specialist", [obs("obs-1"), obs("obs-2"), obs("obs-3")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"], challenging_evidence=["obs-3"])])
    board.ok("controller", [selection(deselect=("hyp-1", "obs-2", "obs-3"))])
    outcome = board.ok("controller", [selection(select=("hyp-1",))])
    assert outcome["items"][0]["selected"] == ["hyp-1", "obs-3"]
    projection = board.show()
    assert "obs-3" in projection["selected_items"]["observations"]
    assert projection["status"] == "investigating"


def test_selecting_a_hypothesis_whose_contradiction_cannot_fit_escalates() -> None:
    board = opened(max_selected_items=3)
    board.ok("specialist", [obs("obs-1"), obs("obs-2"), obs("obs-3")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"], challenging_evidence=["obs-3"])])
    board.ok("controller", [selection(deselect=("hyp-1", "obs-3"))])
    board.ok("specialist", [obs("obs-4"), obs("obs-5")])
    outcome = board.ok("controller", [selection(select=("hyp-1",), deselect=("obs-2",))])
    assert outcome["items"][0]["selected"] == ["hyp-1"]
    assert outcome["items"][0]["escalated"]["to"] == "human_review_required"
    assert board.show()["status"] == "human_review_required"


def test_a_planners_retained_review_does_not_silently_revoke_an_acceptance() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("operator", [review("prop-1", "accepted")], expected_version=board.head)
    outcome = refused(board, "invalid", "planner", [review("prop-1", "retained", board.head)])
    assert "accepted" in outcome["message"]
    assert board.proposal_status("prop-1") == "accepted"


def test_retaining_an_accepted_proposal_that_needs_revalidation_makes_it_current_again() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("operator", [review("prop-1", "accepted")], expected_version=board.head)
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    board.ok("planner", [review("prop-1", "retained", board.head)])
    assert board.proposal_status("prop-1") == "current"
    board.ok("operator", [review("prop-1", "accepted")], expected_version=board.head)
    assert board.proposal_status("prop-1") == "accepted"


def test_a_holder_whose_lease_lapsed_may_still_renew_while_nobody_else_claimed() -> None:
    board = opened()
    generation = claimed(board, lease_s=60)
    board.clock.advance(120)
    assert board.work("req-1")["lease_lapsed"] is False  # judged as of the last commit, at 14:00:00
    board.ok("specialist", [renew("req-1", generation)])
    assert board.work("req-1")["lease_expires_at"] == "2026-03-02T14:07:00Z"


def test_a_claim_and_its_result_in_one_contribution_land_together() -> None:
    board = opened()
    board.ok("planner", [work_request("req-1")])
    outcome = board.ok("specialist", [claim("req-1"), result("req-1", 1)])
    assert [i["generation"] for i in outcome["items"]] == [1, 1]
    assert board.work("req-1")["status"] == "completed"


def test_a_result_for_a_completed_request_is_fenced() -> None:
    board = opened()
    generation = claimed(board)
    board.ok("specialist", [result("req-1", generation)])
    refused(board, "fenced", "specialist", [result("req-1", generation, "failed")])
    assert board.work("req-1")["status"] == "completed"


def test_a_selection_that_shrinks_an_over_full_selection_is_accepted_after_the_limit_is_lowered() -> None:
    board = opened(max_selected_items=4)
    board.ok("specialist", [obs("obs-1"), obs("obs-2"), obs("obs-3"), obs("obs-4")])
    board.ok("operator", [{"type": "constraints", "runtime_limits": {"max_selected_items": 2}}])
    board.ok("controller", [selection(deselect=("obs-1",))])
    assert board.show()["counters"]["selected_items"] == 3
    refused(board, "limit_exceeded", "controller", [selection(select=("obs-1",))])
    board.ok("controller", [selection(deselect=("obs-2", "obs-3"))])
    assert board.show()["selected_items"]["observations"] == ["obs-4"]


def test_a_result_whose_query_did_not_complete_is_not_shown_as_clean() -> None:
    board = opened()
    generation = claimed(board)
    query = {"time_range": ["2026-03-02T13:30:00Z", "2026-03-02T14:00:00Z"], "completed": False}
    board.ok("specialist", [result("req-1", generation, query=query)])
    work = board.work("req-1")
    assert work["status"] == "incomplete"
    assert work["query_completed"] is False
    assert work["coverage"]["completed"] is False
    assert work["finding"].startswith("incomplete: the query did not complete within 2026-03-02T13:30:00Z")
    incomplete = board.show()["incomplete_work"]
    assert [entry["request_id"] for entry in incomplete] == ["req-1"]


def test_a_snapshot_that_cannot_be_written_does_not_fail_the_commit_it_follows() -> None:
    from caseboard.coordinator import Coordinator, parse_contribution
    from caseboard.domain.errors import LedgerUnavailable
    from caseboard.ledger import open_ledger
    from caseboard.projections import Workspaces

    ledger = open_ledger("memory://")

    def broken(*args: Any) -> None:
        raise LedgerUnavailable("the snapshot store is full")

    ledger.save_snapshot = broken  # type: ignore[method-assign]
    coordinator = Coordinator(ledger, Workspaces(ledger, snapshot_min=2))
    board_open = {
        "type": "open",
        "goal": "g",
        "execution_mode": "read_only",
        "scope": {"tenant_id": "t", "environment": "e", "service": "s"},
        "runtime_limits": {
            "max_selected_items": 5,
            "max_investigation_cycles": 2,
            "max_open_questions": 2,
            "max_proposals": 2,
            "max_pending_work": 2,
        },
    }
    author = {"principal": "op", "role": "operator"}
    assert coordinator.submit(parse_contribution({"workspace_id": "w", "author": author, "items": [board_open]}))["ok"]
    cycle = {
        "workspace_id": "w",
        "author": {"principal": "c", "role": "controller"},
        "items": [{"type": "cycle", "number": 1}],
    }
    outcome = coordinator.submit(parse_contribution(cycle))
    assert outcome["ok"] and outcome["workspace_version"] == 2
    assert coordinator.workspaces.current("w").version == 2 == ledger.head("w")


def test_a_review_names_its_affected_assumptions_as_short_text_or_ids() -> None:
    board = opened()
    supported_proposal(board)
    board.ok("specialist", [obs("obs-2")])
    board.ok("planner", [link("obs-2", "hyp-1", "challenges")])
    item = review("prop-1", "retained", board.head)
    item["affected_assumptions"] = ["the connection pool was warm before 14:00", "hyp-1"]
    board.ok("planner", [item])
    assert board.proposal_status("prop-1") == "current"
    item = review("prop-1", "revised", board.head)
    item["affected_assumptions"] = ["x" * 513]
    outcome = refused(board, "invalid", "planner", [item])
    assert outcome["field"].startswith("items[0].affected_assumptions")


def test_a_constraints_change_may_not_move_a_workspace_to_another_tenant() -> None:
    board = opened()
    moved = {"tenant_id": "tenant-b", "environment": "production", "service": "payments-api"}
    outcome = refused(board, "invalid", "operator", [{"type": "constraints", "scope": moved}])
    assert outcome["field"] == "items[0].scope.tenant_id"
    kept = {**moved, "tenant_id": "tenant-a", "service": "payments-gateway"}
    board.ok("operator", [{"type": "constraints", "scope": kept}])
    assert board.show()["scope"]["service"] == "payments-gateway"
