"""The workspace arm: planner, specialists and verifier through the coordinator, with the controller's rules.

It runs in this process, in simulated time, on the ledger it is given (a fresh embedded SQLite one per
evaluation): no broker, no wall clock. Each accepted commit is routed (``caseboard.dispatcher.route``, the
dispatcher's own routing) and its notifications become events on a simulated clock:

- the controller decides at once on every commit (its snapshot notice) and on a tick when nothing else is due;
- a participant scheduled in a cycle (a ``turn``) or told of a claim to check acts ``think_s`` later;
- a tool specialist claims open work of its kind at once and reports after the finding's arrival delay;
- evidence nobody asked for is submitted by its source's specialist at its arrival delay.

Every contribution carries its simulated time as ``at`` (a coordinator that trusts timestamps), so the ledger
is the record of the run: exported as it is, it replays and verifies like any recorded incident.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from caseboard.coordinator.service import Coordinator
from caseboard.dispatcher.notification import Notification, notification_id
from caseboard.dispatcher.route import route
from caseboard.domain.contribution import Contribution
from caseboard.domain.items import Role
from caseboard.domain.outcome import Refused
from caseboard.evaluation.cast import ToolSpecialist, specialist
from caseboard.evaluation.ending import Ending, Plan
from caseboard.evaluation.incident import Arrival, EvaluationIncident
from caseboard.evaluation.judgment import Explanation, iso, parse_time
from caseboard.evaluation.tools import Tools
from caseboard.ledger.base import Ledger
from caseboard.projections.model_view import ModelView, build_view
from caseboard.projections.workspaces import Workspaces
from caseboard.workers.controller import Controller
from caseboard.workers.runtime import Participant, View, bounded_view

THINK_S = 30
"""Simulated seconds a participant takes for one turn."""
TURN_TIMEOUT_S = 120
PROMPT_TOKENS = 400
"""The fixed part of every model-facing invocation (role, rules, output format), in tokens."""
MAX_EVENTS = 4000
HORIZON_S = 6 * 3600
"""A run that has not ended after six simulated hours is stopped where it is."""


VIEW_BUDGET_CHARS = 24_000
"""The model-facing view's budget for every invocation; the single agent's context is bounded the same."""


def tokens_of(view: ModelView) -> int:
    """The tokens an invocation reads: its model-facing view's JSON at four characters a token, plus the
    fixed prompt."""
    text = json.dumps(view.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return PROMPT_TOKENS + len(text) // 4


@dataclass(order=True)
class Event:
    at: int
    seq: int
    kind: str = field(compare=False)
    payload: Any = field(compare=False, default=None)


@dataclass
class WorkspaceRun:
    coordinator: Coordinator
    workspaces: Workspaces
    ledger: Ledger
    incident: EvaluationIncident
    participants: Mapping[str, Participant]
    """By audience: ``planner``, ``verifier`` (others are not scheduled by the controller's rules)."""
    tools: Tools
    token_budget: int | None = None
    cycle_budget: int | None = None
    now: int = 0
    seq: int = 0
    events: list[Event] = field(default_factory=list)
    tokens: int = 0
    invocations: int = 0
    refused: int = 0
    after_end: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    _controller_due: set[int] = field(default_factory=set)

    @property
    def workspace_id(self) -> str:
        return self.incident.id

    @property
    def opened(self) -> datetime:
        return parse_time(self.incident.opened_at)

    def clock(self) -> datetime:
        return self.opened + timedelta(seconds=self.now)

    def schedule(self, delay: int, kind: str, payload: Any = None) -> None:
        self.seq += 1
        heapq.heappush(self.events, Event(self.now + delay, self.seq, kind, payload))

    def run(self) -> None:
        self.controller = Controller(
            self.ledger, clock=self.clock, turn_timeout_s=TURN_TIMEOUT_S, reducer=self.workspaces.reducer
        )
        self.specialists: dict[str, ToolSpecialist] = {}
        limits = dict(self.incident.runtime_limits)
        if self.cycle_budget is not None:
            limits["max_investigation_cycles"] = self.cycle_budget
        opening = {
            "type": "open",
            "scope": dict(self.incident.scope),
            "goal": self.incident.goal,
            "runtime_limits": limits,
            "execution_mode": "read_only",
        }
        self.submit("oncall-operator", Role.OPERATOR, [opening])
        for arrival in self.incident.arrivals:
            self.schedule(arrival.after_s, "arrival", arrival)
        for _ in range(MAX_EVENTS):
            if not self.events:
                if not self.investigating():
                    return
                self.schedule(TURN_TIMEOUT_S, "tick")
            event = heapq.heappop(self.events)
            if event.at > HORIZON_S:
                return
            self.now = event.at
            self.handle(event)

    def investigating(self) -> bool:
        return bool(self.workspaces.show(self.workspace_id)["status"] == "investigating")

    def handle(self, event: Event) -> None:
        if event.kind == "arrival":
            self.arrive(event.payload)
            return
        if not self.investigating():
            return
        if event.kind in ("controller", "tick"):
            self._controller_due.discard(event.at)
            self.decide(event.payload)
        elif event.kind == "participant":
            self.turn(event.payload)
        elif event.kind == "specialist":
            self.work(event.payload)

    def view(self) -> View:
        return bounded_view(self.workspaces.show(self.workspace_id))

    def model_view(self, role: Role) -> ModelView:
        """What a model-backed participant of ``role`` would read now (the ``/view`` route's view, ADR 0032)."""
        state = self.workspaces.state_at(self.workspace_id)
        commits = self.ledger.read(self.workspace_id, upto=state.version)
        reducer = self.workspaces.reducer.name
        return build_view(state, commits, role, VIEW_BUDGET_CHARS, reducer, as_of=self.clock())

    def decide(self, notification: Notification | None) -> None:
        version = self.ledger.head(self.workspace_id)
        notice = notification or Notification(
            id=notification_id(self.workspace_id, version, "tick"),
            kind="snapshot_changed",
            audience="snapshot",
            workspace_id=self.workspace_id,
            workspace_version=version,
        )
        items = self.controller.contribute(notice, self.view())
        if items:
            self.submit(self.controller.principal, self.controller.role, items)

    def turn(self, notification: Notification) -> None:
        participant = self.participants.get(notification.audience)
        if participant is None:
            return
        view = self.view()
        if self.token_budget is not None and self.tokens >= self.token_budget:
            self.exhaust()
            return
        self.tokens += tokens_of(self.model_view(participant.role))
        self.invocations += 1
        items = participant.contribute(notification, view)
        if items:
            self.submit(participant.principal, participant.role, items)

    def work(self, notification: Notification) -> None:
        kind = notification.request_kind or ""
        tool = self.specialists.setdefault(kind, ToolSpecialist(kind, self.tools))
        items = tool.contribute(notification, self.view())
        if not items:
            return
        if self.submit(tool.principal, tool.role, items) and items[0]["type"] == "work_claim":
            self.schedule(tool.delay_s(items[0]["request_id"]), "specialist", notification)

    def arrive(self, arrival: Arrival) -> None:
        body = self.tools.observation(arrival.finding)
        if body is None:
            return
        if not self.investigating():
            self.after_end.append(str(body["id"]))
            return
        self.submit(specialist(arrival.kind), Role.SPECIALIST, [{"type": "observation", **body}])

    def exhaust(self) -> None:
        status = {
            "type": "status",
            "to": "budget_exhausted",
            "reason": f"the token budget ({self.token_budget}) is spent",
            "handoff": "Unresolved: the investigation stopped when its model-facing budget ran out",
        }
        self.submit(self.controller.principal, self.controller.role, [status])

    def submit(self, principal: str, role: Role, items: list[dict[str, Any]]) -> bool:
        expected = self.ledger.head(self.workspace_id)
        try:
            contribution = Contribution.model_validate(
                {
                    "workspace_id": self.workspace_id,
                    "author": {"principal": principal, "role": role.value},
                    **({"expected_version": expected} if expected else {}),
                    "at": iso(self.clock()),
                    "items": items,
                }
            )
        except ValidationError as error:  # what the coordinator's parser refuses as invalid
            self.refused += 1
            self.refusals.append(f"{principal}: invalid: {' '.join(str(error).split())[:300]}")
            return False
        outcome = self.coordinator.submit(contribution)
        if isinstance(outcome, Refused):
            self.refused += 1
            self.refusals.append(f"{principal}: {outcome.reason.value}: {outcome.message}")
            return False
        self.announce(outcome.workspace_version)
        return True

    def announce(self, version: int) -> None:
        """The notifications of the commit at ``version``, as events on the simulated clock."""
        commit = self.ledger.read(self.workspace_id, after=version - 1, upto=version)[0]
        state = self.workspaces.state_at(self.workspace_id, version)
        for notice in route(commit, state, self.workspaces.reducer):
            if notice.audience == "snapshot" and self.now not in self._controller_due:
                self._controller_due.add(self.now)
                self.schedule(0, "controller", notice)
            elif notice.kind in ("turn", "claim_to_check") and notice.audience in ("planner", "verifier"):
                self.schedule(THINK_S, "participant", notice)
            elif notice.kind == "work_requested":
                self.schedule(0, "specialist", notice)

    def ending(self, record: str) -> Ending:
        view = self.workspaces.show(self.workspace_id)
        commits = self.ledger.read(self.workspace_id)
        weighed: dict[str, list[str]] = {h["id"]: [] for h in view["hypotheses"]}
        flagged: list[str] = []
        requests = 0
        revisions = withdrawals = 0
        for commit in commits:
            for item, decision in zip(commit.items, commit.decisions, strict=True):
                if item.type == "link" and item.relation == "challenges":
                    weighed.setdefault(item.hypothesis, []).append(item.observation)
                elif item.type == "hypothesis":
                    weighed.setdefault(item.id, []).extend(item.challenging_evidence)
                elif item.type == "work_request":
                    requests += 1
                elif item.type == "review" and item.decision in ("revised", "withdrawn"):
                    revisions += item.decision == "revised"
                    withdrawals += item.decision == "withdrawn"
                observation = getattr(item, "observation", None) if item.type == "work_result" else item
                suspicious = _field(decision, "suspicious")
                if suspicious and getattr(observation, "id", None):
                    flagged.append(str(observation.id))  # type: ignore[union-attr]
        explanations = [Explanation(h["id"], h["status"], bool(weighed.get(h["id"]))) for h in view["hypotheses"]]
        received = {o["id"]: o for o in view["observations"]}
        rechecked = [
            w["request_id"].removeprefix("recheck-") for w in view["work"] if w["request_id"].startswith("recheck-")
        ]
        ended = commits[-1].at if commits else self.opened
        status = view["status"]
        return Ending(
            arm="workspace",
            incident=self.incident.id,
            status=status,
            reason=str(view["status_detail"].get("reason") or ""),
            explanations=explanations,
            weighed_challenges={k: sorted(set(v)) for k, v in sorted(weighed.items())},
            plans=[Plan(p["id"], p["status"], tuple(p["depends_on"])) for p in view["proposals"]],
            received=received,
            flagged=sorted(set(flagged)),
            rechecked=sorted(rechecked),
            elapsed_s=int((ended - self.opened).total_seconds()),
            cycles=int(view["cycles_used"]),
            tool_calls=requests,
            tokens=self.tokens,
            invocations=self.invocations,
            revisions=revisions,
            withdrawals=withdrawals,
            refused=self.refused,
            record=record,
            after_end=sorted(self.after_end),
        )


def _field(decision: Any, name: str) -> Any:
    if isinstance(decision, Mapping):
        return decision.get(name)
    return getattr(decision, name, None)


ParticipantsFactory = Callable[[EvaluationIncident, Tools], Mapping[str, Participant]]
