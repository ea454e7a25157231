"""``Coordinator.submit`` answers ``Accepted | Refused`` (``caseboard/domain/outcome.py``), and each reads as the
contract's JSON: the very dict the coordinator returned before it had types, key for key and in order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from caseboard.coordinator import parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.errors import Reason, Refusal, VersionConflict
from caseboard.domain.outcome import Accepted, ItemOutcome, Refused
from tests.unit.board import Board, hyp, obs, proposal, work_request


def dict_of_commit(commit: Commit) -> dict[str, Any]:
    """What ``Commit.outcome()`` returned as a dict."""
    return {"ok": True, "workspace_version": commit.version, "items": commit.outcome_items()}


def dict_of_refusal(refusal: Refusal) -> dict[str, Any]:
    """What the exception's ``to_outcome()`` returned."""
    body: dict[str, Any] = {"ok": False, "reason": refusal.reason.value, "message": refusal.message}
    if refusal.field is not None:
        body["field"] = refusal.field
    body.update(refusal.details)
    return body


def same_json(outcome: Accepted | Refused, expected: dict[str, Any]) -> bool:
    """Equal as JSON text: the same keys, values and order."""
    return json.dumps(outcome.as_json()) == json.dumps(expected)


def planned(board: Board, basis: int = 1, **extra: Any) -> Accepted | Refused:
    """Three items in one contribution: a hypothesis, a work request and a proposal (whose recorded status is
    the coordinator's decision)."""
    items = [hyp("hyp-1"), work_request("req-1"), proposal("prop-1", basis)]
    return board.submit("planner", items, **extra)


def test_an_accepted_multi_item_outcome_is_the_dict_its_commit_gave() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    outcome = planned(board, 2)
    commit = board.ledger.read(board.workspace_id, after=2)[0]
    assert isinstance(outcome, Accepted) and outcome.workspace_version == 3 == commit.version
    assert same_json(outcome, dict_of_commit(commit))
    assert same_json(commit.outcome(), dict_of_commit(commit))
    assert [(item.type, item.ref) for item in outcome.decided] == [
        ("hypothesis", "hypothesis hyp-1"),
        ("work_request", "work_request req-1"),
        ("proposal", "proposal prop-1"),
    ]
    assert outcome.decided[2].decision["recorded_status"] == "current"


def test_an_idempotent_replay_is_the_original_outcome_marked_as_a_replay() -> None:
    board = Board()
    board.open()
    first = planned(board, idempotency_key="planner-1/plan")
    again = planned(board, idempotency_key="planner-1/plan")
    commit = board.ledger.read(board.workspace_id, after=1)[0]
    assert isinstance(first, Accepted) and isinstance(again, Accepted)
    assert again.idempotent_replay and not first.idempotent_replay
    assert same_json(again, {**dict_of_commit(commit), "idempotent_replay": True})
    assert list(again) == ["ok", "workspace_version", "items", "idempotent_replay"]
    assert "idempotent_replay" not in first
    assert again.decided == first.decided == commit.outcome().decided
    assert board.head == 2


def test_a_version_conflict_is_the_dict_of_its_refusal_with_field_current_version_and_since() -> None:
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("specialist", [obs("obs-2")])
    outcome = board.submit("specialist", [obs("obs-3")], expected_version=1)
    since = [commit.summary() for commit in board.ledger.read(board.workspace_id, after=1)]
    assert isinstance(outcome, Refused) and outcome.reason is Reason.VERSION_CONFLICT
    assert same_json(outcome, dict_of_refusal(VersionConflict(1, 3, since)))
    assert list(outcome) == ["ok", "reason", "message", "field", "current_version", "since"]
    assert (outcome.field, outcome.details["current_version"]) == ("expected_version", 3)
    assert outcome["since"] == since and len(since) == 2


def test_a_refusal_without_a_field_has_no_field_key() -> None:
    refusal = Refusal(Reason.LIMIT_EXCEEDED, "too many", limit=20)
    outcome = refusal.outcome()
    assert same_json(outcome, dict_of_refusal(refusal))
    assert list(outcome) == ["ok", "reason", "message", "limit"]
    assert outcome.field is None and "field" not in outcome


def test_an_outcome_reads_as_a_mapping_of_its_json() -> None:
    board = Board()
    board.open()
    outcome = planned(board)
    assert outcome["ok"] is True and outcome.ok is True
    assert outcome["items"][2]["recorded_status"] == "current"
    assert outcome.get("idempotent_replay") is None and outcome.get("workspace_version") == 2
    assert len(outcome) == 3 and dict(outcome) == outcome.as_json()
    assert {**outcome, "author": "x"}["workspace_version"] == 2
    with pytest.raises(KeyError):
        outcome["reason"]
    refused = board.submit("specialist", [obs("obs-x")], expected_version=1)
    assert (refused["ok"], refused.ok, refused["reason"]) == (False, False, "version_conflict")


def test_an_outcome_equals_the_dict_of_its_json_both_ways_and_nothing_else() -> None:
    outcome = Accepted(4, (ItemOutcome("observation", "observation obs-1", {"selected": ["obs-1"]}),))
    expected = {
        "ok": True,
        "workspace_version": 4,
        "items": [{"type": "observation", "ref": "observation obs-1", "selected": ["obs-1"]}],
    }
    assert outcome == expected and expected == outcome
    assert outcome == Accepted(4, (ItemOutcome("observation", "observation obs-1", {"selected": ["obs-1"]}),))
    assert outcome != {**expected, "workspace_version": 5}
    assert outcome != {**expected, "idempotent_replay": True}
    assert outcome != dataclasses.replace(outcome, idempotent_replay=True)
    assert Refused(Reason.INVALID, "m") == {"ok": False, "reason": "invalid", "message": "m"}
    assert Refused(Reason.INVALID, "m") != Refused(Reason.INVALID, "m", "items")


def test_an_outcome_cannot_be_changed_and_its_json_is_the_callers_own() -> None:
    outcome = Refused(Reason.FORBIDDEN, "no", "items[0]", {"role": "planner"})
    assert outcome["field"] == "items[0]"
    body = outcome.as_json()
    body["line"] = 3
    assert "line" not in outcome and "line" not in outcome.as_json()
    with pytest.raises(TypeError):
        outcome["ok"] = True  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.message = "yes"  # type: ignore[misc]


def test_submit_returns_accepted_or_refused_instances() -> None:
    board = Board()
    coordinator = board.coordinator
    opened = board.open()
    line = board.envelope("specialist", [obs("obs-1")], idempotency_key="s/obs-1")
    accepted = coordinator.submit(parse_contribution(json.dumps(line)))
    replayed = coordinator.submit(parse_contribution(json.dumps(line)))
    refused = coordinator.submit(parse_contribution(json.dumps(board.envelope("planner", [obs("obs-2")]))))
    assert type(opened) is Accepted and type(accepted) is Accepted and type(replayed) is Accepted
    assert (accepted.idempotent_replay, replayed.idempotent_replay) == (False, True)
    assert type(refused) is Refused and refused.reason is Reason.FORBIDDEN
    assert refused.message == refused["message"] and not refused.ok
