"""The MCP refusal table: one retry answer and next step per reason token, and the shape a refusal takes."""

from __future__ import annotations

from caseboard.domain.errors import Reason, VersionConflict
from caseboard.mcp_server.refusals import NEXT_STEPS, REFUSAL_KEYS, structured


def test_every_reason_token_has_one_retry_answer_and_a_next_step() -> None:
    assert set(NEXT_STEPS) == {r.value for r in Reason} | {"unauthenticated", "unavailable"}
    assert all(step for _, step in NEXT_STEPS.values())
    retryable = {reason for reason, (again, _) in NEXT_STEPS.items() if again}
    assert retryable == {"version_conflict", "fenced", "lease_held", "unavailable"}


def test_a_version_conflict_becomes_a_retryable_refusal_with_its_current_version_and_what_to_do() -> None:
    refusal = structured(VersionConflict(18, 19, []).outcome().as_json())
    assert set(REFUSAL_KEYS) <= set(refusal)
    assert (refusal["ok"], refusal["current_version"], refusal["retryable"]) == (False, 19, True)
    assert "changes_since" in refusal["next_step"] and refusal["field"] == "expected_version"


def test_a_refusal_without_a_field_still_names_the_key_as_null() -> None:
    refusal = structured({"ok": False, "reason": "forbidden", "message": "no"})
    assert refusal["field"] is None and refusal["retryable"] is False
