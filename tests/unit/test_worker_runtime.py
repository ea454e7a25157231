"""The worker runtime: re-read and re-decide on version_conflict, a typed terminal past the budget."""

from __future__ import annotations

import json
from typing import Any

import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.ledger import open_ledger
from caseboard.workers.runtime import RetryBudgetSpent, View, act

TURN = Notification(
    id="ws-r@2/turn/planner-1",
    kind="turn",
    audience="planner",
    workspace_id="ws-r",
    workspace_version=2,
    subject="planner-1",
    principal="planner-1",
)


def opened() -> Coordinator:
    coordinator = Coordinator(open_ledger("memory://"))
    line = json.dumps(
        {"workspace_id": "ws-r", "author": {"principal": "op", "role": "operator"}, "items": [open_item(3)]}
    )
    assert coordinator.submit(parse_contribution(line))["ok"]
    return coordinator


class Asker:
    """Asks one question per call, named after the version it saw; a rival commits first at first."""

    principal = "planner-1"
    role = Role.PLANNER

    def __init__(self, coordinator: Coordinator, rivals: int) -> None:
        self.coordinator = coordinator
        self.rivals = rivals
        self.seen: list[int] = []

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if self.seen and self.seen[-1] < view["workspace_version"] and len(self.seen) > self.rivals:
            return None  # its question landed: done
        self.seen.append(view["workspace_version"])
        if len(self.seen) <= self.rivals:
            rival = json.dumps(
                {
                    "workspace_id": "ws-r",
                    "author": {"principal": "planner-2", "role": "planner"},
                    "items": [{"type": "question", "id": f"q-rival-{len(self.seen)}", "text": "?"}],
                }
            )
            assert self.coordinator.submit(parse_contribution(rival))["ok"]
        return [{"type": "question", "id": f"q-at-{view['workspace_version']}", "text": "What changed?"}]


def test_a_conflict_is_re_read_and_re_decided_on_the_new_version() -> None:
    coordinator = opened()
    asker = Asker(coordinator, rivals=2)
    outcomes = act(coordinator, asker, TURN, max_attempts=5)
    assert asker.seen[:3] == [1, 2, 3]
    assert [o["workspace_version"] for o in outcomes] == [4]
    questions = [q["id"] for q in coordinator.workspaces.show("ws-r")["questions"]]
    assert questions == ["q-rival-1", "q-rival-2", "q-at-3"]


def test_a_spent_retry_budget_is_a_typed_terminal_error() -> None:
    coordinator = opened()
    with pytest.raises(RetryBudgetSpent) as raised:
        act(coordinator, Asker(coordinator, rivals=10), TURN, max_attempts=3)
    assert raised.value.attempts == 3
    assert raised.value.current_version == 4


def test_a_redelivered_notification_replays_instead_of_committing_again() -> None:
    coordinator = opened()

    class Once:
        principal = "planner-1"
        role = Role.PLANNER

        def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
            return [{"type": "question", "id": "q-once", "text": "Once?"}] if view["workspace_version"] == 1 else None

    first = act(coordinator, Once(), TURN)
    # Redelivered after a crash: the participant decides on the view it had (as if re-read before the commit).
    again = act(coordinator, Once(), TURN, read=lambda ws: {**coordinator.workspaces.show(ws), "workspace_version": 1})
    assert first[0]["workspace_version"] == 2
    assert again[0].get("idempotent_replay") is True
    assert coordinator.ledger.head("ws-r") == 2


def test_a_revalidation_notice_is_a_no_op_once_the_proposal_was_reviewed_since() -> None:
    coordinator = opened()
    for principal, role, items in (
        ("planner-1", "planner", [{"type": "hypothesis", "id": "hyp-1", "statement": "h"}]),
        (
            "planner-1",
            "planner",
            [
                {
                    "type": "proposal",
                    "id": "p-1",
                    "summary": "s",
                    "based_on_workspace_version": 2,
                    "depends_on": ["hyp-1"],
                }
            ],
        ),
        (
            "planner-1",
            "planner",
            [
                {
                    "type": "review",
                    "proposal": "p-1",
                    "decision": "retained",
                    "what_changed": "nothing material",
                    "based_on_workspace_version": 3,
                }
            ],
        ),
    ):
        line = json.dumps({"workspace_id": "ws-r", "author": {"principal": principal, "role": role}, "items": items})
        assert coordinator.submit(parse_contribution(line))["ok"]
    notice = Notification(
        id="ws-r@3/proposal_requires_revalidation/p-1",
        kind="proposal_requires_revalidation",
        audience="planner",
        workspace_id="ws-r",
        workspace_version=3,
        subject="p-1",
        based_on_version=2,
    )
    asker = Asker(coordinator, rivals=0)
    assert act(coordinator, asker, notice) == []
    assert asker.seen == []
    fresh = notice.model_copy(update={"based_on_version": 4})
    assert act(coordinator, asker, fresh)[0]["ok"]
