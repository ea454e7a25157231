"""Schema evolution: a commit of schema version 0 still reads, through a pure upcaster, and still replays."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from eventsourcing.persistence import StoredEvent

from caseboard.domain.commit import COMMIT_TOPIC, Commit
from caseboard.ledger import open_ledger
from caseboard.ledger.upcast import upcast_commit
from caseboard.projections import Workspaces
from caseboard.replay.rebuild import replay_file
from caseboard.replay.verify import verify_file

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "incident-042.schema0.jsonl"
CURRENT = ROOT / "corpus" / "incident-042.jsonl"


def old_lines() -> list[dict[str, object]]:
    return [json.loads(line) for line in OLD.read_text().splitlines()]


def test_the_upcaster_renames_fields_and_moves_inline_decisions_out() -> None:
    old = {
        "schema_version": 0,
        "workspace": "ws-1",
        "version": 2,
        "recorded_at": "2026-03-02T14:04:00Z",
        "author": {"principal": "s-1", "role": "specialist"},
        "items": [
            {
                "type": "work_claim",
                "request_id": "r-1",
                "lease_s": 60,
                "decision": {"generation": 1, "lease_expires_at": "2026-03-02T14:05:00Z"},
            },
            {"type": "cycle", "number": 1},
        ],
    }
    new = upcast_commit(old)
    assert new["schema_version"] == 1
    assert new["workspace_id"] == "ws-1" and new["at"] == "2026-03-02T14:04:00Z"
    assert "workspace" not in new and "recorded_at" not in new
    assert new["decisions"] == [{"generation": 1, "lease_expires_at": "2026-03-02T14:05:00Z"}, {}]
    assert all("decision" not in item for item in new["items"])
    assert Commit.model_validate(new).version == 2


def test_the_upcaster_is_pure_and_leaves_its_input_as_it_was() -> None:
    old = old_lines()[4]
    before = copy.deepcopy(old)
    upcast_commit(old)
    assert old == before


def test_an_unknown_schema_version_is_refused_with_its_number() -> None:
    with pytest.raises(ValueError, match="schema_version 7"):
        upcast_commit({"schema_version": 7})


@pytest.mark.parametrize("version", [1, 17, 18, 19, 20])
def test_a_file_of_the_old_shape_replays_to_the_same_projection_as_the_current_one(version: int) -> None:
    assert replay_file(OLD, version) == replay_file(CURRENT, version)


def test_old_records_stored_in_a_ledger_are_read_through_the_upcaster() -> None:
    ledger = open_ledger("memory://")
    ledger.events.insert_events(
        [
            StoredEvent(
                originator_id="incident-042",
                originator_version=int(str(line["version"])),
                topic=COMMIT_TOPIC,
                state=json.dumps(line).encode(),
            )
            for line in old_lines()
        ]
    )
    assert Workspaces(ledger).show("incident-042", 20) == replay_file(CURRENT, 20)


def test_verify_reports_old_records_as_unsealed_rather_than_intact() -> None:
    report = verify_file(OLD)
    assert report.problem is not None
    assert (report.problem.version, report.problem.kind) == (1, "unsealed")
