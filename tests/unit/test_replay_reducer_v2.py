"""workspace-rules-v2 beside v1: the three documented differences, and agreement everywhere else."""

from __future__ import annotations

from pathlib import Path

from caseboard.reducers import CURRENT, REDUCERS
from caseboard.replay.rebuild import replay_file

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "corpus"
V1, V2 = "workspace-rules-v1", "workspace-rules-v2"


def statuses(name: str, version: int, reducer: str) -> dict[str, str]:
    return {p["id"]: p["status"] for p in replay_file(CORPUS / f"{name}.jsonl", version, reducer)["proposals"]}


def test_every_version_is_registered_and_v4_is_current() -> None:
    assert {V1, V2, "workspace-rules-v3", "workspace-rules-v4"} <= REDUCERS.keys()
    assert CURRENT == "workspace-rules-v4"


def test_a_challenge_from_an_unverified_event_time_does_not_flag_the_accepted_plan_in_v2() -> None:
    v1 = replay_file(CORPUS / "stale-proposal-066.jsonl", 10, V1)
    v2 = replay_file(CORPUS / "stale-proposal-066.jsonl", 10, V2)
    assert [h["status"] for h in v1["hypotheses"]] == [h["status"] for h in v2["hypotheses"]] == ["challenged"]
    assert "obs-edge-clock" in v2["selected_items"]["hypotheses"][0]["challenging_evidence"]
    assert statuses("stale-proposal-066", 10, V1) == {"proposal-004": "requires_revalidation"}
    assert statuses("stale-proposal-066", 10, V2) == {"proposal-004": "accepted"}


def test_a_verified_challenge_flags_the_proposal_in_both_versions() -> None:
    for reducer in (V1, V2):
        assert statuses("incident-042", 20, reducer) == {"proposal-008": "requires_revalidation"}
        assert statuses("stale-proposal-066", 7, reducer) == {"proposal-004": "requires_revalidation"}


def test_expired_challenging_evidence_flags_only_in_v1_and_expired_support_in_both() -> None:
    assert (
        statuses("expired-evidence-044", 7, V1)
        == statuses("expired-evidence-044", 7, V2)
        == {"proposal-001": "current", "proposal-002": "current"}
    )
    assert statuses("expired-evidence-044", 8, V1) == {
        "proposal-001": "requires_revalidation",
        "proposal-002": "current",
    }
    assert statuses("expired-evidence-044", 8, V2) == {"proposal-001": "current", "proposal-002": "current"}
    assert statuses("expired-evidence-044", 9, V2) == {
        "proposal-001": "current",
        "proposal-002": "requires_revalidation",
    }


def test_a_limits_only_constraints_change_is_material_only_in_v1_and_a_scope_change_in_both() -> None:
    assert statuses("scope-change-051", 5, V1) == {"proposal-001": "requires_revalidation"}
    assert statuses("scope-change-051", 5, V2) == {"proposal-001": "current"}
    for reducer in (V1, V2):
        assert statuses("scope-change-051", 7, reducer) == {"proposal-001": "requires_revalidation"}
        assert statuses("scope-change-051", 9, reducer) == {"proposal-001": "accepted"}


def test_v2_names_itself_in_the_projection() -> None:
    assert replay_file(CORPUS / "incident-042.jsonl", 20, V2)["reducer_version"] == V2
