"""State to JSON and back, for snapshots: v1's codec over v3's state class and records."""

from __future__ import annotations

from typing import Any

from caseboard.reducers.workspace_rules_v1.codec import StateCodec
from caseboard.reducers.workspace_rules_v3.state import RECORDS, WorkspaceStateV3

STATE = StateCodec(WorkspaceStateV3, RECORDS)


def dump(state: WorkspaceStateV3) -> dict[str, Any]:
    return STATE.dump(state)


def load(data: dict[str, Any]) -> WorkspaceStateV3:
    state: WorkspaceStateV3 = STATE.load(data)
    return state
