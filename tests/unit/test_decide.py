"""decide: items of one contribution see each other; deciding never changes the state it reads."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.coordinator.decide import decide
from caseboard.domain.commit import Commit
from caseboard.domain.contribution import Contribution
from caseboard.ledger import open_ledger
from caseboard.reducers import WorkspaceState
from tests.conftest import contribution

AT = datetime(2026, 3, 2, 14, 10, tzinfo=UTC)
LIMITS = {
    "max_selected_items": 5,
    "max_investigation_cycles": 2,
    "max_open_questions": 2,
    "max_proposals": 2,
    "max_pending_work": 2,
}
OPEN = {
    "type": "open",
    "scope": {"tenant_id": "t", "environment": "e", "service": "s"},
    "goal": "g",
    "runtime_limits": LIMITS,
    "execution_mode": "read_only",
}


def specialist(*items: dict[str, Any]) -> Contribution:
    return parse_contribution(contribution(list(items), "spec-1", "specialist"))


def planner(*items: dict[str, Any]) -> Contribution:
    return parse_contribution(contribution(list(items), "planner-1", "planner"))


def observation(obs_id: str) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": "failures from 14:03",
        "source": {"system": "auth-logs", "instance": "api-2"},
        "event_time": "2026-03-02T14:03:00Z",
        "event_time_quality": "verified",
    }


def proposal(state: WorkspaceState) -> dict[str, Any]:
    return {"type": "proposal", "id": "prop-1", "summary": "roll back", "based_on_workspace_version": state.version}


def opened_state() -> WorkspaceState:
    coordinator = Coordinator(open_ledger("memory://"))
    assert coordinator.submit(parse_contribution(contribution([OPEN], "op-1", "operator")))["ok"]
    assert coordinator.submit(specialist(observation("obs-1")))["ok"]
    return coordinator.workspaces.current("ws-1")


def copied(state: WorkspaceState) -> dict[str, Any]:
    return {
        name: copy.deepcopy(dict(value) if name in state.MAPPINGS else value)
        for name in state.__slots__
        for value in [getattr(state, name)]
    }


def test_a_later_item_may_refer_to_what_an_earlier_item_of_the_same_contribution_created() -> None:
    state = opened_state()
    hypothesis = {"type": "hypothesis", "id": "hyp-1", "statement": "the certificate"}
    link = {"type": "link", "observation": "obs-1", "hypothesis": "hyp-1", "relation": "supports"}
    result = decide(state, planner(hypothesis, link), AT)
    assert isinstance(result, Commit)
    assert [item.type for item in result.items] == ["hypothesis", "link"]
    assert result.version == state.version + 1


def test_deciding_one_item_or_several_leaves_the_state_it_reads_unchanged() -> None:
    state = opened_state()
    before = copied(state)
    for contribution_ in (
        specialist(observation("obs-2")),
        specialist(observation("obs-3"), observation("obs-4")),
        planner(proposal(state)),
    ):
        assert isinstance(decide(state, contribution_, AT), Commit)
    assert copied(state) == before


def test_a_single_proposal_records_its_status_at_commit_time() -> None:
    state = opened_state()
    result = decide(state, planner(proposal(state)), AT)
    assert isinstance(result, Commit)
    assert result.decisions[0]["recorded_status"] == "current"
