"""The state of reducer workspace-rules-v3: v1's state, with what v3 keeps beside it.

- ``reviews``: every review, with the version it was made against and the material changes it did not see;
- ``coverage``: what each work result's query covered (time range, filters, targets, completion);
- ``unsupported_answers``: answers that cited no evidence, kept beside a question that stays open;
- ``idempotency`` is keyed by principal and key (``slot``), so one principal's key never answers another's;
- ``active``: what is selected now (see ``selected_now``).
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from caseboard.reducers.workspace_rules_v1.state import RECORDS as V1_RECORDS
from caseboard.reducers.workspace_rules_v1.state import WorkspaceState


@dataclass(frozen=True, slots=True)
class ReviewRec:
    ref: str
    proposal: str
    decision: str
    author: str
    version: int
    against_version: int | None
    unseen_changes: tuple[int, ...]
    what_changed: str | None


@dataclass(frozen=True, slots=True)
class CoverageRec:
    request_id: str
    version: int
    time_range_start: datetime
    time_range_end: datetime
    filters: tuple[str, ...]  # name, value, name, value, ...: a flat tuple survives JSON
    targets: tuple[str, ...]
    completed: bool
    with_observation: bool


@dataclass(frozen=True, slots=True)
class AnswerRec:
    ref: str
    question: str
    text: str
    author: str
    version: int
    evidence: tuple[str, ...]


RECORDS: dict[str, type[Any]] = {
    **V1_RECORDS,
    "reviews": ReviewRec,
    "coverage": CoverageRec,
    "unsupported_answers": AnswerRec,
}


@dataclass(slots=True)
class WorkspaceStateV3(WorkspaceState):
    reviews: MutableMapping[str, ReviewRec] = field(default_factory=dict)
    coverage: MutableMapping[str, CoverageRec] = field(default_factory=dict)
    unsupported_answers: MutableMapping[str, AnswerRec] = field(default_factory=dict)
    active: MutableMapping[str, bool] = field(default_factory=dict)

    MAPPINGS: ClassVar[tuple[str, ...]] = (
        *WorkspaceState.MAPPINGS,
        "reviews",
        "coverage",
        "unsupported_answers",
        "active",
    )

    def selected_now(self) -> list[str]:
        """What is selected now, in no particular order: as many ids as the limit allows (``selected`` keeps
        every id ever selected, deselected ones as False)."""
        active = self.active
        layers = getattr(active, "maps", None)
        if layers is not None:  # a fork (a ChainMap): its layers merged by dict.update, not looked up key by key
            active = {}
            for layer in reversed(layers):
                active.update(layer)
        return [ref for ref, on in active.items() if on]


def slot(principal: str, key: str) -> str:
    """Where a principal's idempotency key lives: a principal id never holds a space (items.Id)."""
    return f"{principal} {key}"
