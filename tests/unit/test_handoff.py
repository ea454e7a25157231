"""Handoffs: which commits hand a workspace to a person, the document they make, its signature, and what
``caseboard handoffs`` says of each (docs/pilot.md)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from caseboard.coordinator import Coordinator
from caseboard.dispatcher.route import handoff_trigger, route
from caseboard.handoff.document import build, slack_text
from caseboard.handoff.signing import sign, verify
from caseboard.handoff.status import handoffs
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from tests.conftest import ROOT, contribution, open_item, play, scenario_lines

AT = datetime(2026, 3, 2, 14, 10, tzinfo=UTC)


def escalated_ledger(*extra: tuple[str, str, list[dict[str, Any]]]) -> Any:
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    lines = [
        contribution([open_item(max_open_questions=1)], principal="op", role="operator"),
        contribution([{"type": "question", "id": "q-1", "text": "Which instances fail?"}]),
        *(contribution(items, principal=p, role=r) for p, r, items in extra),
    ]
    outcomes = play(coordinator, lines)
    assert all(o["ok"] for o in outcomes), outcomes
    return ledger


def test_a_status_that_needs_a_person_routes_one_handoff_and_other_commits_none() -> None:
    status = {"type": "status", "to": "human_review_required", "reason": "stuck", "handoff": "look at q-1"}
    ledger = escalated_ledger(("op", "operator", [status]))
    reducer = get_reducer()
    state = reducer.initial("ws-1")
    handed = {}
    for commit in ledger.read("ws-1"):
        state = reducer.evolve(state, commit)
        handed[commit.version] = [(n.kind, n.subject, n.queue) for n in route(commit, state) if n.kind == "handoff"]
    assert handed == {1: [], 2: [], 3: [("handoff", "human_review_required", "caseboard.handoff")]}


@pytest.mark.parametrize(
    ("to", "handed"),
    [("budget_exhausted", True), ("evidence_incomplete", True), ("supported_conclusion", True), ("closed", False),
     ("investigating", False)],
)  # fmt: skip
def test_each_status_that_needs_a_person_is_a_trigger(to: str, handed: bool) -> None:
    role = "operator"
    ledger = escalated_ledger(("op", role, [{"type": "status", "to": to, "reason": "r"}]))
    last = list(ledger.read("ws-1"))[-1]
    assert (handoff_trigger(last) == to) is handed


def test_incident_042_hands_nothing_over_before_version_20() -> None:
    ledger = open_ledger("memory://")
    play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
    assert [c.version for c in ledger.read("incident-042") if handoff_trigger(c)] == []


def test_the_document_names_open_questions_unsettled_checks_and_proposals_and_matches_its_schema() -> None:
    ledger = open_ledger("memory://")
    play(Coordinator(ledger, trust_timestamps=True), scenario_lines())
    projection = get_reducer().render(
        get_reducer().fold(get_reducer().initial("incident-042"), ledger.read("incident-042"))
    )
    document = build("tenant-a/incident-042", projection, AT, "human_review_required", "https://cb.example/")
    body = json.loads(document.body())
    jsonschema.validate(body, json.loads((ROOT / "schemas" / "handoff.v1.schema.json").read_text()))
    assert body["schema"] == "caseboard.handoff.v1" and body["id"] == "tenant-a/incident-042@20/handoff"
    assert [q["id"] for q in body["open_questions"]] == ["q-worsened-existing", "q-certificate-chains"]
    assert [c["request_id"] for c in body["incomplete_checks"]] == ["certificate-check-006"]
    assert {p["id"]: p["status"] for p in body["proposals"]} == {"proposal-008": "requires_revalidation"}
    assert body["links"]["ui"] == "https://cb.example/ui/workspaces/incident-042?version=20"
    assert "took no action" in body["note"]
    assert "q-worsened" not in slack_text(document)["text"] and "certificate chains" in slack_text(document)["text"]


def test_a_signature_holds_only_for_its_bytes_its_secret_and_a_recent_time() -> None:
    body = b'{"schema": "caseboard.handoff.v1"}'
    header = sign(b"secret", body, 1_700_000_000)
    assert verify(b"secret", body, header, now=1_700_000_100)
    assert not verify(b"secret", body + b" ", header, now=1_700_000_100)
    assert not verify(b"other", body, header, now=1_700_000_100)
    assert not verify(b"secret", body, header, now=1_700_000_000 + 301)  # a replay after the tolerance
    assert not verify(b"secret", body, "t=x,v1=00", now=1_700_000_000)
    assert not verify(b"secret", body, "garbage", now=1_700_000_000)


def test_each_handoff_says_whether_it_was_delivered_failed_or_is_pending() -> None:
    status = {"type": "status", "to": "budget_exhausted", "reason": "spent"}
    ledger = escalated_ledger(("op", "operator", [status]))
    commits = list(ledger.read("ws-1"))
    hid = "t/ws-1@3/handoff"
    assert handoffs("t/ws-1", commits, [], webhooks=0)[0]["state"] == "no_webhook"
    assert handoffs("t/ws-1", commits, [], webhooks=1)[0]["state"] == "pending"
    failed = {"handoff_id": hid, "webhook": "http://a", "attempt": 1, "at": 0.0, "outcome": "failed", "detail": "x"}
    delivered = {**failed, "attempt": 2, "outcome": "delivered"}
    assert handoffs("t/ws-1", commits, [failed], webhooks=1)[0]["state"] == "failed"
    assert handoffs("t/ws-1", commits, [failed, delivered], webhooks=1)[0]["state"] == "delivered"
    assert handoffs("t/ws-1", commits, [failed, delivered], webhooks=2)[0]["state"] == "failed"
