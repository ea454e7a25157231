"""Figures per incident and arm, and the totals per arm; unsuccessful runs are counted in every total.

Per run:
- ``outcome``: ``budget_exhausted``, ``evidence_incomplete``, ``stopped`` (the run did not end within the
  simulated horizon) or, for a run that handed the investigation to a human, the outcome of its
  explanations (``judgment.outcome_of``: ``supported`` with the explanation, or ``human_review_required``);
  ``correct`` when it is the ground truth's (and for ``supported``, the same explanation);
- ``time_s`` and ``cycles``: simulated time from the opening to the end, cycles (steps for the single agent);
  ``time_to_supported_outcome_s`` the same time when the run is correct, else null;
- ``tool_calls``: work requests issued;
- ``rework``: what an operator has to redo or catch: ``plans_requiring_revalidation`` (plans handed over as
  current whose claim is refuted or challenged by weighed evidence, or that rest on evidence expired by the
  end), ``traps_missed``, ``wrong_outcome`` (1 when the outcome is not the ground truth's); and, reported
  beside it, the run's own ``revisions`` and ``withdrawals``;
- ``tokens`` (model-facing input: each invocation's view, or the agent's notes, at four characters a token,
  plus a fixed prompt) and ``cost`` at ``price_per_mtok``.
Per arm: sums over every run, the number correct, and ``cost_per_supported_outcome`` (all runs' cost,
failures included, over the correct ones).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from caseboard.evaluation.ending import Ending
from caseboard.evaluation.incident import EvaluationIncident, Trap
from caseboard.evaluation.judgment import outcome_of, parse_time


@dataclass(frozen=True)
class Pricing:
    price_per_mtok: float = 3.0
    """Dollars per million tokens."""


def outcome(ending: Ending) -> tuple[str, str | None]:
    if ending.status == "human_review_required":
        return outcome_of(ending.explanations)
    if ending.status in ("budget_exhausted", "evidence_incomplete"):
        return ending.status, None
    return "stopped", None


def caught(trap: Trap, ending: Ending, explanation: str | None) -> bool:
    plans = {p.id: p for p in ending.plans}
    if trap.caught_if == "not_concluded":
        return explanation != trap.subject
    if trap.caught_if == "proposal_not_current":
        plan = plans.get(trap.subject)
        return plan is None or not plan.standing
    if trap.caught_if == "flagged":
        return trap.subject in ending.flagged
    if trap.caught_if == "rechecked":
        return trap.subject in ending.rechecked
    return all(trap.subject not in challenges for challenges in ending.weighed_challenges.values())


def revalidation_needed(ending: Ending) -> list[str]:
    """Plans handed over as current that an operator would have to send back."""
    status = {e.id: e.status for e in ending.explanations}
    needed = []
    for plan in ending.plans:
        if not plan.standing:
            continue
        broken = [h for h in plan.depends_on if status.get(h) == "refuted" or ending.weighed_challenges.get(h)]
        if broken:
            needed.append(plan.id)
    return needed


def expired_under(ending: Ending, incident: EvaluationIncident) -> list[str]:
    """Standing plans resting on an observation that expired before the run ended and was not re-checked."""
    end = parse_time(incident.opened_at).timestamp() + ending.elapsed_s
    support = {c.id: set(c.suggested_by) for c in incident.candidates}
    out = []
    for plan in ending.plans:
        if not plan.standing:
            continue
        for h in plan.depends_on:
            for oid in sorted(support.get(h, ())):
                observation = ending.received.get(oid, {})
                expires = observation.get("expires_at")
                if expires and parse_time(expires).timestamp() <= end and oid not in ending.rechecked:
                    out.append(plan.id)
    return sorted(set(out))


def score(incident: EvaluationIncident, ending: Ending, pricing: Pricing) -> dict[str, Any]:
    got, explanation = outcome(ending)
    truth = incident.truth
    correct = got == truth.outcome and (got != "supported" or explanation == truth.explanation)
    traps = [{"kind": t.kind, "subject": t.subject, "caught": caught(t, ending, explanation)} for t in truth.traps]
    replan = sorted(set(revalidation_needed(ending)) | set(expired_under(ending, incident)))
    missed = sum(not t["caught"] for t in traps)
    return {
        "incident": incident.id,
        "scenario": incident.scenario,
        "arm": ending.arm,
        "status": ending.status,
        "outcome": got,
        "explanation": explanation,
        "expected": truth.outcome,
        "expected_explanation": truth.explanation,
        "correct": correct,
        "time_s": ending.elapsed_s,
        "time_to_supported_outcome_s": ending.elapsed_s if correct else None,
        "cycles": ending.cycles,
        "tool_calls": ending.tool_calls,
        "invocations": ending.invocations,
        "tokens": ending.tokens,
        "cost": round(ending.tokens * pricing.price_per_mtok / 1_000_000, 6),
        "rework": {
            "plans_requiring_revalidation": len(replan),
            "traps_missed": missed,
            "wrong_outcome": 0 if correct else 1,
            "total": len(replan) + missed + (0 if correct else 1),
        },
        "revisions": ending.revisions,
        "withdrawals": ending.withdrawals,
        "refused": ending.refused,
        "plans_requiring_revalidation": replan,
        "traps": traps,
        "arrived_after_end": ending.after_end,
        "record": ending.record,
    }


def totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The sums of one arm's runs; every run counts, the unsuccessful ones included."""
    correct = [r for r in rows if r["correct"]]
    cost = round(sum(r["cost"] for r in rows), 6)
    traps = [t for r in rows for t in r["traps"]]
    return {
        "runs": len(rows),
        "correct": len(correct),
        "unsuccessful": len(rows) - len(correct),
        "outcomes": {o: sum(r["outcome"] == o for r in rows) for o in sorted({r["outcome"] for r in rows})},
        "time_s": sum(r["time_s"] for r in rows),
        "time_to_supported_outcome_s_median": median([r["time_s"] for r in correct]),
        "cycles": sum(r["cycles"] for r in rows),
        "tool_calls": sum(r["tool_calls"] for r in rows),
        "tokens": sum(r["tokens"] for r in rows),
        "cost": cost,
        "cost_per_supported_outcome": round(cost / len(correct), 6) if correct else None,
        "traps": len(traps),
        "traps_caught": sum(t["caught"] for t in traps),
        "rework": {
            key: sum(r["rework"][key] for r in rows)
            for key in ("plans_requiring_revalidation", "traps_missed", "wrong_outcome", "total")
        },
        "revisions": sum(r["revisions"] for r in rows),
        "withdrawals": sum(r["withdrawals"] for r in rows),
    }


def median(values: list[int]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return float(ordered[middle]) if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
