"""What one run of one arm ended with: the facts the figures are computed from, the same shape for both arms."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from caseboard.evaluation.judgment import Explanation


@dataclass
class Plan:
    id: str
    status: str  # current, accepted, requires_revalidation, revised, withdrawn
    depends_on: tuple[str, ...]

    @property
    def standing(self) -> bool:
        """A plan the operator is handed as current."""
        return self.status in ("current", "accepted")


@dataclass
class Ending:
    arm: str
    incident: str
    status: str
    """How the run ended: ``human_review_required``, ``evidence_incomplete``, ``budget_exhausted`` (or
    ``investigating`` when it stopped without ending)."""
    reason: str
    explanations: list[Explanation]
    weighed_challenges: dict[str, list[str]]
    """Per explanation, the observations it recorded as challenging it."""
    plans: list[Plan]
    received: dict[str, dict[str, Any]]
    """Every observation the run received before it ended, by id."""
    flagged: list[str]
    """Observations whose instruction-like text reached the operator flagged."""
    rechecked: list[str]
    """Observations re-checked after they expired."""
    elapsed_s: int
    cycles: int
    tool_calls: int
    tokens: int
    invocations: int
    revisions: int
    withdrawals: int
    refused: int
    record: str
    """The file the run is recorded in, relative to the output directory."""
    after_end: list[str] = field(default_factory=list)
    """Evidence that arrived after the run ended."""
