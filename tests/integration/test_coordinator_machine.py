"""The coordinator driven as a state machine (Hypothesis ``RuleBasedStateMachine``) against a small reference
model, on SQLite and on PostgreSQL, with the guarantees checked after every step (issue 20).

Several principals submit observations, hypotheses, links, proposals, reviews, work requests, claims,
renewals, results and reclaims, retry with idempotency keys and write with stale or future
``expected_version``s while the clock moves (and leases lapse). The model predicts the protocol's outcomes:
the version each commit takes, ``version_conflict`` / ``expected_version_ahead``, ``duplicate_id``,
``lease_held``, ``fenced``, an idempotent retry's original outcome and ``idempotency_mismatch``. Where the
rules leave the outcome to the reducer (a review of a withdrawn proposal, say) the model takes what the
coordinator answered, and the invariants judge it. After every step:

- versions are contiguous from 1 and the head is the model's; a refusal appended nothing;
- a fenced write never lands: each landed renewal or result carries the generation of the live claim of its
  holder, as a fold of the ledger's own claims (not the reducer's) says;
- an idempotency key of a principal is in at most one commit;
- the cached projection equals a fresh fold of the ledger (a cold cache) and the reducer's pure fold;
- a proposal's basis version is the one it was submitted with, for ever;
- challenging evidence never removes support (a hypothesis's supports only grow);
- a proposal is ``current`` only if no material change touching its dependencies came after its basis or its
  last retaining review (the oracle of tests/unit/test_review_property.py, which reads only the commits);
- execution mode is ``read_only``;
- a verification that landed rests on a check neither its claim's author nor an author of the claim's support
  ran (principals compared as ``same_principal`` does), as the ledger's own commits say (issue 33, rule 3);
- no request or claim landed between a ``budget_exhausted`` and the next reopen, nor a status change back to
  ``investigating`` (issue 33, rule 10);
- an empty result proves nothing without its coverage (rule 1 of docs/rules-of-evidence.md): a hypothesis is
  ``confirmed`` or ``refuted`` only as the last verification that settled it by the oracle's reading of
  coverage (tests/oracles.py), and every verification that did not is listed as ``coverage_insufficient``;
- a reopen that landed names an owner and leaves a budget of at least one cycle, and one that changed a limit is
  a change of constraints: no proposal is ``current`` or ``accepted`` unless checked against a version after it;
  what the projection lists as late counterevidence arrived late (issue 33, rule 2).
- nothing submitted in good faith is lost at a limit (rule 9, ADR 0168): a question over ``max_open_questions``
  beside a contradiction is held, the contradiction lands, the held item is in the ledger as submitted and in
  the projection's ``held``, never among its questions, and an ``investigating`` workspace escalates.
At the end of each run, a replay of the workspace's export equals the projection.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.errors import Reason, Refusal
from caseboard.domain.principals import same_principal
from caseboard.ledger import EventsourcingLedger, open_ledger
from caseboard.projections import Workspaces
from caseboard.reducers import get_reducer
from caseboard.replay.records import read_file
from caseboard.replay.transfer import export
from tests.oracles import material_versions, reopen_limit_changes, reviewed_against, settled_verifications
from tests.unit.board import T0, FakeClock, iso, open_item

REASONS = {reason.value for reason in Reason}
OBS = ("o1", "o2", "o3", "o4")
HYP = ("h1", "h2")
PROPOSALS = ("p1", "p2")
REQUESTS = ("r1", "r2")
QUESTIONS = ("q1", "q2")
SPECIALISTS = ("specialist-1", "specialist-2")
CLAIMANTS = (*SPECIALISTS, "planner-1")  # a planner may run a check as a specialist, and then not verify on it
PLANNERS = ("planner-1", "planner-2")
QUERIES: dict[str, dict[str, Any] | None] = {
    "none": None,
    "covering": {
        "time_range": [iso(T0 - timedelta(hours=1)), iso(T0 + timedelta(hours=3))],
        "filters": {"service": "payments-api"},
        "targets": ["auth-1"],
        "completed": True,
    },
    "the day before": {
        "time_range": [iso(T0 - timedelta(days=1)), iso(T0 - timedelta(hours=20))],
        "filters": {"service": "payments-api"},
        "targets": ["auth-1"],
        "completed": True,
    },
    "no targets": {
        "time_range": [iso(T0 - timedelta(hours=1)), iso(T0 + timedelta(hours=3))],
        "filters": {"service": "payments-api"},
        "targets": [],
        "completed": True,
    },
}
"""What a result's query covered: the evidence of the run (event times T0..T0+90 min), or less."""
NUMBERS = itertools.count()
ANY = None
ESCALATED = "human_review_required"
"""An outcome the model leaves to the rules: any accepted commit or any known refusal."""


