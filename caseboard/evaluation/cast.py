"""The workspace arm's scripted stand-ins: a planner, a verifier and one tool specialist per request kind.

They are deterministic rules, not models, over the view the coordinator shows them (the ``Participant``
protocol of caseboard.workers.runtime) and the judgment of ``judgment.py``:

- the planner asks for the incident's first requests; links what it reads to the explanations it holds
  (weighed evidence only); puts an explanation forward once its evidence is known, with the check that
  settles it and the plan it leads to; and reviews every plan the workspace flags: withdrawn when weighed
  evidence challenges or a check refuted what it rests on, retained otherwise once no work is pending;
- the verifier turns each completed check into a verification of the claim it was asked for (an
  incomplete check is ``inconclusive``);
- a tool specialist claims a request of its kind and reports what the incident's source returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.domain.principals import same_principal
from caseboard.evaluation.incident import EvaluationIncident
from caseboard.evaluation.judgment import discounted, iso, parse_time, relations, request_id
from caseboard.evaluation.tools import Tools
from caseboard.workers.runtime import View

CHECK_PREFIX = "check-"
REST = "-rest"
"""The controller asks for the rest of an incomplete check under the check's id and this suffix."""
WINDOW = timedelta(hours=2)
"""A query covers the two hours either side of the opening."""


def check_request(hypothesis: str) -> str:
    return CHECK_PREFIX + hypothesis


def claim_of(check: str) -> str:
    """The claim a check request is for (the rest of an incomplete check is for the same claim)."""
    claim = check.removeprefix(CHECK_PREFIX)
    while claim.endswith(REST):
        claim = claim.removesuffix(REST)
    return claim


def specialist(kind: str) -> str:
    """The principal of the specialist of ``kind`` (the controller's naming)."""
    return f"{kind.replace('_', '-')}-specialist"


@dataclass
class Planner:
    incident: EvaluationIncident
    principal: str = "planner-1"
    role: Role = Role.PLANNER
    linked: set[tuple[str, str]] = field(default_factory=set)
    discounted: dict[str, str] = field(default_factory=dict)

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind != "turn":
            return None
        if not view["work"]:
            return [
                {
                    "type": "work_request",
                    "request_id": request_id(kind, 1),
                    "kind": kind,
                    "target": f"{self.incident.scope['service']} {kind.replace('_', ' ')}",
                }
                for kind in self.incident.first_requests
            ]
        known = {o["id"]: o for o in view["observations"]}
        held = {h["id"]: h for h in view["hypotheses"]}
        bearing = relations(self.incident)
        items: list[dict[str, Any]] = []
        for oid in sorted(known):
            relation = bearing.get(oid)
            if relation is None or relation.hypothesis not in held or (oid, relation.hypothesis) in self.linked:
                continue
            self.linked.add((oid, relation.hypothesis))
            why = discounted(known[oid], self.incident)
            if why is not None:
                self.discounted[oid] = why
                continue
            items.append(
                {
                    "type": "link",
                    "observation": oid,
                    "hypothesis": relation.hypothesis,
                    "relation": relation.relation,
                    "rationale": relation.rationale,
                }
            )
        for candidate in self.incident.candidates:
            if candidate.id in held or not all(s in known for s in candidate.suggested_by):
                continue
            challenging = []
            for oid in sorted(known):
                relation = bearing.get(oid)
                if relation and relation.hypothesis == candidate.id and oid not in candidate.suggested_by:
                    self.linked.add((oid, candidate.id))
                    why = discounted(known[oid], self.incident)
                    if why is not None:
                        self.discounted[oid] = why
                    elif relation.relation == "challenges":
                        challenging.append(oid)
            for oid in candidate.suggested_by:
                self.linked.add((oid, candidate.id))
            items += [
                {
                    "type": "hypothesis",
                    "id": candidate.id,
                    "statement": candidate.statement,
                    "supporting_evidence": list(candidate.suggested_by),
                    "challenging_evidence": challenging,
                },
                {
                    "type": "work_request",
                    "request_id": check_request(candidate.id),
                    "kind": candidate.check,
                    "target": f"{self.incident.scope['service']}: {candidate.check.replace('_', ' ')}",
                    "question": f"Does the check confirm: {candidate.statement}?",
                },
                {
                    "type": "proposal",
                    "id": candidate.proposal,
                    "summary": candidate.plan,
                    "based_on_workspace_version": view["workspace_version"],
                    "depends_on": [candidate.id],
                },
            ]
        items += self._reviews(view, held)
        return items or None

    def _reviews(self, view: View, held: dict[str, Any]) -> list[dict[str, Any]]:
        """A review of every flagged plan: withdrawn when what it rests on is challenged or refuted."""
        reviews: list[dict[str, Any]] = []
        challenged = {h: o for (o, h) in self.linked if o not in self.discounted and self._challenges(o, h)}
        for proposal in view["proposals"]:
            if proposal["status"] != "requires_revalidation":
                continue
            basis = proposal["depends_on"]
            broken = [h for h in basis if held.get(h, {}).get("status") == "refuted" or h in challenged]
            if broken:
                reviews.append(
                    {
                        "type": "review",
                        "proposal": proposal["id"],
                        "decision": "withdrawn",
                        "what_changed": "; ".join(
                            f"{h} is refuted"
                            if held.get(h, {}).get("status") == "refuted"
                            else f"{challenged[h]} challenges {h}"
                            for h in broken
                        ),
                        "affected_assumptions": broken,
                        "based_on_workspace_version": view["workspace_version"],
                    }
                )
            elif not view["pending_work"]:
                reviews.append(
                    {
                        "type": "review",
                        "proposal": proposal["id"],
                        "decision": "retained",
                        "what_changed": "the changes since its basis leave what it rests on standing",
                        "affected_assumptions": list(basis),
                        "based_on_workspace_version": view["workspace_version"],
                    }
                )
        return reviews

    def _challenges(self, observation: str, hypothesis: str) -> bool:
        relation = relations(self.incident).get(observation)
        return bool(relation and relation.hypothesis == hypothesis and relation.relation == "challenges")


