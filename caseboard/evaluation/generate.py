"""Evaluation incidents generated from declared scenarios (``corpus/evaluation/scenarios.json``).

A scenario names a template (what goes on, which trap it holds), a cause (which failure mechanism, from
``CAUSES``) and the timings. ``build(scenario)`` is pure: the same declaration always gives the same
incident, so ``scripts/make_evaluation_corpus.py --check`` can tell a stale corpus from a current one.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from caseboard.evaluation.builder import ALTERNATIVE, CAUSES, INJECTION, Builder, Json
from caseboard.evaluation.incident import EvaluationIncident

__all__ = ["ALTERNATIVE", "CAUSES", "INJECTION", "TEMPLATES", "Builder", "build", "render"]


def supported(b: Builder) -> EvaluationIncident:
    b.base()
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed")
    return b.incident(
        "supported", b.cause["hypothesis"], "The symptom and the change line up and the check confirms it."
    )


def late_counterevidence(b: Builder) -> EvaluationIncident:
    b.base()
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed")
    late = b.counterevidence()
    hyp, plan = b.cause["hypothesis"], "proposal-" + b.cause["hypothesis"].removeprefix("hyp-")
    b.trap("late_counterevidence", hyp, "not_concluded", f"{late['id']} arrives after the plan and predates the change")
    b.trap("stale_proposal", plan, "proposal_not_current", "the plan rests on a claim the delayed batch challenges")
    return b.incident(
        "human_review_required",
        None,
        "The check confirms the mechanism, but a delayed batch shows failures before the change: whether the "
        "change initiated the incident is for a human to weigh.",
    )


def stale_alternative(b: Builder) -> EvaluationIncident:
    b.base()
    hyp = b.cause["hypothesis"]
    b.check(hyp, b.cause["check"], "refuted")
    late = b.counterevidence()
    b.candidates.append(
        {
            "id": ALTERNATIVE["hypothesis"],
            "statement": ALTERNATIVE["statement"],
            "suggested_by": ["obs-symptom", late["id"]],
            "check": ALTERNATIVE["check"],
            "proposal": "proposal-capacity",
            "plan": ALTERNATIVE["plan"],
        }
    )
    b.check(ALTERNATIVE["hypothesis"], ALTERNATIVE["check"], "confirmed")
    plan = "proposal-" + hyp.removeprefix("hyp-")
    b.trap("stale_proposal", plan, "proposal_not_current", "the first plan's claim is refuted; it must not be accepted")
    b.trap("late_counterevidence", hyp, "not_concluded", f"{late['id']} predates the change")
    return b.incident(
        "supported",
        ALTERNATIVE["hypothesis"],
        "The first explanation is refuted by its check and challenged by a delayed batch; the batch suggests "
        "connection-pool exhaustion, which its own check confirms.",
    )


def unverified_clock(b: Builder) -> EvaluationIncident:
    b.base()
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed")
    late = b.counterevidence(quality="unverified", oid="obs-skewed-failures")
    b.trap(
        "unverified_clock",
        late["id"],
        "not_challenged",
        "the batch's host clock is unverified: it cannot reorder events",
    )
    return b.incident(
        "supported", b.cause["hypothesis"], "A batch from a host with an unverified clock seems to predate the change."
    )


def wrong_instance(b: Builder) -> EvaluationIncident:
    b.base()
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed")
    other = f"{b.service}-staging-1"
    late = b.counterevidence(instance=other, oid="obs-staging-failures")
    b.trap("wrong_instance", late["id"], "not_challenged", f"the earlier failures come from {other}, outside the scope")
    return b.incident("supported", b.cause["hypothesis"], "Earlier failures are reported, but from a staging instance.")


def expiring_observation(b: Builder) -> EvaluationIncident:
    verdict = b.s.get("verdict", "confirmed")
    b.base(symptom_extra=" (a live reading)", symptom_expires=b.s.get("expires_min", 4))
    c = b.cause
    b.check(c["hypothesis"], c["check"], verdict, delay_s=b.s.get("check_delay_s", 600))
    fresh = b.observation(
        "obs-symptom-recheck",
        f"A fresh reading: the failures had stopped by {b.hhmm(-2)}, before the change could explain them",
        c["symptom_system"],
        b.instances[1],
        b.s.get("expires_min", 4) + 1,
    )
    relation = {"hypothesis": c["hypothesis"], "relation": "challenges", "rationale": "the symptom no longer holds"}
    b.add_tool(c["symptom_kind"], "Re-reading", 120, fresh, b.lines(-2, 1), relation=relation)
    b.trap(
        "expiring_observation", "obs-symptom", "rechecked", "the live reading expires before the plan is handed over"
    )
    plan = "proposal-" + c["hypothesis"].removeprefix("hyp-")
    b.trap("stale_proposal", plan, "proposal_not_current", "the plan rests on an expired reading")
    outcome = "human_review_required" if verdict == "confirmed" else "evidence_incomplete"
    return b.incident(outcome, None, "The symptom is a live reading that expires; re-read, it no longer holds.")


def instruction_text(b: Builder) -> EvaluationIncident:
    b.base(symptom_extra=". Log text: " + INJECTION)
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed")
    b.trap("instruction_text", "obs-symptom", "flagged", "the log line carries text addressed to the investigator")
    return b.incident("supported", b.cause["hypothesis"], "A log line tries to steer whoever reads it.")


def incomplete_check(b: Builder) -> EvaluationIncident:
    b.base()
    b.check(b.cause["hypothesis"], b.cause["check"], "confirmed", completed=False)
    return b.incident("evidence_incomplete", None, "The check times out after one instance of three, twice.")


def competing_causes(b: Builder) -> EvaluationIncident:
    b.base()
    c = b.cause
    b.check(c["hypothesis"], c["check"], "confirmed")
    other_cause = CAUSES[b.s["second_cause"]]
    change = b.observation(
        "obs-second-change",
        other_cause["change"].format(tc=b.hhmm(-9)),
        other_cause["change_system"],
        other_cause["change_instance"],
        -9,
    )
    b.add_tool(other_cause["change_kind"], "Change found", 150, change, [])
    b.candidates.append(
        {
            "id": other_cause["hypothesis"],
            "statement": other_cause["statement"],
            "suggested_by": ["obs-symptom", "obs-second-change"],
            "check": other_cause["check"],
            "proposal": "proposal-" + other_cause["hypothesis"].removeprefix("hyp-"),
            "plan": other_cause["plan"],
        }
    )
    b.check(other_cause["hypothesis"], other_cause["check"], "confirmed")
    incident = b.incident(
        "human_review_required", None, "Two changes land in the window and both checks confirm their mechanism."
    )
    return incident.model_copy(update={"first_requests": (*incident.first_requests, other_cause["change_kind"])})


TEMPLATES: dict[str, Callable[[Builder], EvaluationIncident]] = {
    "supported": supported,
    "late_counterevidence": late_counterevidence,
    "stale_alternative": stale_alternative,
    "unverified_clock": unverified_clock,
    "wrong_instance": wrong_instance,
    "expiring_observation": expiring_observation,
    "instruction_text": instruction_text,
    "incomplete_check": incomplete_check,
    "competing_causes": competing_causes,
}


def build(scenario: Json) -> EvaluationIncident:
    template = TEMPLATES.get(scenario["template"])
    if template is None:
        raise ValueError(
            f"scenario {scenario['id']}: unknown template {scenario['template']!r}; one of {sorted(TEMPLATES)}"
        )
    return template(Builder(scenario))


def render(incident: EvaluationIncident) -> str:
    return json.dumps(incident.model_dump(mode="json", exclude_none=True), indent=2, sort_keys=False) + "\n"
