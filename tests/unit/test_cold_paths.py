"""The cold paths of long incidents (issue 39, docs/adr/0148): what they cost per record, held as behaviour.

- ``verify`` of an intact file decodes each line once (it decoded every line twice: once to list the versions
  present, once to check it); the versions present are worked out only when a version is out of place;
- a workspace loaded from the ledger shares the repeated short strings of its records (source systems,
  instances, principals) instead of holding one copy per commit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.ledger import open_ledger
from caseboard.projections.workspaces import Workspaces
from caseboard.replay import records, transfer, verify

INCIDENT = Path(__file__).resolve().parents[2] / "corpus" / "incident-042.jsonl"


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every decode of a record, whichever door it goes through."""
    calls = [0]
    validate_json = Commit.model_validate_json.__func__  # type: ignore[attr-defined]
    decode_one = records.decode_one

    def counted_validate(cls: type[Commit], data: Any, **kwargs: Any) -> Commit:
        calls[0] += 1
        return validate_json(cls, data, **kwargs)  # type: ignore[no-any-return]

    def counted_decode(record: records.RawRecord) -> Commit:
        calls[0] += 1
        return decode_one(record)

    monkeypatch.setattr(Commit, "model_validate_json", classmethod(counted_validate))
    monkeypatch.setattr(verify, "decode_one", counted_decode)
    return calls


def test_verify_decodes_each_line_of_an_intact_file_once(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [line for line in INCIDENT.read_bytes().splitlines() if line.strip()]
    calls = _counting(monkeypatch)
    report = verify.verify_file(INCIDENT)
    assert report.intact and report.commits == len(lines)
    assert calls[0] == len(lines)


def test_a_missing_version_is_still_told_from_a_misplaced_one(tmp_path: Path) -> None:
    lines = INCIDENT.read_text().splitlines()
    missing, swapped = tmp_path / "missing.jsonl", tmp_path / "swapped.jsonl"
    missing.write_text("\n".join(lines[:4] + lines[5:]) + "\n")
    swapped.write_text("\n".join([*lines[:4], lines[5], lines[4], *lines[6:]]) + "\n")
    gone, moved = verify.verify_file(missing).problem, verify.verify_file(swapped).problem
    assert gone is not None and (gone.version, gone.kind) == (5, "missing")
    assert moved is not None and (moved.version, moved.kind) == (5, "out_of_order")


def _observation(number: int) -> dict[str, Any]:
    return {
        "workspace_id": "ws-strings",
        "author": {"principal": "log-specialist", "role": "specialist"},
        "items": [
            {
                "type": "observation",
                "id": f"obs-{number}",
                "statement": f"Authentication failures on payments-api-2 (sample {number})",
                "source": {"system": "auth-logs", "instance": "payments-api-2"},
                "event_time": "2026-03-02T14:03:00Z",
                "event_time_quality": "verified",
            }
        ],
    }


def _opening(workspace_id: str) -> dict[str, Any]:
    return {
        "workspace_id": workspace_id,
        "author": {"principal": "operator", "role": "operator"},
        "items": [
            {
                "type": "open",
                "scope": {"tenant_id": "t", "environment": "test", "service": "payments-api"},
                "goal": "strings",
                "runtime_limits": {
                    "max_selected_items": 20,
                    "max_investigation_cycles": 6,
                    "max_open_questions": 10,
                    "max_proposals": 10,
                    "max_pending_work": 10,
                },
                "execution_mode": "read_only",
            }
        ],
    }


def test_a_loaded_workspace_shares_the_repeated_strings_of_its_records() -> None:
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    opening = _opening("ws-strings")
    assert coordinator.submit(parse_contribution(opening)).ok
    for number in range(1, 4):
        assert coordinator.submit(parse_contribution(_observation(number))).ok
    state = Workspaces(ledger).current("ws-strings")  # a process that has not seen the workspace: read back
    first, *others = state.observations.values()
    assert len(others) == 2
    for other in others:
        assert other.source_system is first.source_system
        assert other.source_instance is first.source_instance
        assert other.author is first.author


def _asks(ledger: Any) -> list[str]:
    """Counts the ledger's answers about import marks (``Ledger.imported_head``)."""
    asked: list[str] = []
    imported_head = ledger.imported_head

    def counted(key: str) -> int | None:
        asked.append(key)
        return imported_head(key)  # type: ignore[no-any-return]

    ledger.imported_head = counted
    return asked


def test_a_workspace_s_import_mark_is_read_with_it_not_at_its_first_commit(tmp_path: Path) -> None:
    """The first commit on a workspace loaded into the cache costs what any other does (the scale benchmark's
    ``commit_cost_10000_workspaces_vs_1``); an imported record is still known as one."""
    ledger = open_ledger("memory://")
    transfer.import_file(ledger, INCIDENT, "ws-imported")
    [imported] = ledger.keys_named("ws-imported")
    live = Coordinator(ledger)
    opening = _opening("ws-live")
    assert live.submit(parse_contribution(opening)).ok
    [live_key] = ledger.keys_named("ws-live")
    asked = _asks(ledger)
    workspaces = Workspaces(ledger, capacity=2)
    coordinator = Coordinator(ledger, workspaces)
    workspaces.current(imported), workspaces.current(live_key)
    assert sorted(asked) == sorted([imported, live_key])  # read with each state
    refused = coordinator.submit(parse_contribution({**_observation(1), "workspace_id": "ws-imported"}))
    assert not refused.ok and refused.reason == "workspace_closed"
    assert coordinator.submit(parse_contribution({**_observation(1), "workspace_id": "ws-live"})).ok
    assert sorted(asked) == sorted([imported, live_key])  # and not asked again at a commit
    workspaces.current("ws-other"), workspaces.current("ws-another")  # evicts both: their marks go with them
    assert set(workspaces._imported) <= {"ws-other", "ws-another"}
