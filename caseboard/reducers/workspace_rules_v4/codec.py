"""State to JSON and back, for snapshots: v1's codec over v4's state class and records."""

from __future__ import annotations

from typing import Any

from caseboard.reducers.workspace_rules_v1.codec import StateCodec
from caseboard.reducers.workspace_rules_v4.state import RECORDS, WorkspaceStateV4

STATE = StateCodec(WorkspaceStateV4, RECORDS)


def dump(state: WorkspaceStateV4) -> dict[str, Any]:
    return STATE.dump(state)


def load(data: dict[str, Any]) -> WorkspaceStateV4:
    state: WorkspaceStateV4 = STATE.load(data)
    return state
