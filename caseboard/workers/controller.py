"""The controller: plain rules over the projection decide who acts next, within the cycle budget.

``decide_next`` is pure. Its rules, in order:
1. a workspace that is not ``investigating`` gets nothing;
2. a participant scheduled in the last cycle that has not contributed yet (and is within its turn timeout)
   is waited for, unless it passed: its turn notification was processed and it contributed nothing (``passed``,
   from the dispatch store: a pass leaves nothing in the ledger; docs/adr/0185);
3. who is wanted: the planner when there is evidence it has not been scheduled since, a flagged proposal, or
   no cycle yet; the verifier when a claim awaits checking and a completed check no verification cites is
   new to it (completed, or a claim changed, after the view its last verification was made on: an
   ``inconclusive`` verification cites its check, so the same result does not want the verifier again; a
   turn that verified nothing, a bad model reply, passes over nothing; ADR 0125); the specialists of each
   request kind with requests opened since the last cycle;
   the planner also when a proposal rests on evidence that has expired by the controller's clock, and the
   specialists of the re-checks and rests it requests (``followups``: stale evidence under a live proposal
   gets a re-check of its source, an incomplete check a request for what it did not cover, at most
   ``REST_LIMIT`` rests of one check, as many as the pending-work limit leaves room for);
   the planner waits one cycle while the verifier is wanted and was not in the last cycle: it weighs new
   evidence against the claims as verified, whatever order the verdict and the evidence arrived in (ADR 0179);
4. somebody wanted and cycles left: a ``cycle`` item naming them, after the work requests it schedules; no
   cycles left: ``budget_exhausted`` with a handoff naming what is unresolved, or ``evidence_incomplete``
   with the missing coverage when checks are incomplete;
5. nobody wanted and no work pending: ``human_review_required`` when a selected claim is confirmed (or was
   confirmed before a challenge, reducer v4) and every other selected claim is settled (confirmed or refuted:
   a refuted alternative is not outstanding; a conclusion is the operator's), otherwise
   ``evidence_incomplete`` with the same kind of handoff.
A handoff stays within the 4096 characters of a status item: when the whole does not fit, every point is
cut to ``POINT_LIMIT`` characters and the points that do not fit are counted (``and 7 more``; ADR 0125).
Freshness is judged at the controller's clock (``now``), never at the last commit's time (ADR 0061).
The lease sweeper (``expired_claims``) reclaims claims whose lease lapsed: the request returns to
``awaiting_result`` and the late holder is fenced by the raised generation.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog

from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.route import turn_notice
from caseboard.domain.commit import Commit
from caseboard.domain.items import MAX_TEXT, Role
from caseboard.ledger.base import Ledger
from caseboard.projections.workspaces import Workspaces
from caseboard.reducers import Reducer, WorkspaceState, get_reducer
from caseboard.workers.followups import Followups, followups
from caseboard.workers.runtime import View
from caseboard.workers.scripted import specialist_principal

log = structlog.get_logger("caseboard.controller")

UNVERIFIED = ("proposed", "supported", "challenged")
SETTLED = ("confirmed", "refuted")
CONFIRMED_BEFORE_CHALLENGE = "confirmed_before_challenge"
"""A confirmation a later material change challenged (rule 4 of docs/rules-of-evidence.md): a person decides."""
VERIFIER = "verifier-1"
PLANNER = "planner-1"
POINT_LIMIT = 240
"""The characters of one point of a handoff, when the whole handoff would not fit in a status item."""
MISSING = "missing coverage: "
NOTHING = "nothing is unresolved"
STATES_KEPT = 256
"""The workspaces whose state the controller keeps to fold forward (least recently decided dropped first)."""


@dataclass
class CycleMemory:
    """What the ledger says about the last cycle: when, whom it scheduled, who contributed since."""

    version: int = 0
    at: datetime | None = None
    scheduled: tuple[str, ...] = ()
    contributed: set[str] = field(default_factory=set)
    requested: set[str] = field(default_factory=set)
    """Work requested (or reclaimed back) since the last cycle."""
    seen: int = 0
    verified_on: int = 0
    """The version the last commit carrying a verification was made on (its expected version, else the one
    before): what the verifier had read when it last verified."""
    results: dict[str, int] = field(default_factory=dict)
    """Per work request, the version of its result."""
    claims: dict[str, int] = field(default_factory=dict)
    """Per hypothesis, the version it was last recorded or linked to evidence at."""
    cited: set[str] = field(default_factory=set)
    """The checks a verification cites."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """Per hypothesis, the result of its last verification."""
    announced: dict[str, tuple[datetime, int]] = field(default_factory=dict)
    """Per work request nobody holds, when and at which version it was last requested or taken back."""
    progress: tuple[datetime, int] | None = None
    """When, and at which version, someone other than the controller last committed (docs/adr/0159)."""
    planned: int = 0
    """The version of the last cycle that scheduled the planner: evidence recorded after it is new to the planner."""

    def fold(self, commit: Commit) -> None:
        if commit.author.role is not Role.CONTROLLER:
            self.progress = (commit.at, commit.version)
        for item in commit.items:
            if item.type in ("work_request", "work_reclaim"):
                self.announced[item.request_id] = (commit.at, commit.version)
            elif item.type in ("work_claim", "work_result"):
                self.announced.pop(item.request_id, None)
            if item.type == "cycle":
                self.version, self.at, self.scheduled = commit.version, commit.at, item.scheduled
                if PLANNER in item.scheduled:
                    self.planned = commit.version
                self.contributed, self.requested = set(), set()
            elif item.type in ("work_request", "work_reclaim"):
                self.requested.add(item.request_id)
            elif item.type == "work_result":
                self.results[item.request_id] = commit.version
            elif item.type == "hypothesis":
                self.claims[item.id] = commit.version
            elif item.type == "link":
                self.claims[item.hypothesis] = commit.version
            elif item.type == "verification":
                self.cited.add(item.check)
                self.verdicts[item.claim] = item.result
        if commit.version > self.version:
            self.contributed.add(commit.author.principal)
        if any(item.type == "verification" for item in commit.items):
            based = commit.expected_version if commit.expected_version is not None else commit.version - 1
            self.verified_on = max(self.verified_on, based)
        self.seen = commit.version

    def waiting(self, passed: Collection[str] = ()) -> list[str]:
        """The principals the last cycle scheduled that have neither contributed since nor passed."""
        return [p for p in self.scheduled if p not in self.contributed and p not in passed]

    def new_to_verifier(self, view: View) -> list[str]:
        """The completed checks no verification cites that are new since the verifier last verified."""
        read = self.verified_on
        unsettled = [h["id"] for h in view["hypotheses"] if h["status"] in ("supported", "challenged")]
        if not unsettled:
            return []
        changed = any(self.claims.get(h, 0) > read for h in unsettled)
        return [
            w["request_id"]
            for w in view["work"]
            if w["kind"].endswith("_check")
            and w["status"] == "completed"
            and w["request_id"] not in self.cited
            and (changed or self.results.get(w["request_id"], 0) > read)
        ]


@dataclass(frozen=True)
class ControllerDecision:
    action: str  # "cycle", "status", "wait", "reclaim", "none"
    reason: str
    items: tuple[dict[str, Any], ...] = ()
    scheduled: tuple[str, ...] = ()


def unresolved(view: View, found: Followups | None = None) -> list[str]:
    found = found or Followups()
    out = [f"hypothesis {h['id']} is {h['status']}" for h in view["hypotheses"] if h["status"] in UNVERIFIED]
    out += [f"question {q['id']} is open" for q in view["questions"] if q["status"] == "open"]
    out += [f"work {w['request_id']} is {w['status']}" for w in view["pending_work"]]
    out += [
        f"proposal {p['id']} requires revalidation" for p in view["proposals"] if p["status"] == "requires_revalidation"
    ]
    flagged = {p["id"] for p in view["proposals"] if p["status"] == "requires_revalidation"}
    out += [f"proposal {p} rests on expired evidence" for p in found.stale_proposals if p not in flagged]
    out += [f"{MISSING}{line}" for line in found.missing_coverage]
    return out


def unclaimed_past_timeout(view: View, memory: CycleMemory, now: datetime, timeout_s: float) -> list[dict[str, Any]]:
    """``work_reclaim`` items, each with its reason, for every request nobody has claimed within ``timeout_s`` of
    being requested (or taken back): announced again to the specialists of its kind, the time restarting."""
    items = []
    for work in view["work"]:
        since = memory.announced.get(work["request_id"])
        if work["status"] != "awaiting_result" or work["holder"] is not None or since is None:
            continue
        waited = (now - since[0]).total_seconds()
        if waited >= timeout_s:
            items.append(
                {
                    "type": "work_reclaim",
                    "request_id": work["request_id"],
                    "reason": f"unclaimed for {waited:.0f} s since version {since[1]} (timeout {timeout_s:g} s): "
                    f"no {work['kind']} specialist took it; announced again",
                }
            )
    return items


def stalled(
    view: View, memory: CycleMemory, now: datetime, stall_after_s: float | None, passed: Collection[str] = ()
) -> ControllerDecision | None:
    """``human_review_required`` when no participant but the controller has committed for ``stall_after_s``,
    with a handoff saying what stalled (the turns waited for, the work nobody finished); None otherwise."""
    if stall_after_s is None or memory.progress is None or view["status"] != "investigating":
        return None
    at, version = memory.progress
    quiet = (now - at).total_seconds()
    if quiet < stall_after_s:
        return None
    waiting = memory.waiting(passed)
    work = [
        f"{w['request_id']} ({w['kind']}) "
        + (f"held by {w['holder']}" if w["holder"] else "unclaimed")
        + (f", taken back {w['reclaims']} times" if w["reclaims"] else "")
        for w in view["work"]
        if w["status"] in ("awaiting_result", "claimed")
    ]
    return ControllerDecision(
        "status",
        f"no progress for {quiet:.0f} s",
        (
            {
                "type": "status",
                "to": "human_review_required",
                "reason": f"stalled: no participant has contributed for {quiet:.0f} s (since version {version}; "
                f"the bound is {stall_after_s:g} s)",
                "handoff": handoff(
                    ("Stalled since", ", ", [f"version {version} at {at.isoformat()}"]),
                    ("Turns waited for", ", ", waiting or ["none"]),
                    ("Work not finished", "; ", work or ["none"]),
                    ("Unresolved", "; ", unresolved(view) or [NOTHING]),
                ),
            },
        ),
    )


def decide_next(
    view: View,
    memory: CycleMemory,
    now: datetime,
    turn_timeout_s: float = 60.0,
    found: Followups | None = None,
    stall_after_s: float | None = None,
    passed: Collection[str] = (),
) -> ControllerDecision:
    """The next step for the workspace ``view`` shows; ``found`` is what ``followups`` found in its state at
    ``now`` (re-checks, rests of incomplete checks, stale proposals; nothing when None); ``stall_after_s``: the
    bound on a workspace without progress (``stalled``; none when None); ``passed``: the principals of the last
    cycle that answered their turn with nothing (``Controller.passed``)."""
    found = found or Followups()
    if view["status"] != "investigating":
        return ControllerDecision("none", f"the workspace is {view['status']}")
    stall = stalled(view, memory, now, stall_after_s, passed)
    if stall is not None:
        return stall
    waiting = memory.waiting(passed)
    if waiting and memory.at is not None and (now - memory.at).total_seconds() < turn_timeout_s:
        return ControllerDecision("wait", f"cycle {view['cycles_used']}: waiting for {', '.join(waiting)}")
    wanted: list[str] = []
    new_evidence = [o["id"] for o in view["observations"] if o["recorded_at_version"] > memory.planned]
    flagged = [p["id"] for p in view["proposals"] if p["status"] == "requires_revalidation"]
    flagged += [p for p in found.stale_proposals if p not in flagged]
    verify = bool(memory.new_to_verifier(view))
    if (new_evidence or flagged or memory.version == 0) and not (verify and VERIFIER not in memory.scheduled):
        wanted.append(PLANNER)
    if verify:
        wanted.append(VERIFIER)
    for work in view["work"]:
        principal = specialist_principal(work["kind"])
        if work["status"] == "awaiting_result" and work["request_id"] in memory.requested and principal not in wanted:
            wanted.append(principal)
    limits, counters = view["runtime_limits"], view["counters"]
    room = max(0, limits["max_pending_work"] - counters["pending_work"])
    requests = found.requests[:room]
    for request in requests:
        principal = specialist_principal(request["kind"])
        if principal not in wanted:
            wanted.append(principal)
    open_points = unresolved(view, found)
    if new_evidence:
        open_points.append(f"evidence not yet weighed by the planner: {', '.join(new_evidence)}")
    open_points += [
        f"the verification of {h['id']} was inconclusive"
        for h in view["hypotheses"]
        if h["status"] in UNVERIFIED and memory.verdicts.get(h["id"]) == "inconclusive"
    ]
    if not any(h["status"] == "confirmed" for h in view["hypotheses"]):
        open_points.append(f"no confirmed explanation for the goal ({view['goal']})")
    unresolved_part = ("Unresolved", "; ", open_points or [NOTHING])
    if wanted:
        used, budget = view["cycles_used"], view["runtime_limits"]["max_investigation_cycles"]
        if used >= budget and found.missing_coverage:
            return ControllerDecision(
                "status",
                f"all {budget} cycles are used and checks are incomplete",
                (
                    {
                        "type": "status",
                        "to": "evidence_incomplete",
                        "reason": f"all {budget} investigation cycles are used and "
                        f"{len(found.missing_coverage)} checks did not complete",
                        "handoff": handoff(
                            ("Missing coverage", "; ", found.missing_coverage),
                            ("Unresolved", "; ", [p for p in open_points if not p.startswith(MISSING)] or [NOTHING]),
                        ),
                    },
                ),
            )
        if used >= budget:
            return ControllerDecision(
                "status",
                f"all {budget} cycles are used",
                (
                    {
                        "type": "status",
                        "to": "budget_exhausted",
                        "reason": f"all {budget} investigation cycles are used; still wanted: {', '.join(wanted)}",
                        "handoff": handoff(unresolved_part),
                    },
                ),
            )
        requested = f"; requesting {', '.join(r['request_id'] for r in requests)}" if requests else ""
        return ControllerDecision(
            "cycle",
            f"scheduling {', '.join(wanted)}{requested}",
            (*requests, {"type": "cycle", "number": used + 1, "scheduled": wanted}),
            tuple(wanted),
        )
    if view["pending_work"]:
        unclaimed = unclaimed_past_timeout(view, memory, now, turn_timeout_s)
        if unclaimed:  # waiting on them would wait forever (docs/adr/0159)
            names = ", ".join(r["request_id"] for r in unclaimed)
            return ControllerDecision("reclaim", f"unclaimed past the timeout: {names}", tuple(unclaimed))
        return ControllerDecision(
            "wait", "work is in progress: " + ", ".join(w["request_id"] for w in view["pending_work"])
        )
    selected = view["selected_items"]["hypotheses"]
    confirmed = [h["id"] for h in selected if h["status"] == "confirmed"]
    refuted = [h["id"] for h in selected if h["status"] == "refuted"]
    challenged = [h["id"] for h in selected if h["status"] == CONFIRMED_BEFORE_CHALLENGE]  # reducer v4, rule 4
    if (confirmed or challenged) and all(h["status"] in (*SETTLED, CONFIRMED_BEFORE_CHALLENGE) for h in selected):
        return ControllerDecision(
            "status",
            "every selected claim is confirmed or refuted" if refuted else "every selected claim is confirmed",
            (
                {
                    "type": "status",
                    "to": "human_review_required",
                    "reason": f"every selected claim is confirmed{' or refuted' if refuted else ''}"
                    + (f" ({len(challenged)} confirmed before a challenge)" if challenged else "")
                    + "; a conclusion is the operator's",
                    "handoff": handoff(
                        *([("Confirmed", ", ", confirmed)] if confirmed else []),
                        *([("Confirmed before a challenge, to verify again", ", ", challenged)] if challenged else []),
                        *([("Refuted", ", ", refuted)] if refuted else []),
                        unresolved_part,
                    ),
                },
            ),
        )
    return ControllerDecision(
        "status",
        "nobody can make progress",
        (
            {
                "type": "status",
                "to": "evidence_incomplete",
                "reason": "no participant has anything left to do",
                "handoff": handoff(unresolved_part),
            },
        ),
    )


def handoff(*parts: tuple[str, str, list[str] | tuple[str, ...]], limit: int = MAX_TEXT) -> str:
    """``Label: point; point. Label: ...``, within ``limit`` characters. When the whole does not fit, each part
    gets an even share of what is left: its points cut to ``POINT_LIMIT`` characters, as many as fit, and a
    count of the rest (``and 7 more``), so the first few ids and every count are always named."""
    whole = ". ".join(f"{label}: {sep.join(points)}" for label, sep, points in parts)
    if len(whole) <= limit:
        return whole
    out: list[str] = []
    left = limit - 2 * (len(parts) - 1)
    for at, (label, sep, points) in enumerate(parts):
        room = left // (len(parts) - at)
        text = _fitted(label, sep, list(points), room)
        out.append(text)
        left -= len(text)
    return ". ".join(out)


def _fitted(label: str, sep: str, points: list[str], room: int) -> str:
    head = f"{label} ({len(points)}): "
    cut = [p if len(p) <= POINT_LIMIT else p[: POINT_LIMIT - 3] + "..." for p in points]
    shown: list[str] = []
    for at, point in enumerate(cut):
        rest = len(points) - at - 1
        tail = f"{sep}and {rest} more" if rest else ""
        if len(head) + len(sep.join([*shown, point])) + len(tail) > room:
            break
        shown.append(point)
    more = len(points) - len(shown)
    body = sep.join([*shown, f"and {more} more"] if more and shown else shown or [f"{more} not shown"])
    return (head + body)[:room]


def expired_claims(view: View, now: datetime) -> list[dict[str, Any]]:
    """``work_reclaim`` items for every claim whose lease lapsed before ``now``."""
    items = []
    for work in view["work"]:
        expires = work.get("lease_expires_at")
        if work["status"] == "claimed" and expires and datetime.fromisoformat(expires) <= now:
            items.append(
                {
                    "type": "work_reclaim",
                    "request_id": work["request_id"],
                    "reason": f"lease of {work['holder']} (generation {work['generation']}) expired at {expires}",
                }
            )
    return items


class Controller:
    """The controller as a participant: acts on snapshot notices and on its own ticks."""

    principal = "controller"
    role = Role.CONTROLLER

    def __init__(
        self,
        ledger: Ledger,
        *,
        clock: Any,
        turn_timeout_s: float = 60.0,
        states: Callable[[str, int], WorkspaceState] | None = None,
        stall_after_s: float | None = None,
        reducer: Reducer[WorkspaceState] | None = None,
        processed: Callable[[Sequence[tuple[str, str]]], set[tuple[str, str]]] | None = None,
    ) -> None:
        """``turn_timeout_s``: how long a scheduled turn, and a request nobody claims, is waited for;
        ``stall_after_s``: the bound on a workspace where no participant contributes (``stalled``); ``reducer``:
        the current one (``Settings.current_reducer``), which folds the states ``followups`` reads;
        ``processed``: which of some (consumer, notification id) pairs their consumer has processed
        (``DispatchStore.processed``), to tell a passed turn (``passed``); without it a turn that brought nothing
        is waited for until ``turn_timeout_s``."""
        self.stall_after_s = stall_after_s
        self.processed = processed
        self.ledger = ledger
        self.clock = clock
        self.states = states or self._fold
        """The state of a workspace at a version, for what the projection does not carry (``followups``)."""
        self._workspaces = Workspaces(ledger, reducer)
        self._states: OrderedDict[str, WorkspaceState] = OrderedDict()
        self._states_lock = threading.Lock()
        self.turn_timeout_s = turn_timeout_s
        self.memories: dict[str, CycleMemory] = {}
        self.last: dict[str, tuple[int, str, str]] = {}
        self._lock = threading.Lock()

    def memory(self, workspace_id: str, version: int) -> CycleMemory:
        """The cycle memory as of ``version`` (the view's): never ahead of what the rules look at."""
        with self._lock:
            memory = self.memories.get(workspace_id)
            if memory is None or memory.seen > version:
                memory = CycleMemory()
            for commit in self.ledger.iter_commits(workspace_id, after=memory.seen, upto=version):
                memory.fold(commit)
            self.memories[workspace_id] = memory
            return copy.deepcopy(memory)

    def passed(self, workspace_id: str, memory: CycleMemory) -> set[str]:
        """The principals the last cycle of ``memory`` gave a turn that answered it with nothing: their turn
        notification is processed and no commit of theirs came after the cycle (up to the version ``memory``
        is of; a contribution committed since moved the head, so a decision made on this one is refused and
        made again). A participant that is still at its turn, crashed in it or never got it is not among them."""
        if self.processed is None:
            return set()
        turns = {}
        for principal in memory.waiting():
            notice = turn_notice(workspace_id, memory.version, principal)
            if notice is not None:
                turns[notice] = principal
        return {turns[notice] for notice in self.processed(list(turns))} if turns else set()

    def followups_at(self, workspace_id: str, version: int, reducer: str, now: datetime) -> Followups:
        """What ``followups`` finds in the state at ``version``, judged at ``now``."""
        with self._states_lock:  # the cached state is folded in place: one reader at a time
            return followups(self.states(workspace_id, version), get_reducer(reducer), now)

    def _fold(self, workspace_id: str, version: int) -> WorkspaceState:
        """The state at ``version``, folded forward from the one this controller last read (a tick re-reads the
        same version for nothing); loaded afresh when none is kept or the kept one is ahead of ``version``."""
        state = self._states.get(workspace_id)
        if state is None or state.version > version:
            state = self._workspaces.state_at(workspace_id, version)
        else:
            for commit in self.ledger.iter_commits(workspace_id, after=state.version, upto=version):
                state = self._workspaces.reducer.evolve(state, commit)
        self._states[workspace_id] = state
        self._states.move_to_end(workspace_id)
        while len(self._states) > STATES_KEPT:
            self._states.popitem(last=False)
        return state

    def contribute(self, notification: Notification, view: View) -> list[dict[str, Any]] | None:
        now = self.clock()
        reclaims = expired_claims(view, now)
        if reclaims:
            log.info(
                "controller_decision",
                workspace_id=notification.workspace_id,
                workspace_version=view["workspace_version"],
                action="reclaim",
                requests=[r["request_id"] for r in reclaims],
            )
            return reclaims
        workspace = notification.workspace_id  # its key; the view names the bare id (docs/adr/0130)
        memory = self.memory(workspace, view["workspace_version"])
        found, passed = None, set()
        if view["status"] == "investigating":  # nothing else is decided on (``decide_next``)
            found = self.followups_at(workspace, view["workspace_version"], view["reducer_version"], now)
            passed = self.passed(workspace, memory)
        decision = decide_next(view, memory, now, self.turn_timeout_s, found, self.stall_after_s, passed)
        key = (view["workspace_version"], decision.action, decision.reason)
        repeated = self.last.get(workspace) == key  # ticks re-decide the same thing: log it once
        self.last[workspace] = key
        (log.debug if repeated else log.info)(
            "controller_decision",
            workspace_id=workspace,
            workspace_version=view["workspace_version"],
            action=decision.action,
            reason=decision.reason,
            scheduled=list(decision.scheduled),
        )
        return list(decision.items) or None
