"""The domain judgment both arms' scripted stand-ins share, so that only the coordination differs.

- A relation an observation bears on an explanation is weighed only when the observation is admissible:
  its source clock is verified and its source instance is in the incident's scope. Otherwise it is
  discounted, with the reason (an unverified clock, another instance).
- An explanation is suggested once every observation that suggests it is known.
- The outcome of a set of explanations: exactly one confirmed and unchallenged one is a supported outcome;
  a confirmed one that admissible evidence challenges, or several confirmed ones, need a human's review;
  none confirmed is evidence incomplete.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from caseboard.evaluation.incident import EvaluationIncident, Relation


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def discounted(observation: Mapping[str, Any], incident: EvaluationIncident) -> str | None:
    """Why the observation's bearing on an explanation is not weighed, or None when it is admissible."""
    if observation.get("event_time_quality") != "verified":
        return f"{observation['id']}: the source clock is unverified"
    instance = observation.get("source", {}).get("instance")
    if instance not in incident.instances:
        return f"{observation['id']}: instance {instance} is outside the incident's scope"
    return None


def relations(incident: EvaluationIncident) -> dict[str, Relation]:
    """Each observation id the incident's sources can return, with how its source material bears on an
    explanation (what a reader of the raw lines would see)."""
    found: dict[str, Relation] = {}
    findings = [f for kind in sorted(incident.tools) for f in incident.tools[kind]]
    findings += [a.finding for a in incident.arrivals]
    for finding in findings:
        if finding.observation is not None and finding.relation is not None:
            found[str(finding.observation["id"])] = finding.relation
    return found


@dataclass(frozen=True)
class Explanation:
    id: str
    status: str  # proposed, supported, challenged, confirmed, confirmed_before_challenge, refuted, inconclusive
    challenged: bool


def outcome_of(explanations: Iterable[Explanation]) -> tuple[str, str | None]:
    """The outcome (and the explanation it rests on) of what an investigation ended with."""
    confirmed = [e for e in explanations if e.status in ("confirmed", "confirmed_before_challenge")]
    clean = [e for e in confirmed if not e.challenged and e.status == "confirmed"]  # v4: challenged after it
    if len(confirmed) == 1 and clean:
        return "supported", clean[0].id
    if confirmed:
        return "human_review_required", None
    return "evidence_incomplete", None


def request_id(kind: str, number: int) -> str:
    return f"{kind.replace('_', '-')}-{number:03d}"
