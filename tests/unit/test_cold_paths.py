"""The cold paths of long incidents (issue 39, docs/adr/0148): what they cost per record, held as behaviour.

- ``verify`` of an intact file decodes each line once (it decoded every line twice: once to list the versions
  present, once to check it); the versions present are worked out only when a version is out of place;
- a workspace loaded from the ledger shares the repeated short strings of its records (source systems,
  instances, principals) instead of holding one copy per commit;
- a snapshot's records are kept as their JSON text and decoded when first read (docs/adr/0181); a snapshot of
  the layout before, or in the envelope's format before, loads as it did; an integer beyond 64 bits and a
  float that is not finite are read back exactly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
from collections import ChainMap
from pathlib import Path
from typing import Any

import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit, seal
from caseboard.ledger import open_ledger
from caseboard.ledger.base import SnapshotRejected, open_snapshot, seal_snapshot
from caseboard.projections.shape import shape_fingerprint
from caseboard.projections.workspaces import Workspaces
from caseboard.reducers import WorkspaceState, get_reducer
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


def _folded(observations: int) -> WorkspaceState:
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    assert coordinator.submit(parse_contribution(_opening("ws-strings"))).ok
    for number in range(1, observations + 1):
        assert coordinator.submit(parse_contribution(_observation(number))).ok
    return Workspaces(ledger).current("ws-strings")


def test_a_snapshot_s_records_are_decoded_when_first_read_and_the_state_is_the_folded_one() -> None:
    reducer = get_reducer()
    folded = _folded(5)
    data = json.loads(json.dumps(reducer.dump(folded)))  # as a snapshot stores it
    assert set(data["observations"]) == {"keys", "texts"}
    loaded = reducer.load(data)
    observations: Any = loaded.observations
    assert type(observations).__name__ == "Deferred" and observations.unread() == 5
    assert "obs-3" in observations and len(observations) == 5 and observations.unread() == 5
    assert observations["obs-3"] == folded.observations["obs-3"] and observations.unread() == 4
    assert observations.get("obs-9") is None and observations.unread() == 4
    assert list(observations) == list(folded.observations)  # the order they were written in
    assert reducer.render(loaded) == reducer.render(folded)
    assert observations.unread() == 0
    assert reducer.dump(reducer.load(data)) == reducer.dump(folded)  # unread records dump as they were loaded


def test_a_fork_of_a_loaded_state_leaves_the_loaded_state_as_it_was() -> None:
    reducer = get_reducer()
    loaded = reducer.load(json.loads(json.dumps(reducer.dump(_folded(3)))))
    fork = loaded.fork()
    assert isinstance(fork.observations, ChainMap)
    replaced = dataclasses.replace(fork.observations["obs-1"], statement="changed in the fork")
    fork.observations["obs-1"] = replaced
    del fork.observations["obs-1"]
    fork.observations["obs-4"] = replaced
    assert loaded.observations["obs-1"].statement.startswith("Authentication failures")
    assert "obs-4" not in loaded.observations and len(loaded.observations) == 3


def _layout_before(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as a snapshot written before records were kept as text: each record the list of its values,
    each mapping a list of pairs."""
    before = dict(data)
    for name, value in data.items():
        if isinstance(value, dict) and set(value) == {"keys", "texts"}:
            before[name] = [[key, json.loads(text)] for key, text in zip(value["keys"], value["texts"], strict=True)]
        elif isinstance(value, dict) and set(value) == {"keys", "values"}:
            before[name] = [list(pair) for pair in zip(value["keys"], value["values"], strict=True)]
    return before


def test_a_snapshot_of_the_layout_before_loads_as_it_did() -> None:
    reducer = get_reducer()
    folded = _folded(3)
    loaded = reducer.load(_layout_before(json.loads(json.dumps(reducer.dump(folded)))))
    assert type(loaded.observations) is dict
    assert reducer.render(loaded) == reducer.render(folded)


@pytest.mark.parametrize("forged", [False, True], ids=["as-written", "forged"])
def test_verify_checks_a_snapshot_of_the_layout_before_by_the_state_it_holds(forged: bool) -> None:
    """A ledger written before keeps its snapshots: they verify, and one whose data is not the chain's does not."""
    ledger = open_ledger("memory://")
    coordinator = Coordinator(ledger)
    assert coordinator.submit(parse_contribution(_opening("ws-strings"))).ok
    for number in range(1, 4):
        assert coordinator.submit(parse_contribution(_observation(number))).ok
    reducer = get_reducer()
    state = Workspaces(ledger).current("ws-strings")
    data = _layout_before(json.loads(json.dumps(reducer.dump(state))))
    if forged:
        data["goal"] = "Forged goal"
    head = ledger.read("ws-strings")[-1]
    ledger.save_snapshot("ws-strings", reducer.name, head.version, data, head.hash, shape_fingerprint(type(state)))
    report = verify.verify_ledger(ledger, "ws-strings")
    assert report.snapshots == 1
    if forged:
        assert report.problem is not None and report.problem.kind == "snapshot_diverged"
    else:
        assert report.intact, report.line()


def test_what_the_standard_library_s_json_holds_exactly_a_snapshot_holds_exactly() -> None:
    """An integer beyond 64 bits and a float that is not finite, in a record and in the envelope."""
    reducer = get_reducer()
    state = _folded(1)
    state.observations["obs-1"] = dataclasses.replace(state.observations["obs-1"], version=2**70)
    state.limits["max_selected_items"] = 2**70
    sealed = seal_snapshot("ws-1", reducer.name, 7, "a" * 64, reducer.dump(state), key=b"k" * 32)
    assert sealed.startswith(b'{"format":2,')
    loaded = reducer.load(open_snapshot(sealed, "ws-1", reducer.name, 7, key=b"k" * 32).data)
    assert loaded.observations["obs-1"].version == 2**70 and loaded.limits["max_selected_items"] == 2**70
    assert reducer.render(loaded) == reducer.render(state)
    data = {"held": [float("inf"), float("-inf")], "big": -(2**80)}
    opened = open_snapshot(seal_snapshot("ws-1", reducer.name, 7, None, data), "ws-1", reducer.name, 7)
    assert opened.data == data


def test_a_snapshot_sealed_in_format_1_opens_and_its_mac_is_checked_by_its_own_encoder() -> None:
    envelope = {"format": 1, "workspace_id": "ws-1", "reducer": "workspace-rules-v4", "version": 7}
    envelope |= {"head_hash": "a" * 64, "data": {"goal": "é", "limits": {"max": 2**70}}}
    unsigned = json.dumps(envelope, separators=(",", ":"), ensure_ascii=False).encode()
    mac = hmac.new(b"k" * 32, unsigned, hashlib.sha256).hexdigest()
    sealed = seal(json.dumps({**envelope, "mac": mac}, separators=(",", ":"), ensure_ascii=False).encode())
    opened = open_snapshot(sealed, "ws-1", "workspace-rules-v4", 7, key=b"k" * 32)
    assert opened.data == {"goal": "é", "limits": {"max": 2**70}}
    with pytest.raises(SnapshotRejected, match="MAC"):
        open_snapshot(sealed, "ws-1", "workspace-rules-v4", 7, key=b"x" * 32)
