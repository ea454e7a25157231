"""The idempotency digest is stored in every commit that carries a key: its formula is part of the stored
format. A retry of a recorded contribution must give the digest its commit recorded, on every release."""

from __future__ import annotations

from pathlib import Path

import pytest

from caseboard.domain.contribution import Contribution
from caseboard.replay.records import decode_one, file_records

ROOT = Path(__file__).resolve().parents[2]
RECORDED = [
    commit
    for path in sorted((ROOT / "corpus").glob("*.jsonl"))
    for commit in map(decode_one, file_records(path))
    if commit.digest is not None
]


@pytest.mark.parametrize("commit", RECORDED, ids=[f"{c.workspace_id}@{c.version}" for c in RECORDED])
def test_a_recorded_contribution_gives_the_digest_its_commit_recorded(commit: object) -> None:
    from caseboard.domain.commit import Commit

    assert isinstance(commit, Commit)
    again = Contribution(
        workspace_id=commit.workspace_id,
        author=commit.author,
        idempotency_key=commit.idempotency_key,
        items=commit.items,
    )
    assert again.content_digest() == commit.digest


def test_the_digest_of_text_beyond_ascii_and_of_absent_fields_is_the_one_first_recorded() -> None:
    """A test vector: the digest of this contribution as caseboard has always computed it (keys sorted,
    compact separators, text as UTF-8 rather than escaped, absent fields left out, the author's role as its
    token). Recomputing it differently would refuse an honest retry as ``idempotency_mismatch``."""
    contribution = Contribution.model_validate(
        {
            "workspace_id": "ws-1",
            "author": {"principal": "log-specialist", "role": "specialist"},
            "idempotency_key": "k-1",
            "items": [
                {
                    "type": "observation",
                    "id": "obs-1",
                    "statement": "Zertifikat abgelaufen \u2013 payments-api",
                    "source": {"system": "auth-logs", "instance": "payments-api-3"},
                    "event_time": "2026-03-02T13:57:00Z",
                    "event_time_quality": "verified",
                    "evidence_ref": "artifact://logs/1",
                }
            ],
        }
    )
    assert contribution.content_digest() == VECTOR


VECTOR = "b86fb6b3986be2b42c597b70d58deea553f0cac81302a038f11ed16ab05e75b0"
