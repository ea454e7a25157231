"""Bad input of every kind gets its reason token, a message and a ``field`` naming what is wrong, and the
ledger is untouched (the head does not move and nothing is appended)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from caseboard.coordinator import parse_contribution
from caseboard.domain.errors import Refusal
from tests.unit.board import (
    Board,
    claim,
    hyp,
    link,
    obs,
    open_item,
    proposal,
    review,
    selection,
    verification,
    work_request,
)


def envelope(items: list[dict[str, Any]], role: str = "specialist", **extra: Any) -> dict[str, Any]:
    return {
        "workspace_id": "ws-1",
        "author": {"principal": f"{role}-1", "role": role},
        "items": items,
        **extra,
    }


def text(items: list[dict[str, Any]], role: str = "specialist", **extra: Any) -> str:
    return json.dumps(envelope(items, role, **extra))


def without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in item.items() if k != key}


def query(**fields: Any) -> dict[str, Any]:
    return {"time_range": ["2026-03-02T13:30:00Z", "2026-03-02T14:30:00Z"], "completed": True, **fields}


@dataclass(frozen=True)
class Case:
    raw: str | Callable[[], str]
    reason: str
    field: str
    mention: str

    def text(self) -> str:
        return self.raw if isinstance(self.raw, str) else self.raw()


LONG = "x" * 4097

PARSE_CASES: dict[str, Case] = {
    "malformed JSON": Case('{"workspace_id": "ws-1", "items": [', "invalid", "$", "not JSON"),
    "a JSON array instead of an object": Case(json.dumps([envelope([obs("obs-9")])]), "invalid", "$", "object"),
    "a JSON string instead of an object": Case('"observation"', "invalid", "$", "object"),
    "an unknown item type": Case(text([{"type": "rumour", "id": "r-1"}]), "invalid", "items[0].type", "rumour"),
    "an item without a type": Case(text([without(obs("obs-9"), "type")]), "invalid", "items[0].type", "type"),
    "a missing statement": Case(
        text([without(obs("obs-9"), "statement")]), "invalid", "items[0].statement", "statement"
    ),
    "a missing source inside an observation": Case(
        text([without(obs("obs-9"), "source")]), "invalid", "items[0].source", "source"
    ),
    "a missing author": Case(json.dumps(without(envelope([obs("obs-9")]), "author")), "invalid", "author", "author"),
    "a missing workspace_id": Case(
        json.dumps(without(envelope([obs("obs-9")]), "workspace_id")),
        "invalid",
        "workspace_id",
        "workspace_id",
    ),
    "an extra top-level field": Case(text([obs("obs-9")], priority="high"), "invalid", "priority", "priority"),
    "an extra field in an item": Case(
        text([{**obs("obs-9"), "severity": 3}]), "invalid", "items[0].severity", "severity"
    ),
    "an extra field in a nested source": Case(
        text([{**obs("obs-9"), "source": {"system": "logs", "instance": "auth-1", "region": "eu"}}]),
        "invalid",
        "items[0].source.region",
        "region",
    ),
    "an extra field in the author": Case(
        json.dumps({**envelope([obs("obs-9")]), "author": {"principal": "s-1", "role": "specialist", "admin": True}}),
        "invalid",
        "author.admin",
        "admin",
    ),
    "a word for an int": Case(
        text([claim("req-1") | {"lease_s": "five minutes"}]), "invalid", "items[0].lease_s", "lease_s"
    ),
    "a numeric string for an int": Case(
        text([claim("req-1") | {"lease_s": "300"}]), "invalid", "items[0].lease_s", "lease_s"
    ),
    "a boolean for an int": Case(text([claim("req-1") | {"lease_s": True}]), "invalid", "items[0].lease_s", "lease_s"),
    "a fraction for an int": Case(text([claim("req-1") | {"lease_s": 2.5}]), "invalid", "items[0].lease_s", "lease_s"),
    "a string for expected_version": Case(
        text([obs("obs-9")], expected_version="2"), "invalid", "expected_version", "expected_version"
    ),
    "a number for a statement": Case(
        text([{**obs("obs-9"), "statement": 42}]), "invalid", "items[0].statement", "statement"
    ),
    "a string where a list is expected": Case(
        text([hyp("hyp-9", supporting_evidence="obs-1")], role="planner"),
        "invalid",
        "items[0].supporting_evidence",
        "supporting_evidence",
    ),
    "a string for a boolean": Case(
        text(
            [
                {
                    "type": "work_result",
                    "request_id": "req-1",
                    "generation": 1,
                    "status": "completed",
                    "summary": "ran",
                    "query": query(completed="no"),
                }
            ]
        ),
        "invalid",
        "items[0].query.completed",
        "completed",
    ),
    "a value outside a closed vocabulary": Case(
        text([obs("obs-9", event_time_quality="probably")]),
        "invalid",
        "items[0].event_time_quality",
        "event_time_quality",
    ),
    "an unknown role": Case(
        json.dumps({**envelope([obs("obs-9")]), "author": {"principal": "s-1", "role": "admin"}}),
        "invalid",
        "author.role",
        "role",
    ),
    "an oversized statement": Case(text([obs("obs-9", statement=LONG)]), "invalid", "items[0].statement", "4096"),
    "an oversized hypothesis statement": Case(
        text([hyp("hyp-9", statement=LONG)], role="planner"), "invalid", "items[0].statement", "4096"
    ),
    "an empty statement": Case(text([obs("obs-9", statement="")]), "invalid", "items[0].statement", "statement"),
    "an event_time of 'yesterday'": Case(
        text([obs("obs-9", event_time="yesterday")]), "invalid", "items[0].event_time", "event_time"
    ),
    "a naive event_time without a zone": Case(
        text([obs("obs-9", event_time="2026-03-02T14:00:00")]), "invalid", "items[0].event_time", "event_time"
    ),
    "an epoch number for event_time": Case(
        text([obs("obs-9", event_time=1772460000)]), "invalid", "items[0].event_time", "event_time"
    ),
    "a naive expires_at": Case(
        text([obs("obs-9", expires_at="2026-03-02 15:00")]), "invalid", "items[0].expires_at", "expires_at"
    ),
    "a naive envelope time": Case(text([obs("obs-9")], at="2026-03-02T14:00:00"), "invalid", "at", "at"),
    "a query range that ends before it starts": Case(
        text(
            [
                {
                    "type": "work_result",
                    "request_id": "req-1",
                    "generation": 1,
                    "status": "completed",
                    "summary": "ran",
                    "query": query(time_range=["2026-03-02T15:00:00Z", "2026-03-02T14:00:00Z"]),
                }
            ]
        ),
        "invalid",
        "items[0].query",
        "time_range",
    ),
    "an open that is not read-only": Case(
        json.dumps(
            {
                **envelope([{**open_item(), "execution_mode": "read_write"}], role="operator"),
                "workspace_id": "ws-2",
            }
        ),
        "invalid",
        "items[0].execution_mode",
        "execution_mode",
    ),
    "a constraints item that changes the execution mode": Case(
        text([{"type": "constraints", "execution_mode": "read_write"}], role="operator"),
        "invalid",
        "items[0].execution_mode",
        "execution_mode",
    ),
    "an empty items list": Case(text([]), "invalid", "items", "items"),
    "too many items": Case(text([obs(f"obs-{i}") for i in range(101)]), "invalid", "items", "items"),
    "an id with a space": Case(text([obs("obs 9")]), "invalid", "items[0].id", "id"),
    "an id starting with a dash": Case(text([obs("-obs-9")]), "invalid", "items[0].id", "id"),
    "an id longer than 128 characters": Case(text([obs("o" * 129)]), "invalid", "items[0].id", "id"),
    "a workspace id with a slash first": Case(
        json.dumps({**envelope([obs("obs-9")]), "workspace_id": "/etc"}),
        "invalid",
        "workspace_id",
        "workspace_id",
    ),
    "a second item that is bad": Case(
        text([obs("obs-9"), without(obs("obs-10"), "event_time")]),
        "invalid",
        "items[1].event_time",
        "event_time",
    ),
    "expected_version zero": Case(
        text([obs("obs-9")], expected_version=0), "invalid", "expected_version", "expected_version"
    ),
}

RULE_CASES: dict[str, Case] = {
    "a link to a missing hypothesis": Case(
        text([link("obs-1", "hyp-missing")]), "unknown_reference", "items[0].hypothesis[0]", "hyp-missing"
    ),
    "a link from a missing observation": Case(
        text([link("obs-missing", "hyp-1")]), "unknown_reference", "items[0].observation[0]", "obs-missing"
    ),
    "a proposal that depends on a missing id": Case(
        text([proposal("prop-9", 3, "hyp-1", "hyp-nope")], role="planner"),
        "unknown_reference",
        "items[0].depends_on[1]",
        "hyp-nope",
    ),
    "a hypothesis citing missing evidence": Case(
        text([hyp("hyp-9", challenging_evidence=["obs-gone"])], role="planner"),
        "unknown_reference",
        "items[0].challenging_evidence[0]",
        "obs-gone",
    ),
    "a claim of a missing request": Case(
        text([claim("req-nope")]), "unknown_reference", "items[0].request_id[0]", "req-nope"
    ),
    "a reference of the wrong kind": Case(
        text([link("hyp-1", "hyp-1")]), "invalid", "items[0].observation[0]", "hypothesis"
    ),
    "a reused observation id": Case(text([obs("obs-1")]), "duplicate_id", "items[0].id", "obs-1"),
    "an observation id reused as a hypothesis id": Case(
        text([hyp("obs-1")], role="planner"), "duplicate_id", "items[0].id", "obs-1"
    ),
    "one id twice within one contribution": Case(
        text([obs("obs-9"), obs("obs-9")]), "duplicate_id", "items[1].id", "obs-9"
    ),
    "a reused request id": Case(
        text([work_request("req-1")], role="planner"), "duplicate_id", "items[0].request_id", "req-1"
    ),
    "a hypothesis from a specialist": Case(text([hyp("hyp-9")]), "forbidden", "items[0]", "specialist"),
    "an observation from a planner": Case(text([obs("obs-9")], role="planner"), "forbidden", "items[0]", "planner"),
    "a proposal from a verifier": Case(
        text([proposal("prop-9", 3, "hyp-1")], role="verifier"), "forbidden", "items[0]", "verifier"
    ),
    "a cycle from a planner": Case(
        text([{"type": "cycle", "number": 1}], role="planner"), "forbidden", "items[0]", "planner"
    ),
    "a selection from a specialist": Case(text([selection(select=("obs-1",))]), "forbidden", "items[0]", "specialist"),
    "a verification from a planner": Case(
        text([verification("hyp-1", "req-1", "confirmed")], role="planner"),
        "forbidden",
        "items[0]",
        "planner",
    ),
    "a reporter observation that is not a summary": Case(
        text([obs("obs-9")], role="reporter"), "forbidden", "items[0].derived_from", "derived_from"
    ),
    "an acceptance from a planner": Case(
        text([review("prop-1", "accepted")], role="planner", expected_version=4),
        "forbidden",
        "items[0].decision",
        "operator",
    ),
    "a claim from a controller": Case(text([claim("req-1")], role="controller"), "forbidden", "items[0]", "controller"),
    "a constraints change from a controller": Case(
        text([{"type": "constraints", "goal": "other"}], role="controller"),
        "forbidden",
        "items[0]",
        "controller",
    ),
    "a status change from a specialist": Case(
        text([{"type": "status", "to": "closed", "reason": "done"}]), "forbidden", "items[0]", "specialist"
    ),
    "a workspace that was never opened": Case(
        json.dumps({**envelope([obs("obs-9")]), "workspace_id": "ws-unknown"}),
        "unknown_workspace",
        "workspace_id",
        "ws-unknown",
    ),
    "opening an open workspace again": Case(
        text([open_item()], role="operator"), "workspace_exists", "items[0]", "ws-1"
    ),
    "an open from a planner": Case(
        json.dumps({**envelope([open_item()], role="planner"), "workspace_id": "ws-2"}),
        "forbidden",
        "items[0]",
        "planner",
    ),
    "an open carrying other items": Case(
        json.dumps({**envelope([open_item(), obs("obs-1")], role="operator"), "workspace_id": "ws-2"}),
        "invalid",
        "items",
        "open",
    ),
    "an expected_version ahead of the workspace": Case(
        text([obs("obs-9")], expected_version=99), "expected_version_ahead", "expected_version", "99"
    ),
    "a proposal based on a future version": Case(
        text([proposal("prop-9", 50, "hyp-1")], role="planner"),
        "invalid",
        "items[0].based_on_workspace_version",
        "50",
    ),
}


def seeded() -> Board:
    """v1 open, v2 obs-1, v3 hyp-1 supported by obs-1, v4 req-1 and prop-1."""
    board = Board()
    board.open()
    board.ok("specialist", [obs("obs-1")])
    board.ok("planner", [hyp("hyp-1", supporting_evidence=["obs-1"])])
    board.ok("planner", [work_request("req-1"), proposal("prop-1", 3, "hyp-1")])
    return board


def check(board: Board, case: Case) -> None:
    before = board.head
    commits_before = board.ledger.read(board.workspace_id)
    outcome = board.raw(case.text())
    assert outcome["ok"] is False, outcome
    assert outcome["reason"] == case.reason, outcome
    assert outcome["field"] == case.field, outcome
    assert case.mention in outcome["message"], outcome
    assert board.head == before
    assert board.ledger.read(board.workspace_id) == commits_before
    assert board.ledger.head("ws-2") == 0
    assert board.ledger.head("ws-unknown") == 0


@pytest.mark.parametrize("case", PARSE_CASES.values(), ids=PARSE_CASES.keys())
def test_bad_input_is_refused_as_invalid_naming_the_field(case: Case) -> None:
    check(seeded(), case)


@pytest.mark.parametrize("case", RULE_CASES.values(), ids=RULE_CASES.keys())
def test_a_rule_violation_gets_its_reason_token_and_names_the_field(case: Case) -> None:
    check(seeded(), case)


def test_the_refusal_message_of_a_parse_error_starts_with_the_field_path() -> None:
    outcome = seeded().raw(text([{**obs("obs-9"), "source": {"system": "logs", "instance": "i", "zone": "z"}}]))
    assert outcome["message"].startswith("items[0].source.zone: ")


def test_an_expected_version_ahead_carries_the_current_version() -> None:
    board = seeded()
    outcome = board.raw(text([obs("obs-9")], expected_version=7))
    assert outcome["reason"] == "expected_version_ahead"
    assert outcome["current_version"] == 4


def test_a_refusal_uses_no_version_so_the_next_commit_takes_the_next_one() -> None:
    board = seeded()
    for case in (*PARSE_CASES.values(), *RULE_CASES.values()):
        assert board.raw(case.text())["ok"] is False
    assert board.head == 4
    assert board.ok("specialist", [obs("obs-9")])["workspace_version"] == 5


def test_a_contribution_with_one_bad_item_records_none_of_its_items() -> None:
    board = seeded()
    outcome = board.submit("specialist", [obs("obs-9"), link("obs-9", "hyp-missing")])
    assert outcome["reason"] == "unknown_reference"
    assert outcome["field"] == "items[1].hypothesis[0]"
    assert board.head == 4
    assert "obs-9" not in [o["id"] for o in board.show()["observations"]]
    assert board.ok("specialist", [obs("obs-9")])["workspace_version"] == 5


def test_a_single_bad_item_is_reported_as_one_problem() -> None:
    outcome = seeded().raw(text([{"type": "rumour"}]))
    assert "more problem" not in outcome["message"], outcome


def test_several_problems_are_each_named_in_the_message() -> None:
    outcome = seeded().raw(text([without(without(obs("obs-9"), "statement"), "source")]))
    assert outcome["reason"] == "invalid"
    assert "items[0].statement: required field is missing" in outcome["message"], outcome
    assert "items[0].source: required field is missing" in outcome["message"], outcome
    assert "more problem" not in outcome["message"], outcome


def test_a_decoded_object_is_held_to_the_same_strict_contract_as_its_text() -> None:
    data = envelope([claim("req-1") | {"lease_s": "300"}])
    with pytest.raises(Refusal) as refusal:
        parse_contribution(data)
    assert (refusal.value.reason.value, refusal.value.field) == ("invalid", "items[0].lease_s")
    parsed = parse_contribution(envelope([obs("obs-9")]))
    assert parsed.items[0].type == "observation"
    assert parsed == parse_contribution(text([obs("obs-9")]))


def test_reference_lists_and_judgment_outputs_are_bounded() -> None:
    from caseboard.coordinator import parse_contribution
    from caseboard.domain.errors import Refusal

    too_many = [f"obs-{i}" for i in range(257)]
    hypothesis = {"type": "hypothesis", "id": "h", "statement": "s", "supporting_evidence": too_many}
    with pytest.raises(Refusal) as refused:
        parse_contribution(
            {"workspace_id": "w", "author": {"principal": "p", "role": "planner"}, "items": [hypothesis]}
        )
    assert (refused.value.reason.value, refused.value.field) == ("invalid", "items[0].supporting_evidence")
    assert str(refused.value) == "items[0].supporting_evidence: at most 256 entries, got 257"
    revisions = {f"obs-{i}": 1 for i in range(257)}  # a mapping: pydantic does not count past the limit
    judgment = {"type": "judgment", "invocation_id": "i", "component": "c", "model": "m", "prompt_sha256": "0" * 64}
    judgment |= {"input_workspace_version": 1, "evidence_revisions": revisions, "output": {}}
    with pytest.raises(Refusal) as refused:
        parse_contribution({"workspace_id": "w", "author": {"principal": "p", "role": "planner"}, "items": [judgment]})
    assert str(refused.value) == "items[0].evidence_revisions: at most 256 entries"  # before: "..., got None"
    judgment = {
        "type": "judgment",
        "invocation_id": "i",
        "component": "c",
        "model": "m",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": 1,
        "output": {"text": "x" * 70000},
    }
    with pytest.raises(Refusal) as refused:
        parse_contribution({"workspace_id": "w", "author": {"principal": "p", "role": "planner"}, "items": [judgment]})
    assert refused.value.field == "items[0].output"
    assert "65536" in refused.value.message


def test_text_that_is_not_json_is_refused_with_the_parsers_own_words() -> None:
    with pytest.raises(Refusal) as refused:
        parse_contribution("{nope")
    assert (refused.value.field, str(refused.value)) == ("$", "$: not JSON: key must be a string at line 1 column 2")