@dataclass
class Request:
    generation: int = 0
    holder: str | None = None
    expires: float = 0.0  # seconds since T0
    done: bool = False
    claims: list[tuple[str, int]] = field(default_factory=list)  # (holder, generation) of every claim


@dataclass
class Model:
    """What the protocol guarantees, kept apart from the coordinator and the reducers."""

    version: int = 1
    observations: set[str] = field(default_factory=set)
    hypotheses: set[str] = field(default_factory=set)
    proposals: dict[str, int] = field(default_factory=dict)  # id -> the basis it was submitted with
    requests: dict[str, Request] = field(default_factory=dict)
    keyed: dict[tuple[str, str], tuple[str, dict[str, Any]]] = field(default_factory=dict)
    now: float = 0.0
    supports: dict[str, set[str]] = field(default_factory=dict)  # hypothesis -> supports seen last step
    stopped: bool = False  # the budget was exhausted and no reopen came since
    questions: set[str] = field(default_factory=set)  # recorded (not held) questions, all still open


class CoordinatorMachine(RuleBasedStateMachine):
    url = "memory://"
    ledger: EventsourcingLedger

    def __init__(self) -> None:
        super().__init__()
        self.workspace = f"ws-machine-{next(NUMBERS)}"
        self.ledger = open_ledger(self.url)
        self.clock = FakeClock()
        self.coordinator = Coordinator(self.ledger, clock=self.clock)
        self.model = Model()
        self.history: list[str] = []
        self.fresh = False  # the last submission made a new commit (not an idempotent retry's answer)

    # -- submitting, and what the model expects -------------------------------------------------------------

    def submit(
        self,
        role: str,
        principal: str,
        items: list[dict[str, Any]],
        expect: set[str] | None,
        *,
        expected_version: int | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """Submit and check the outcome against ``expect`` ("ok" or reason tokens; ``ANY``: whatever the rules
        say), the version it takes and, for a key used before, the original outcome."""
        body: dict[str, Any] = {
            "workspace_id": self.workspace,
            "author": {"principal": principal, "role": role},
            "items": items,
        }
        if expected_version is not None:
            body["expected_version"] = expected_version
        if key is not None:
            body["idempotency_key"] = key
        text = json.dumps(body, sort_keys=True)
        content = json.dumps([body["author"], items], sort_keys=True)  # what a key promises: who, which items
        before = self.ledger.head(self.workspace)
        earlier = self.model.keyed.get((principal, key)) if key is not None else None
        self.fresh = False
        if earlier is not None:  # a retry, whatever its expected version now: the key is checked first
            expect = {"ok"} if earlier[0] == content else {Reason.IDEMPOTENCY_MISMATCH.value}
        elif expected_version is not None and expected_version < self.model.version:
            expect = {Reason.VERSION_CONFLICT.value}
        elif expected_version is not None and expected_version > self.model.version:
            expect = {Reason.EXPECTED_VERSION_AHEAD.value}
        try:
            outcome = self.coordinator.submit(parse_contribution(text)).as_json()
        except Refusal as refusal:
            outcome = refusal.outcome().as_json()
        self.history.append(f"{role}/{principal} {items} ev={expected_version} key={key} -> {outcome}")
        got = "ok" if outcome["ok"] else outcome["reason"]
        assert got == "ok" or got in REASONS, outcome
        if expect is not ANY:
            assert got in expect, f"expected {sorted(expect)}, got {outcome}"
        after = self.ledger.head(self.workspace)
        if earlier is not None and earlier[0] == content:
            assert outcome == {**earlier[1], "idempotent_replay": True}, "a retry must return the original outcome"
            assert after == before, "an idempotent retry appended"
            return outcome
        if outcome["ok"]:
            assert outcome["workspace_version"] == before + 1 == after, (outcome, before, after)
            self.model.version = after
            self.fresh = True
            if key is not None:
                self.model.keyed[(principal, key)] = (content, outcome)
        else:
            assert after == before, f"a refusal appended: {outcome}"
            if got == Reason.VERSION_CONFLICT.value:
                assert outcome.get("current_version") == before, outcome
        return outcome

    def expectation(self, draw: st.DataObject) -> tuple[int | None, str | None]:
        """Mostly no ``expected_version`` or the current one; sometimes a stale or a future one. Sometimes an
        idempotency key, sometimes one used before (a retry, or other content under it)."""
        choice = draw.draw(st.sampled_from(["none", "none", "current", "stale", "ahead"]))
        version = {
            "none": None,
            "current": self.model.version,
            "stale": max(1, self.model.version - 1),
            "ahead": self.model.version + 1,
        }[choice]
        keys = [key for (_, key) in self.model.keyed]
        key = draw.draw(st.sampled_from([None, None, f"k-{len(self.history)}", *keys[-2:]]))
        return version, key

    # -- rules ----------------------------------------------------------------------------------------------

    @initialize()
    def open_workspace(self) -> None:
        body = {"workspace_id": self.workspace, "author": {"principal": "operator-1", "role": "operator"}}
        opening = open_item(max_open_questions=1)  # the second question is over the limit (rule 9)
        outcome = self.coordinator.submit(parse_contribution(json.dumps({**body, "items": [opening]})))
        assert outcome.ok and self.ledger.head(self.workspace) == 1
        request = {"type": "work_request", "request_id": REQUESTS[0], "kind": "log_query", "target": "auth logs"}
        self.submit("planner", "planner-1", [request], {"ok"})  # work to claim from the first step on
        self.model.requests[REQUESTS[0]] = Request()
        seen = {
            "type": "observation",
            "id": OBS[0],
            "statement": "auth failures rose",
            "source": {"system": "logs", "instance": "auth-1"},
            "event_time": iso(T0),
            "event_time_quality": "verified",
        }
        cause = {"type": "hypothesis", "id": HYP[0], "statement": "the change", "supporting_evidence": [OBS[0]]}
        self.submit("specialist", "specialist-1", [seen], {"ok"})  # and a hypothesis to propose on and challenge
        self.submit("planner", "planner-1", [cause], {"ok"})
        self.model.observations.add(OBS[0])
        self.model.hypotheses.add(HYP[0])

    @rule(data=st.data(), obs_id=st.sampled_from(OBS), who=st.sampled_from(SPECIALISTS), minutes=st.integers(0, 90))
    def observe(self, data: st.DataObject, obs_id: str, who: str, minutes: int) -> None:
        item = {
            "type": "observation",
            "id": obs_id,
            "statement": "auth failures rose",
            "source": {"system": "logs", "instance": "auth-1"},
            "event_time": iso(T0 + timedelta(minutes=minutes)),
            "event_time_quality": "verified",
        }
        if minutes > 60:
            item["expires_at"] = iso(T0 + timedelta(minutes=minutes - 50))
        version, key = self.expectation(data)
        expect = {Reason.DUPLICATE_ID.value} if obs_id in self.model.observations else {"ok"}
        self.submit("specialist", who, [item], expect, expected_version=version, key=key)
        if self.fresh:
            self.model.observations.add(obs_id)

    @rule(question_id=st.sampled_from(QUESTIONS), who=st.sampled_from(SPECIALISTS))
    def challenge_and_ask(self, question_id: str, who: str) -> None:
        """A specialist's contradicting observation, its challenge and a question: at max_open_questions the
        question is held and the contradiction lands all the same (rule 9)."""
        obs_id = f"oq{len(self.history)}"
        seen = {
            "type": "observation",
            "id": obs_id,
            "statement": "auth failures before the change",
            "source": {"system": "logs", "instance": "auth-1"},
            "event_time": iso(T0 - timedelta(minutes=30)),
            "event_time_quality": "verified",
        }
        challenge = {"type": "link", "observation": obs_id, "hypothesis": HYP[0], "relation": "challenges"}
        ask = {"type": "question", "id": question_id, "text": "did it start before the change?", "about": HYP[0]}
        expect = {Reason.DUPLICATE_ID.value} if question_id in self.model.questions else {"ok"}
        outcome = self.submit("specialist", who, [seen, challenge, ask], expect)
        if not outcome["ok"]:
            return
        self.model.observations.add(obs_id)
        if self.model.questions:  # max_open_questions is 1, and no question is ever answered here
            assert [entry["index"] for entry in outcome.get("held", ())] == [2], outcome
        else:
            assert "held" not in outcome, outcome
            self.model.questions.add(question_id)

    @rule(data=st.data(), hyp_id=st.sampled_from(HYP))
    def hypothesize(self, data: st.DataObject, hyp_id: str) -> None:
        supports = sorted(data.draw(st.sets(st.sampled_from(sorted(self.model.observations) or ["o1"]), max_size=2)))
        item = {
            "type": "hypothesis",
            "id": hyp_id,
            "statement": "the certificate change",
            "supporting_evidence": supports,
        }
        if hyp_id in self.model.hypotheses:
            expect: set[str] | None = {Reason.DUPLICATE_ID.value}
        elif set(supports) - self.model.observations:
            expect = {Reason.UNKNOWN_REFERENCE.value}
        else:
            expect = {"ok"}
        version, key = self.expectation(data)
        self.submit("planner", data.draw(st.sampled_from(PLANNERS)), [item], expect, expected_version=version, key=key)
        if self.fresh:
            self.model.hypotheses.add(hyp_id)

    @precondition(lambda self: self.model.observations and self.model.hypotheses)
    @rule(data=st.data(), relation=st.sampled_from(["supports", "challenges"]))
    def link(self, data: st.DataObject, relation: str) -> None:
        item = {
            "type": "link",
            "observation": data.draw(st.sampled_from(sorted(self.model.observations))),
            "hypothesis": data.draw(st.sampled_from(sorted(self.model.hypotheses))),
            "relation": relation,
        }
        version, key = self.expectation(data)
        self.submit("planner", "planner-1", [item], ANY, expected_version=version, key=key)

    @rule(
        data=st.data(),
        obs_id=st.sampled_from(OBS),
        hyp_id=st.sampled_from(HYP),
        relation=st.sampled_from(["supports", "challenges"]),
    )
    def observe_and_link(self, data: st.DataObject, obs_id: str, hyp_id: str, relation: str) -> None:
        """Two items in one contribution, the second referring to the first: a refusal of either (a duplicate
        observation, an unknown hypothesis) records neither, and the cache keeps no trace of the first."""
        observation = {
            "type": "observation",
            "id": obs_id,
            "statement": "the certificate was rotated",
            "source": {"system": "changes", "instance": "auth-1"},
            "event_time": iso(T0),
            "event_time_quality": "verified",
        }
        item = {"type": "link", "observation": obs_id, "hypothesis": hyp_id, "relation": relation}
        if obs_id in self.model.observations:
            expect = {Reason.DUPLICATE_ID.value}
        elif hyp_id not in self.model.hypotheses:
            expect = {Reason.UNKNOWN_REFERENCE.value}
        else:
            expect = {"ok"}
        version, key = self.expectation(data)
        self.submit("specialist", "specialist-1", [observation, item], expect, expected_version=version, key=key)
        if self.fresh:
            self.model.observations.add(obs_id)

    @precondition(lambda self: self.model.hypotheses)
    @rule(data=st.data(), proposal_id=st.sampled_from(PROPOSALS), back=st.integers(0, 3))
    def propose(self, data: st.DataObject, proposal_id: str, back: int) -> None:
        basis = max(1, self.model.version - back)
        depends_on = sorted(data.draw(st.sets(st.sampled_from(sorted(self.model.hypotheses)), min_size=1, max_size=2)))
        item = {
            "type": "proposal",
            "id": proposal_id,
            "summary": "roll back the certificate",
            "based_on_workspace_version": basis,
            "depends_on": depends_on,
        }
        expect = {Reason.DUPLICATE_ID.value} if proposal_id in self.model.proposals else {"ok"}
        version, key = self.expectation(data)
        self.submit("planner", "planner-1", [item], expect, expected_version=version, key=key)
        if self.fresh:
            self.model.proposals[proposal_id] = basis

    @precondition(lambda self: self.model.proposals)
    @rule(
        data=st.data(),
        decision=st.sampled_from(["retained", "retained", "revised", "withdrawn"]),
        back=st.integers(0, 2),
    )
    def review(self, data: st.DataObject, decision: str, back: int) -> None:
        item = {
            "type": "review",
            "proposal": data.draw(st.sampled_from(sorted(self.model.proposals))),
            "decision": decision,
            "what_changed": "checked the evidence again",
            "based_on_workspace_version": max(1, self.model.version - back),
        }
        version, key = self.expectation(data)
        self.submit("planner", "planner-1", [item], ANY, expected_version=version, key=key)

    @rule(data=st.data(), request_id=st.sampled_from(REQUESTS))
    def request_work(self, data: st.DataObject, request_id: str) -> None:
        item = {"type": "work_request", "request_id": request_id, "kind": "log_query", "target": "auth logs"}
        if request_id in self.model.requests:
            expect = {Reason.DUPLICATE_ID.value}
        else:
            expect = {Reason.LIMIT_EXCEEDED.value} if self.model.stopped else {"ok"}
        version, key = self.expectation(data)
        self.submit("planner", "planner-1", [item], expect, expected_version=version, key=key)
        if self.fresh:
            self.model.requests[request_id] = Request()

    @precondition(lambda self: self.model.requests)
    @rule(data=st.data(), who=st.sampled_from(CLAIMANTS), lease_s=st.sampled_from([30, 30, 300]))
    def claim(self, data: st.DataObject, who: str, lease_s: int) -> None:
        request_id = data.draw(st.sampled_from(sorted(self.model.requests)))
        request = self.model.requests[request_id]
        live = request.holder is not None and request.expires > self.model.now
        if self.model.stopped:
            expect = {Reason.LIMIT_EXCEEDED.value}
        elif request.done or (live and request.holder == who):
            expect = {Reason.INVALID.value}
        elif live:
            expect = {Reason.LEASE_HELD.value}
        else:
            expect = {"ok"}
        item = {"type": "work_claim", "request_id": request_id, "lease_s": lease_s}
        version, key = self.expectation(data)
        outcome = self.submit("specialist", who, [item], expect, expected_version=version, key=key)
        if self.fresh:
            request.generation += 1
            request.claims.append((who, request.generation))
            assert outcome["items"][0]["generation"] == request.generation, outcome
            request.holder, request.expires = who, self.model.now + lease_s

    @precondition(lambda self: self.model.requests)
    @rule(
        data=st.data(),
        who=st.sampled_from(CLAIMANTS),
        kind=st.sampled_from(["work_result", "work_renew"]),
        stale=st.booleans(),
    )
    def write_under_claim(self, data: st.DataObject, who: str, kind: str, stale: bool) -> None:
        request_id = data.draw(st.sampled_from(sorted(self.model.requests)))
        request = self.model.requests[request_id]
        generation = max(1, request.generation - 1) if stale else max(1, request.generation)
        if request.holder is None or generation != request.generation:
            expect: set[str] = {Reason.FENCED.value}
        elif request.holder != who:
            expect = {Reason.FORBIDDEN.value}
        else:
            expect = {"ok"}
        item: dict[str, Any] = {"type": kind, "request_id": request_id, "generation": generation}
        if kind == "work_result":
            item.update(status="completed", summary="query ran")
            query = QUERIES[data.draw(st.sampled_from(sorted(QUERIES)))]
            if query is not None:
                item["query"] = query
        else:
            item["lease_s"] = 300
        version, key = self.expectation(data)
        self.submit("specialist", who, [item], expect, expected_version=version, key=key)
        if self.fresh:
            if kind == "work_result":
                request.holder, request.done = None, True
            else:
                request.expires = self.model.now + 300

    @precondition(lambda self: self.model.requests)
    @rule(data=st.data(), who=st.sampled_from(CLAIMANTS))
    def claim_after_a_lapse(self, data: st.DataObject, who: str) -> None:
        """The lease of whoever holds the request lapses; someone (perhaps the same specialist) claims it."""
        self.time_passes(400)
        self.claim(data, who, 30)

    @precondition(lambda self: any(len(r.claims) > 1 for r in self.model.requests.values()))
    @rule(data=st.data(), kind=st.sampled_from(["work_result", "work_renew"]))
    def zombie_writes(self, data: st.DataObject, kind: str) -> None:
        """A holder of an earlier claim (its lease lapsed, the request claimed again, perhaps by itself)
        writes under its old generation: always ``fenced``."""
        request_id = data.draw(st.sampled_from(sorted(r for r, q in self.model.requests.items() if len(q.claims) > 1)))
        holder, generation = data.draw(st.sampled_from(self.model.requests[request_id].claims[:-1]))
        item: dict[str, Any] = {"type": kind, "request_id": request_id, "generation": generation}
        item.update({"status": "completed", "summary": "late"} if kind == "work_result" else {"lease_s": 300})
        self.submit("specialist", holder, [item], {Reason.FENCED.value})

    @precondition(lambda self: self.model.requests)
    @rule(data=st.data())
    def reclaim(self, data: st.DataObject) -> None:
        request_id = data.draw(st.sampled_from(sorted(self.model.requests)))
        request = self.model.requests[request_id]
        # a claimed request is reclaimed (fenced); an unclaimed one too, announced again (ADR 0159); a done one not
        expect = {"ok"} if not request.done else {Reason.INVALID.value}
        item = {"type": "work_reclaim", "request_id": request_id, "reason": "lease lapsed"}
        version, key = self.expectation(data)
        self.submit("controller", "controller-1", [item], expect, expected_version=version, key=key)
        if self.fresh:
            request.holder = None

    @precondition(lambda self: any(not r.done for r in self.model.requests.values()))
    @rule(data=st.data(), who=st.sampled_from(["planner-1", "PLANNER-1", "specialist-2", "verifier-2"]))
    def run_check(self, data: st.DataObject, who: str) -> None:
        """A claimant claims a request and reports its result in one contribution, when nobody holds it."""
        request_id = data.draw(st.sampled_from(sorted(r for r, q in self.model.requests.items() if not q.done)))
        request = self.model.requests[request_id]
        live = request.holder is not None and request.expires > self.model.now
        if self.model.stopped:
            expect = {Reason.LIMIT_EXCEEDED.value}
        elif live:
            expect = {Reason.INVALID.value} if same_principal(request.holder, who) else {Reason.LEASE_HELD.value}
        else:
            expect = {"ok"}
        claim = {"type": "work_claim", "request_id": request_id, "lease_s": 300}
        done = {"type": "work_result", "request_id": request_id, "generation": request.generation + 1}
        done.update(status="completed", summary="no chain mismatch found")
        self.submit("specialist", who, [claim, done], expect)
        if self.fresh:
            request.generation += 1
            request.claims.append((who, request.generation))
            request.holder, request.done = None, True

    @precondition(lambda self: self.model.hypotheses and any(r.done for r in self.model.requests.values()))
    @rule(
        data=st.data(),
        who=st.sampled_from(["verifier-1", "Planner-1", "VERIFIER-1"]),
        outcome=st.sampled_from(["confirmed", "refuted", "inconclusive"]),
    )
    def verify_as(self, data: st.DataObject, who: str, outcome: str) -> None:
        """A verifier (perhaps a planner's principal under another case) settles a hypothesis on a check; the
        rules decide, and the invariant judges what landed."""
        item = {
            "type": "verification",
            "claim": data.draw(st.sampled_from(sorted(self.model.hypotheses))),
            "check": data.draw(st.sampled_from(sorted(r for r, q in self.model.requests.items() if q.done))),
            "result": outcome,
        }
        self.submit("verifier", who, [item], ANY)

    @rule(data=st.data(), to=st.sampled_from(["budget_exhausted", "human_review_required", "investigating"]))
    def change_status(self, data: st.DataObject, to: str) -> None:
        """The controller exhausts the budget or escalates; an operator sets the work going again."""
        role = "operator" if to == "investigating" else "controller"
        expect = {Reason.INVALID.value} if to == "investigating" and self.model.stopped else {"ok"}
        item = {"type": "status", "to": to, "reason": "the machine says so"}
        self.submit(role, f"{role}-1", [item], expect)
        if self.fresh and to == "budget_exhausted":
            self.model.stopped = True

    @rule()
    def reopen(self) -> None:
        item = {"type": "reopen", "owner": "operator-2", "runtime_limits": {"max_investigation_cycles": 3}}
        outcome = self.submit("operator", "operator-1", [item], {"ok"} if self.model.stopped else ANY)
        if outcome["ok"]:
            self.model.stopped = False

    @precondition(lambda self: self.model.hypotheses and any(r.done for r in self.model.requests.values()))
    @rule(data=st.data(), result=st.sampled_from(["confirmed", "refuted", "refuted", "inconclusive"]))
    def verify(self, data: st.DataObject, result: str) -> None:
        """A verifier settles a hypothesis on a finished check, whatever the check's query covered."""
        self.verify_on(
            data, data.draw(st.sampled_from(sorted(r for r, q in self.model.requests.items() if q.done))), result
        )

    def verify_on(self, data: st.DataObject, check: str, result: str) -> None:
        item = {
            "type": "verification",
            "claim": data.draw(st.sampled_from(sorted(self.model.hypotheses))),
            "check": check,
            "result": result,
        }
        version, key = self.expectation(data)
        self.submit("verifier", "verifier-1", [item], ANY, expected_version=version, key=key)

    @precondition(lambda self: self.model.hypotheses)
    @rule(data=st.data(), query=st.sampled_from(sorted(QUERIES)), result=st.sampled_from(["confirmed", "refuted"]))
    def check_and_verify(self, data: st.DataObject, query: str, result: str) -> None:
        """A check is requested, claimed and completed with a query that covers the evidence or less; a verifier
        then settles a hypothesis on it. The check is run by a principal that authored no evidence
        and no hypothesis, so that the verification is independent (rule 3)."""
        request_id = f"chk-{len(self.history)}"
        request = {"type": "work_request", "request_id": request_id, "kind": "log_check", "target": "auth logs"}
        if not self.submit("planner", "planner-1", [request], ANY)["ok"]:
            return
        self.model.requests[request_id] = Request(done=True)  # never claimable by the other rules' model
        self.submit(
            "specialist", "specialist-3", [{"type": "work_claim", "request_id": request_id, "lease_s": 300}], {"ok"}
        )
        done: dict[str, Any] = {
            "type": "work_result",
            "request_id": request_id,
            "generation": 1,
            "status": "completed",
            "summary": "nothing found",
        }
        if QUERIES[query] is not None:
            done["query"] = QUERIES[query]
        self.submit("specialist", "specialist-3", [done], {"ok"})
        self.verify_on(data, request_id, result)

    @rule(seconds=st.sampled_from([10, 45, 45, 400]))
    def time_passes(self, seconds: int) -> None:
        self.clock.advance(seconds)
        self.model.now += seconds

    # -- invariants -----------------------------------------------------------------------------------------

    def commits(self) -> list[Commit]:
        return list(self.ledger.read(self.workspace))

    @invariant()
    def versions_are_contiguous_and_the_models(self) -> None:
        versions = [commit.version for commit in self.commits()]
        assert versions == list(range(1, self.model.version + 1)), versions

    @invariant()
    def no_fenced_write_landed_and_no_key_committed_twice(self) -> None:
        claims: dict[str, tuple[str | None, int]] = {}
        keys: set[tuple[str, str]] = set()
        for commit in self.commits():
            if commit.idempotency_key is not None:
                slot = (commit.author.principal, commit.idempotency_key)
                assert slot not in keys, f"{slot} committed twice"
                keys.add(slot)
            for item in commit.items:
                if item.type == "work_claim":
                    claims[item.request_id] = (commit.author.principal, claims.get(item.request_id, (None, 0))[1] + 1)
                elif item.type == "work_reclaim":  # an unclaimed request's too (ADR 0159): generation 0
                    claims[item.request_id] = (None, claims.get(item.request_id, (None, 0))[1])
                elif item.type in ("work_renew", "work_result"):
                    holder, generation = claims.get(item.request_id, (None, 0))
                    assert (holder, generation) == (commit.author.principal, item.generation), (
                        f"a fenced {item.type} landed at {commit.version}: live claim {holder} gen {generation}"
                    )
                    if item.type == "work_result":
                        claims[item.request_id] = (None, generation)

    @invariant()
    def verifications_are_independent_and_exhausted_means_stopped(self) -> None:
        authors: dict[str, str] = {}  # hypothesis or observation -> its author
        supports: dict[str, set[str]] = {}
        runners: dict[str, str] = {}  # check -> the author of its result
        stopped = False
        for commit in self.commits():
            who = commit.author.principal
            for item in commit.items:
                if item.type in ("observation", "hypothesis"):
                    authors[item.id] = who
                if item.type == "hypothesis":
                    supports[item.id] = set(item.supporting_evidence)
                elif item.type == "link" and item.relation == "supports":
                    supports[item.hypothesis].add(item.observation)
                elif item.type == "work_result":
                    runners[item.request_id] = who
                elif item.type == "verification":
                    runner = runners.get(item.check)
                    behind = [authors[item.claim], *(authors[ref] for ref in supports[item.claim])]
                    assert not any(same_principal(runner, author) for author in behind), (
                        f"{item.claim} verified at {commit.version} on {item.check}, run by {runner}: not independent"
                    )
                    assert not same_principal(who, authors[item.claim]), f"{who} verified its own {item.claim}"
                elif item.type == "status":
                    assert not (stopped and item.to.value == "investigating"), f"resumed at {commit.version}"
                    stopped = stopped or item.to.value == "budget_exhausted"
                elif item.type == "reopen":
                    stopped = False
                elif item.type in ("work_request", "work_claim"):
                    assert not stopped, f"a {item.type} landed at {commit.version} after the budget was exhausted"

    @invariant()
    def the_cache_equals_a_fresh_fold(self) -> None:
        cached = self.coordinator.workspaces.show(self.workspace)
        cold = Workspaces(self.ledger).show(self.workspace)
        reducer = get_reducer()
        pure = reducer.render(reducer.fold(reducer.initial(self.workspace), self.commits()))
        assert cached == cold == pure

    @invariant()
    def the_projection_keeps_its_promises(self) -> None:
        projection = self.coordinator.workspaces.show(self.workspace)
        assert projection["execution_mode"] == "read_only"
        commits = self.commits()
        for entry in projection["proposals"]:
            assert entry["based_on_workspace_version"] == self.model.proposals[entry["id"]], entry
            if entry["status"] == "current":
                against = reviewed_against(commits, entry["id"], entry["based_on_workspace_version"])
                unseen = [v for v in material_versions(commits, tuple(entry["depends_on"])) if v > against]
                assert not unseen, f"{entry['id']} is current, reviewed against {against}; unseen {unseen}"
        for hypothesis in projection["selected_items"]["hypotheses"]:  # a deselected one is out of sight
            supports = set(hypothesis["supporting_evidence"])
            earlier = self.model.supports.get(hypothesis["id"], set())
            assert earlier <= supports, f"{hypothesis['id']} lost support {earlier - supports}"
            self.model.supports[hypothesis["id"]] = supports

    @invariant()
    def a_claim_is_settled_only_on_a_check_that_covered_it(self) -> None:
        projection = self.coordinator.workspaces.show(self.workspace)
        commits = self.commits()
        settled = settled_verifications(commits)
        last = {claim: result for _, claim, result in settled}
        for entry in projection["hypotheses"]:
            if entry["status"] in ("confirmed", "refuted"):
                assert last.get(entry["id"]) == entry["status"], f"{entry['id']} is {entry['status']}; {settled}"
        settling = {version for version, _, _ in settled}
        unsettled = {
            commit.version
            for commit in commits
            for item in commit.items
            if item.type == "verification" and item.result != "inconclusive" and commit.version not in settling
        }
        shown = {e["recorded_at_version"] for e in projection["coverage_insufficient"] if e["kind"] == "verification"}
        assert shown == unsettled, f"coverage_insufficient at {sorted(shown)}, expected at {sorted(unsettled)}"

    @invariant()
    def a_reopen_has_an_owner_and_a_cycle_and_new_limits_are_a_change(self) -> None:
        projection = self.coordinator.workspaces.show(self.workspace)
        commits = self.commits()
        cycles: int | None = None
        late: set[str] = set()
        for commit in commits:
            for item, decision in zip(commit.items, commit.decisions, strict=True):
                if item.type == "open":
                    cycles = item.runtime_limits.max_investigation_cycles
                elif item.type == "reopen":
                    cycles = item.runtime_limits.max_investigation_cycles or cycles
                    assert item.owner and cycles is not None and cycles >= 1, f"a reopen at {commit.version}"
                if decision.get("late_arrival") and "id" in decision:
                    late.add(decision["id"])
        changes = reopen_limit_changes(commits)
        for entry in projection["proposals"]:
            if entry["status"] in ("current", "accepted"):
                against = reviewed_against(commits, entry["id"], entry["based_on_workspace_version"])
                unseen = sorted(v for v in changes if v > against)
                assert not unseen, f"{entry['id']} is {entry['status']}, checked at {against}; new limits at {unseen}"
        flagged = {entry["observation"] for entry in projection["late_counterevidence"]}
        assert flagged <= late, f"{sorted(flagged - late)} flagged as late counterevidence, not late arrivals"

    @invariant()
    def nothing_is_lost_at_a_limit(self) -> None:
        """Each item held for lack of capacity is in the ledger as submitted, beside the items that landed, listed
        under ``held`` and never among the questions; an ``investigating`` workspace escalated with it."""
        projection = self.coordinator.workspaces.show(self.workspace)
        held = []
        for commit in self.commits():
            for item, decision in zip(commit.items, commit.decisions, strict=True):
                if "held" in decision:
                    assert len(commit.items) > 1, f"a contribution of held items alone landed at {commit.version}"
                    assert item.type in ("question", "work_request", "proposal"), item
                    held.append((item.type, getattr(item, "id", None) or item.request_id, commit.version))
                    assert decision.get("escalated", {"to": ESCALATED})["to"] == ESCALATED, decision
        shown = [(entry["type"], entry["id"], entry["recorded_at_version"]) for entry in projection["held"]]
        assert shown == held, (shown, held)
        recorded = {entry["id"] for entry in projection["questions"]}
        assert recorded == self.model.questions, (recorded, self.model.questions)

    def teardown(self) -> None:
        try:
            if self.ledger.head(self.workspace):
                self.replay_of_the_export_equals_the_projection()
        finally:
            self.ledger.close()

    def replay_of_the_export_equals_the_projection(self) -> None:
        path = Path(self.export_dir) / f"{self.workspace}.jsonl"
        with path.open("w") as out:
            export(self.ledger, self.workspace, out)
        reducer = get_reducer()
        replayed = reducer.render(reducer.fold(reducer.initial(self.workspace), read_file(path)))
        assert replayed == self.coordinator.workspaces.show(self.workspace)

    export_dir = "."


def machine_on(url: str, export_dir: Path) -> Callable[[], CoordinatorMachine]:
    return type("Machine", (CoordinatorMachine,), {"url": url, "export_dir": str(export_dir)})  # type: ignore[return-value]


EXAMPLES = int(os.environ.get("CASEBOARD_MACHINE_EXAMPLES", "25"))
"""Runs per test: 25 in ``make test``; ``make soak`` sets many more (docs/testing.md)."""
MACHINE_SETTINGS = dict(
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failing run reports its steps at once
    derandomize=True,  # the same runs every time: the named mutants (tests/e2e/test_named_mutants.py) rely on it
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_the_coordinator_keeps_its_guarantees_on_sqlite(tmp_path: Path) -> None:
    run_state_machine_as_test(
        machine_on(f"sqlite:///{tmp_path / 'ledger.db'}", tmp_path),
        settings=settings(max_examples=EXAMPLES, stateful_step_count=30, **MACHINE_SETTINGS),  # type: ignore[arg-type]
    )


@pytest.mark.postgres
def test_the_coordinator_keeps_its_guarantees_on_postgres(postgres_url: str, tmp_path: Path) -> None:
    run_state_machine_as_test(
        machine_on(postgres_url, tmp_path),
        settings=settings(max_examples=max(10, EXAMPLES // 3), stateful_step_count=25, **MACHINE_SETTINGS),  # type: ignore[arg-type]
    )
