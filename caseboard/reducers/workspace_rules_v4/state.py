"""The state of reducer workspace-rules-v4: v3's state, with what v4 keeps beside it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from caseboard.reducers.workspace_rules_v3.state import RECORDS as V3_RECORDS
from caseboard.reducers.workspace_rules_v3.state import WorkspaceStateV3, slot

RECORDS: dict[str, type[Any]] = {**V3_RECORDS}


@dataclass(slots=True)
class WorkspaceStateV4(WorkspaceStateV3):
    MAPPINGS: ClassVar[tuple[str, ...]] = (*WorkspaceStateV3.MAPPINGS,)


__all__ = ["RECORDS", "WorkspaceStateV4", "slot"]
