"""A workspace on the in-memory ledger with a clock the test controls, and builders for contribution items."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.errors import Refusal
from caseboard.domain.outcome import Accepted, Outcome
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.reducers import get_reducer

T0 = datetime(2026, 3, 2, 14, 0, tzinfo=UTC)
LIMITS = {
    "max_selected_items": 20,
    "max_investigation_cycles": 6,
    "max_open_questions": 10,
    "max_proposals": 10,
    "max_pending_work": 10,
}
ROLES = ("operator", "planner", "specialist", "reporter", "verifier", "controller")


class FakeClock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Board:
    """One workspace: submit items as a role, read the ledger head and the projection."""

    def __init__(self, workspace_id: str = "ws-1", *, trust_timestamps: bool = False, url: str = "memory://") -> None:
        self.workspace_id = workspace_id
        self.ledger: EventsourcingLedger = open_ledger(url)
        self.clock = FakeClock()
        self.coordinator = Coordinator(self.ledger, clock=self.clock, trust_timestamps=trust_timestamps)

    def envelope(
        self, role: str, items: list[dict[str, Any]], principal: str | None = None, **extra: Any
    ) -> dict[str, Any]:
        return {
            "workspace_id": extra.pop("workspace_id", self.workspace_id),
            "author": {"principal": principal or f"{role}-1", "role": role},
            "items": items,
            **extra,
        }

    def submit(self, role: str, items: list[dict[str, Any]], principal: str | None = None, **extra: Any) -> Outcome:
        """The outcome of submitting the items as ``principal`` (default ``<role>-1``) in ``role``."""
        return self.raw(json.dumps(self.envelope(role, items, principal, **extra)))

    def raw(self, text: str | bytes) -> Outcome:
        """Parse then submit, the way the command line does: a parse refusal is an outcome too."""
        try:
            contribution = parse_contribution(text)
        except Refusal as refusal:
            return refusal.outcome()
        return self.coordinator.submit(contribution)

    def ok(self, role: str, items: list[dict[str, Any]], principal: str | None = None, **extra: Any) -> Accepted:
        outcome = self.submit(role, items, principal, **extra)
        assert isinstance(outcome, Accepted), outcome
        return outcome

    def open(self, **limits: int) -> Accepted:
        return self.ok("operator", [open_item(**limits)])

    @property
    def head(self) -> int:
        return self.ledger.head(self.workspace_id)

    def folded(self, reducer_name: str) -> Any:
        """The workspace's state folded from its ledger by the reducer ``reducer_name`` (any registered one)."""
        reducer = get_reducer(reducer_name)
        return reducer.fold(reducer.initial(self.workspace_id), self.ledger.read(self.workspace_id))

    def show(self, version: int | None = None) -> dict[str, Any]:
        return self.coordinator.workspaces.show(self.workspace_id, version)

    def proposal_status(self, proposal_id: str, version: int | None = None) -> str:
        return str(next(p["status"] for p in self.show(version)["proposals"] if p["id"] == proposal_id))

    def hypothesis_status(self, hypothesis_id: str) -> str:
        return str(next(h["status"] for h in self.show()["hypotheses"] if h["id"] == hypothesis_id))

    def observation(self, observation_id: str, version: int | None = None) -> dict[str, Any]:
        return next(o for o in self.show(version)["observations"] if o["id"] == observation_id)

    def work(self, request_id: str) -> dict[str, Any]:
        return next(w for w in self.show()["work"] if w["request_id"] == request_id)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def open_item(**limits: int) -> dict[str, Any]:
    return {
        "type": "open",
        "scope": {"tenant_id": "tenant-a", "environment": "production", "service": "payments-api"},
        "goal": "Find why logins fail",
        "runtime_limits": {**LIMITS, **limits},
        "execution_mode": "read_only",
    }


def obs(obs_id: str, statement: str = "auth failures rose at 14:03", **fields: Any) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": statement,
        "source": {"system": "logs", "instance": "auth-1"},
        "event_time": iso(T0),
        "event_time_quality": "verified",
        **fields,
    }


def hyp(hyp_id: str, statement: str = "the certificate change broke logins", **fields: Any) -> dict[str, Any]:
    return {"type": "hypothesis", "id": hyp_id, "statement": statement, **fields}


def link(observation: str, hypothesis: str, relation: str = "supports") -> dict[str, Any]:
    return {"type": "link", "observation": observation, "hypothesis": hypothesis, "relation": relation}


def question(question_id: str, about: str | None = None) -> dict[str, Any]:
    item = {"type": "question", "id": question_id, "text": "which hosts were affected?"}
    return item if about is None else {**item, "about": about}


def answer(question_id: str, *evidence: str) -> dict[str, Any]:
    return {"type": "answer", "question": question_id, "text": "all of them", "evidence": list(evidence)}


def proposal(proposal_id: str, basis: int, *depends_on: str) -> dict[str, Any]:
    return {
        "type": "proposal",
        "id": proposal_id,
        "summary": "roll back the certificate",
        "based_on_workspace_version": basis,
        "depends_on": list(depends_on),
    }


def review(proposal_id: str, decision: str, against: int | None = None) -> dict[str, Any]:
    """A review; ``against`` is the version it was made against (``based_on_workspace_version``)."""
    item = {"type": "review", "proposal": proposal_id, "decision": decision, "what_changed": "checked again"}
    return item if against is None else {**item, "based_on_workspace_version": against}


def work_request(request_id: str) -> dict[str, Any]:
    return {"type": "work_request", "request_id": request_id, "kind": "log_query", "target": "auth logs"}


def claim(request_id: str, lease_s: int = 300) -> dict[str, Any]:
    return {"type": "work_claim", "request_id": request_id, "lease_s": lease_s}


def renew(request_id: str, generation: int, lease_s: int = 300) -> dict[str, Any]:
    return {"type": "work_renew", "request_id": request_id, "generation": generation, "lease_s": lease_s}


COVERING = {
    "time_range": ["2026-01-01T00:00:00Z", "2027-12-31T00:00:00Z"],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
    "completed": True,
}
"""A query that covers every event time these boards use: a result without a query of its own states it, so
that a verification or an answer may settle on it (rule 1 of docs/rules-of-evidence.md); ``query=None``
leaves it out."""


def result(request_id: str, generation: int, status: str = "completed", **fields: Any) -> dict[str, Any]:
    item = {
        "type": "work_result",
        "request_id": request_id,
        "generation": generation,
        "status": status,
        "summary": "query ran",
        "query": COVERING,
        **fields,
    }
    return {key: value for key, value in item.items() if value is not None or key != "query"}


def reclaim(request_id: str) -> dict[str, Any]:
    return {"type": "work_reclaim", "request_id": request_id, "reason": "the specialist went quiet"}


def verification(claim_id: str, check: str, outcome: str) -> dict[str, Any]:
    return {"type": "verification", "claim": claim_id, "check": check, "result": outcome}


def selection(select: tuple[str, ...] = (), deselect: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "selection", "select": list(select), "deselect": list(deselect), "reason": "focus"}


def cycle(number: int) -> dict[str, Any]:
    return {"type": "cycle", "number": number, "scheduled": ["planner-1"]}


def status(to: str) -> dict[str, Any]:
    return {"type": "status", "to": to, "reason": "because"}


def reopen(owner: str = "operator-1", **limits: int) -> dict[str, Any]:
    return {"type": "reopen", "owner": owner, "runtime_limits": limits}


def judgment(invocation_id: str, version: int = 1) -> dict[str, Any]:
    return {
        "type": "judgment",
        "invocation_id": invocation_id,
        "component": "triage",
        "model": "m-1",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": version,
    }
