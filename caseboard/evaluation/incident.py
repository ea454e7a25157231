"""An evaluation incident: a recorded incident's opening, what the investigation may draw on, its ground truth.

One JSON file per incident (``corpus/evaluation/incidents/NAME.json``, format ``caseboard.evaluation/1``):

- ``opened_at``, ``scope``, ``instances`` (the instances in scope), ``goal``, ``runtime_limits``: the opening;
- ``first_requests``: the request kinds an investigation asks first (what the alert points at);
- ``tools``: per request kind, what each successive request of that kind returns (the n-th request gets
  the n-th finding, the last one repeats) with its arrival delay, and for checks the verdict it supports;
- ``arrivals``: evidence nobody asked for that arrives at a delay after opening (a delayed log batch);
- ``candidates``: the explanations the evidence suggests, each with the observations that suggest it,
  the check that would settle it and the plan it leads to;
- ``truth``: the outcome a correct investigation reaches and the traps the incident holds.

Both arms read the same file through the same tools; neither sees ``truth``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from caseboard.domain.errors import CaseboardError

FORMAT = "caseboard.evaluation/1"

Outcome = Literal["supported", "evidence_incomplete", "human_review_required", "budget_exhausted"]
TrapKind = Literal[
    "stale_proposal",
    "late_counterevidence",
    "unverified_clock",
    "wrong_instance",
    "expiring_observation",
    "instruction_text",
]
TRAP_KINDS: tuple[str, ...] = TrapKind.__args__  # type: ignore[attr-defined]
CaughtIf = Literal["not_concluded", "proposal_not_current", "flagged", "rechecked", "not_challenged"]


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Relation(Model):
    """How the finding's observation bears on a candidate explanation, as the source material shows it."""

    hypothesis: str
    relation: Literal["supports", "challenges"]
    rationale: str


class Finding(Model):
    """What one request (or one unrequested arrival) returns."""

    summary: str
    delay_s: int = Field(ge=0)
    completed: bool = True
    targets: tuple[str, ...] = ()
    observation: dict[str, Any] | None = None
    """An observation body (DESIGN §3) without ``evidence_ref``; the artifact's citation is added."""
    artifact: tuple[str, ...] = ()
    """The raw lines the observation rests on, stored in the evidence repository and cited."""
    relation: Relation | None = None
    verdict: Literal["confirmed", "refuted", "inconclusive"] | None = None
    """For a check: what it establishes about the claim it was asked for."""


class Arrival(Model):
    after_s: int = Field(ge=0)
    kind: str
    finding: Finding


class Candidate(Model):
    id: str
    statement: str
    suggested_by: tuple[str, ...]
    """The observations that, once all known, suggest the explanation."""
    check: str
    """The kind of the check that settles it."""
    proposal: str
    """The id of the plan it leads to."""
    plan: str


class Trap(Model):
    kind: TrapKind
    subject: str
    caught_if: CaughtIf
    note: str


class Truth(Model):
    outcome: Literal["supported", "evidence_incomplete", "human_review_required"]
    explanation: str | None = None
    traps: tuple[Trap, ...] = ()


class EvaluationIncident(Model):
    format: Literal["caseboard.evaluation/1"]
    id: str
    scenario: str
    description: str
    opened_at: str
    scope: dict[str, str]
    instances: tuple[str, ...]
    goal: str
    runtime_limits: dict[str, int]
    first_requests: tuple[str, ...]
    tools: dict[str, tuple[Finding, ...]]
    arrivals: tuple[Arrival, ...] = ()
    candidates: tuple[Candidate, ...]
    truth: Truth

    def finding(self, kind: str, nth: int) -> Finding:
        """What the ``nth`` request (0-based) of ``kind`` returns; an unknown kind finds nothing."""
        found = self.tools.get(kind)
        if not found:
            return Finding(summary=f"no {kind} source is available for {self.scope['service']}", delay_s=60)
        return found[min(nth, len(found) - 1)]


class CorpusError(CaseboardError):
    """A corpus directory or file that is not an evaluation corpus."""


def load_corpus(path: Path) -> list[EvaluationIncident]:
    """Every incident of the corpus at ``path`` (a directory holding ``incidents/*.json``, or the directory of
    the files itself), in name order."""
    folder = path / "incidents" if (path / "incidents").is_dir() else path
    if not folder.is_dir():
        raise CorpusError(f"{path}: no such corpus directory; expected a directory with incidents/*.json")
    files = sorted(folder.glob("*.json"))
    if not files:
        raise CorpusError(f"{folder}: no evaluation incidents (*.json) found")
    incidents = []
    for file in files:
        try:
            incidents.append(EvaluationIncident.model_validate(json.loads(file.read_text())))
        except (ValueError, OSError) as error:
            first = str(error).splitlines()
            raise CorpusError(f"{file}: not an evaluation incident ({FORMAT}): {' '.join(first[:3])}") from error
    return incidents
