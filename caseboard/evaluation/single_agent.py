"""The single-agent arm: one bounded agent with the same sources, the same judgment and the same budgets.

It is the baseline the workspace has to beat, so it gets everything the workspace's participants get
except the coordination: no coordinator, no reducer, no controller, no dependency tracking. Its state is its
own notes (a transcript it re-reads in full at every step). At each step it:

1. takes in what its tool calls returned and any evidence pushed to it since its last step;
2. weighs each observation's bearing on the explanations it holds (``judgment.discounted``: an unverified
   clock or an instance outside the scope is not weighed), and notes supports and challenges;
3. puts an explanation forward once its evidence is known, drafts the plan it leads to and calls the check
   that settles it; a check that comes back incomplete is called once more for the rest;
4. verifies its own claims from the checks' results (there is no separate verifier);
5. stops when it has nothing left to call: the outcome of its explanations (``judgment.outcome_of``), or
   ``budget_exhausted`` when its steps (the cycle budget) or its tokens run out.

What it does not do, because nothing in its design does it: it re-examines a drafted plan only when a check
refutes the claim under it (a plan whose claim was later challenged, or whose evidence has since expired,
is still handed over as drafted); it judges an observation's freshness when it reads it, not when it uses it;
and its tool output carries no flag for instruction-like text. Tool calls within a step run in parallel and
the step waits for the slowest, as parallel tool calls do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from caseboard.evaluation.ending import Ending, Plan
from caseboard.evaluation.incident import EvaluationIncident
from caseboard.evaluation.judgment import Explanation, discounted, iso, outcome_of, parse_time, relations, request_id
from caseboard.evaluation.tools import Tools

THINK_S = 30
PROMPT_TOKENS = 400
CONTEXT_CHARS = 24_000
"""The agent's context window, the workspace arm's view budget: the part of its notes a step reads (and pays
for)."""


@dataclass
class Held:
    id: str
    status: str = "proposed"
    supports: list[str] = field(default_factory=list)
    challenges: list[str] = field(default_factory=list)


@dataclass
class SingleAgent:
    incident: EvaluationIncident
    tools: Tools
    step_budget: int
    token_budget: int | None = None
    now: int = 0
    steps: int = 0
    tokens: int = 0
    calls: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)
    trace: list[dict[str, Any]] = field(default_factory=list)
    received: dict[str, dict[str, Any]] = field(default_factory=dict)
    held: dict[str, Held] = field(default_factory=dict)
    plans: dict[str, Plan] = field(default_factory=dict)
    weighed: set[tuple[str, str]] = field(default_factory=set)
    judged: set[str] = field(default_factory=set)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each call's result, by request id, in the order they came back."""
    delivered: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    status: str = "investigating"
    reason: str = ""

    def run(self) -> None:
        arrivals = sorted(self.incident.arrivals, key=lambda a: a.after_s)
        while self.status == "investigating":
            while self.delivered < len(arrivals) and arrivals[self.delivered].after_s <= self.now:
                arrival = arrivals[self.delivered]
                body = self.tools.observation(arrival.finding)
                self.delivered += 1
                if body is not None:
                    self.note({"pushed": arrival.kind, "summary": arrival.finding.summary, "observation": body})
                    self.received[str(body["id"])] = body
            if self.steps >= self.step_budget:
                self.status, self.reason = "budget_exhausted", f"all {self.step_budget} steps are used"
                break
            if self.token_budget is not None and self.tokens >= self.token_budget:
                self.status, self.reason = "budget_exhausted", f"the token budget ({self.token_budget}) is spent"
                break
            self.step()
        self.trace.append({"at": iso(self.clock()), "end": self.status, "reason": self.reason})

    def clock(self) -> Any:
        return parse_time(self.incident.opened_at) + timedelta(seconds=self.now)

    def note(self, entry: dict[str, Any]) -> None:
        self.notes.append({"at": iso(self.clock()), **entry})

    def step(self) -> None:
        read = json.dumps(self.notes, sort_keys=True, separators=(",", ":"))[-CONTEXT_CHARS:]
        spent = PROMPT_TOKENS + len(read) // 4
        self.tokens += spent
        self.steps += 1
        before = len(self.notes)
        calls = self.decide()
        self.now += THINK_S
        if not calls and len(self.notes) == before:
            self.conclude()
            self.trace.append({"step": self.steps, "at": iso(self.clock()), "read_tokens": spent, "concluded": True})
            return
        waited = 0
        returned = []
        for rid, kind in calls:
            finding = self.tools.serve(rid, kind)
            waited = max(waited, finding.delay_s)
            returned.append((rid, kind, finding))
        self.now += waited
        for rid, kind, finding in returned:
            body = self.tools.observation(finding)
            result = {"request_id": rid, "kind": kind, "summary": finding.summary, "completed": finding.completed}
            if body is not None:
                result["observation"] = body
                self.received[str(body["id"])] = body
            self.results[rid] = result
            self.note({"result": result})
        self.trace.append(
            {
                "step": self.steps,
                "at": iso(self.clock()),
                "read_tokens": spent,
                "calls": [{"request_id": rid, "kind": kind} for rid, kind in calls],
                "notes": self.notes[before:],
            }
        )

    def call(self, kind: str, rid: str | None = None) -> tuple[str, str]:
        self.calls += 1
        if rid is None:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            rid = request_id(kind, self.counts[kind])
        return rid, kind

    def decide(self) -> list[tuple[str, str]]:
        """What this step does: notes taken now, and the tool calls it makes."""
        if self.steps == 1:
            return [self.call(kind) for kind in self.incident.first_requests]
        calls: list[tuple[str, str]] = []
        bearing = relations(self.incident)
        for oid in sorted(self.received):
            relation = bearing.get(oid)
            if relation is None or relation.hypothesis not in self.held or (oid, relation.hypothesis) in self.weighed:
                continue
            self.weighed.add((oid, relation.hypothesis))
            why = discounted(self.received[oid], self.incident)
            if why is not None:
                self.note({"discounted": oid, "why": why})
                continue
            held = self.held[relation.hypothesis]
            (held.challenges if relation.relation == "challenges" else held.supports).append(oid)
            if relation.relation == "challenges" and held.status == "supported":
                held.status = "challenged"
            self.note({"weighed": oid, relation.relation: relation.hypothesis})
        for candidate in self.incident.candidates:
            if candidate.id in self.held or not all(s in self.received for s in candidate.suggested_by):
                continue
            held = Held(candidate.id, "supported", list(candidate.suggested_by))
            self.held[candidate.id] = held
            for oid in candidate.suggested_by:
                self.weighed.add((oid, candidate.id))
            self.plans[candidate.proposal] = Plan(candidate.proposal, "current", (candidate.id,))
            self.note({"explanation": candidate.id, "statement": candidate.statement, "plan": candidate.plan})
            calls.append(self.call(candidate.check, f"check-{candidate.id}"))
        for rid in list(self.results):
            if rid in self.judged or not rid.startswith("check-"):
                continue
            self.judged.add(rid)
            claim = rid.removeprefix("check-").removesuffix("-rest")
            finding = self.tools.served[rid]
            if not finding.completed and not rid.endswith("-rest"):
                calls.append(self.call(finding_kind(self.incident, claim), f"{rid}-rest"))
                continue
            verdict = finding.verdict if finding.completed and finding.verdict else "inconclusive"
            held = self.held[claim]
            if verdict in ("confirmed", "refuted"):
                held.status = verdict
            self.note({"verified": claim, "by": rid, "result": verdict})
            if verdict == "refuted":
                for plan in self.plans.values():
                    if claim in plan.depends_on:
                        plan.status = "withdrawn"
        return calls

    def conclude(self) -> None:
        outcome, _ = outcome_of(self.explanations())
        self.status = "human_review_required" if outcome in ("supported", "human_review_required") else outcome
        self.reason = f"nothing left to call: {outcome}"

    def explanations(self) -> list[Explanation]:
        return [Explanation(h.id, h.status, bool(h.challenges)) for h in self.held.values()]

    def ending(self, record: str) -> Ending:
        return Ending(
            arm="single-agent",
            incident=self.incident.id,
            status=self.status,
            reason=self.reason,
            explanations=self.explanations(),
            weighed_challenges={h.id: sorted(h.challenges) for h in sorted(self.held.values(), key=lambda h: h.id)},
            plans=list(self.plans.values()),
            received=dict(self.received),
            flagged=[],
            rechecked=[],
            elapsed_s=self.now,
            cycles=self.steps,
            tool_calls=self.calls,
            tokens=self.tokens,
            invocations=self.steps,
            revisions=0,
            withdrawals=sum(p.status == "withdrawn" for p in self.plans.values()),
            refused=0,
            record=record,
            after_end=sorted(
                str(a.finding.observation["id"])
                for a in self.incident.arrivals
                if a.finding.observation and str(a.finding.observation["id"]) not in self.received
            ),
        )


def finding_kind(incident: EvaluationIncident, claim: str) -> str:
    return next(c.check for c in incident.candidates if c.id == claim)
