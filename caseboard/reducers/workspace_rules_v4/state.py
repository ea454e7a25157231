"""The state of reducer workspace-rules-v4: v3's state, with what v4 keeps beside it."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from caseboard.domain.principals import principal_key
from caseboard.reducers.workspace_rules_v3.state import RECORDS as V3_RECORDS
from caseboard.reducers.workspace_rules_v3.state import WorkspaceStateV3
from caseboard.reducers.workspace_rules_v3.state import slot as slot_v3

RECORDS: dict[str, type[Any]] = {**V3_RECORDS}


@dataclass(slots=True)
class WorkspaceStateV4(WorkspaceStateV3):
    exhausted_at: int | None = None
    """The version that set ``budget_exhausted``, until a reopen: work stays stopped whatever status is set in
    between (issue 33, rule 10; read by the coordinator through ``Reducer.stopped``)."""
    check_runners: MutableMapping[str, str] = field(default_factory=dict)
    """Who ran each check: the author of its result, by request id (issue 33, rule 3; read by the coordinator
    through ``Reducer.check_runner``)."""

    MAPPINGS: ClassVar[tuple[str, ...]] = (*WorkspaceStateV3.MAPPINGS, "check_runners")


def slot(principal: str, key: str) -> str:
    """Where a principal's idempotency key lives: v3's slot, of the principal as principals are compared
    (``principal_key``), so ``Planner-1`` retrying with ``planner-1``'s key gets its outcome. The stored digest
    is unchanged: it is of the contribution as written."""
    return slot_v3(principal_key(principal), key)


__all__ = ["RECORDS", "WorkspaceStateV4", "slot"]