@dataclass
class Verifier:
    tools: Tools
    principal: str = "verifier-1"
    role: Role = Role.VERIFIER
    done: set[str] = field(default_factory=set)

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        if notification.kind not in ("claim_to_check", "turn"):
            return None
        held = {h["id"]: h for h in view["hypotheses"]}
        items = []
        for work in view["work"]:
            claim = claim_of(work["request_id"])
            if not work["request_id"].startswith(CHECK_PREFIX) or work["status"] != "completed":
                continue
            if work["request_id"] in self.done or held.get(claim, {}).get("status") not in ("supported", "challenged"):
                continue
            self.done.add(work["request_id"])
            finding = self.tools.served.get(work["request_id"])
            verdict = finding.verdict if finding and finding.completed and finding.verdict else "inconclusive"
            items.append({"type": "verification", "claim": claim, "check": work["request_id"], "result": verdict})
        return items or None


@dataclass
class ToolSpecialist:
    """A read-only diagnostic source behind a specialist: claims a request of its kind, then reports."""

    kind: str
    tools: Tools
    principal: str = ""
    role: Role = Role.SPECIALIST

    def __post_init__(self) -> None:
        self.principal = self.principal or specialist(self.kind)

    def delay_s(self, request: str) -> int:
        return self.tools.serve(request, self.kind).delay_s

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        work = next((w for w in view["work"] if w["request_id"] == notification.subject), None)
        if work is None or work["kind"] != self.kind:
            return None
        if work["status"] == "awaiting_result":
            lease = self.delay_s(work["request_id"]) + 3600
            return [{"type": "work_claim", "request_id": work["request_id"], "lease_s": lease}]
        if work["status"] != "claimed" or not same_principal(work["holder"], self.principal):
            return None
        finding = self.tools.serve(work["request_id"], self.kind)
        opened = parse_time(self.tools.incident.opened_at)
        result: dict[str, Any] = {
            "type": "work_result",
            "request_id": work["request_id"],
            "generation": work["generation"],
            "status": "completed",
            "summary": finding.summary,
            "query": {
                "time_range": [iso(opened - WINDOW), iso(opened + WINDOW)],
                "filters": {"service": self.tools.incident.scope["service"]},
                "targets": list(finding.targets),
                "completed": finding.completed,
            },
        }
        observation = self.tools.observation(finding)
        if observation is not None:
            result["observation"] = observation
        return [result]
