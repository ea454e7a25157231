"""Coordination health: what the platform team monitors, derived from a workspace's commits up to a version.

One pure fold, ``HealthFold``: it takes commits in order (from the ledger or from a recorded incident file,
it cannot tell which), folds them with a reducer reached through the ``Reducer`` interface, and after each
commit notes what changed. ``report()`` gives the figures as of the last commit fed; the time they are judged
at is that commit's clock, never the reader's, so the figures as of version N are the same whether computed
over the live ledger or by replaying a file to N (docs/health.md, ADR 0105).

Figures (``FIGURES`` says what each one means, for the report and the command line):

- ``invalidations``: proposals that became ``requires_revalidation`` (from ``current`` or ``accepted``, or
  recorded already stale), each with the kind of material change that did it (``CHANGES``);
- ``stale_evidence_in_use``: observations past ``expires_at`` that a live proposal rests on;
- ``outstanding_work``: requests awaiting a result, claimed, and claimed under a lease that has lapsed, with
  their ages;
- ``cycles``: cycles used against the budget, and every cycle scheduled across reopens;
- ``outcomes``: each time the workspace reached an outcome status, with the time from its opening;
- ``late_counterevidence``: observations that arrived after the workspace closed and bear on its conclusion (a
  confirmed hypothesis, an accepted plan; reducer v4, ADR 0165), each with what it bears on;
- ``operator_corrections``: reviews that revised or withdrew a proposal, accepted plans that later required
  revalidation;
- ``refusals_by_reason`` and ``duplicate_deliveries_absorbed``: ``not instrumented`` here. A refused
  contribution appends nothing and a duplicate delivery is absorbed before it reaches the coordinator, so the
  ledger holds neither; they are counted where they happen (``/metrics``; the dispatch store) and are not
  reproducible by replay.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.domain.errors import UnknownWorkspace, VersionOutOfRange
from caseboard.ledger.base import Ledger
from caseboard.reducers import Reducer, WorkspaceState, get_reducer, tenant_of

NOT_INSTRUMENTED = "not instrumented"
"""A figure that was never measured: never shown as 0."""

SCHEMA_VERSION = 1

OUTCOMES = ("supported_conclusion", "evidence_incomplete", "budget_exhausted", "human_review_required")

CHANGES = (
    "contradictory_evidence",
    "dependency_refuted",
    "dependency_withdrawn",
    "constraints_changed",
    "evidence_expired",
)
"""The kinds of material change an invalidation is put down to (DESIGN.md §1, "material change")."""

LIVE_PROPOSAL = ("current", "requires_revalidation", "accepted")

TOUCHING = (it.Open, it.Proposal, it.Review, it.Link, it.Hypothesis, it.Verification, it.Constraints, it.Reopen)
"""Items after which a proposal's status can change (a new proposal, a review, what a dependency rests on, a
material change); otherwise only an observation's expiry passing under the commit's clock can change one."""

FIGURES: dict[str, str] = {
    "invalidations": "proposals that became requires_revalidation, by the kind of material change that did it; "
    "a high rate may mean a changing environment, slow specialists or overly broad rules: read it beside "
    "operator corrections and outcomes",
    "stale_evidence_in_use": "observations past expires_at (as of this version's commit time) that a live "
    "proposal rests on, directly or through a hypothesis",
    "outstanding_work": "work requests awaiting a result or claimed, and claims whose lease has lapsed without "
    "a result, renewal or reclaim; ages are from the request (or the claim) to this version's commit time",
    "cycles": "investigation cycles used against max_investigation_cycles (reset by a reopen), and every "
    "cycle scheduled since the workspace opened",
    "outcomes": "each time the workspace reached supported_conclusion, evidence_incomplete, budget_exhausted "
    "or human_review_required, with the seconds from its opening",
    "operator_corrections": "reviews that revised or withdrew a proposal, and accepted plans that later "
    "required revalidation",
    "late_counterevidence": "observations that arrived after the workspace closed and bear on its conclusion "
    "(a confirmed hypothesis or an accepted plan they name, are linked to, or share a source and time window "
    "with): someone must weigh them, and reopen if they overturn it; 0 under a reducer that does not flag them",
    "refusals_by_reason": "contributions refused, by reason: a refusal appends nothing, so the ledger cannot "
    "say; counted per process in /metrics (caseboard_refusals_total)",
    "duplicate_deliveries_absorbed": "notifications delivered again and dropped by a consumer: absorbed before "
    "the coordinator, so the ledger cannot say; counted per consumer in the dispatch store "
    "(caseboard outbox status) and by the worker's /metrics",
}


def _changes_of(commit: Commit) -> set[str]:
    """The kinds of material change a commit's items make (bookkeeping makes none)."""
    found: set[str] = set()
    for item in commit.items:
        match item:
            case it.Link(relation="challenges") | it.Hypothesis(challenging_evidence=(_, *_)):
                found.add("contradictory_evidence")
            case it.Verification(result="refuted"):
                found.add("dependency_refuted")
            case it.Review(decision="revised" | "withdrawn"):
                found.add("dependency_withdrawn")
            case it.Constraints():
                found.add("constraints_changed")
            case _:
                pass
    return found


def _seconds(later: datetime | None, earlier: datetime | None) -> float | None:
    return None if later is None or earlier is None else round((later - earlier).total_seconds(), 3)


class HealthFold:
    """The health of one workspace, folded commit by commit (feed the commits of one workspace in order)."""

    def __init__(self, reducer: Reducer[WorkspaceState] | None = None) -> None:
        self.reducer = reducer or get_reducer()
        self.state: WorkspaceState | None = None
        self.opened_at: datetime | None = None
        self.statuses: dict[str, str] = {}
        self.changes: dict[int, set[str]] = {}
        self.invalidations: list[dict[str, Any]] = []
        self.outcomes: list[dict[str, Any]] = []
        self.reviews = {"revised": 0, "withdrawn": 0}
        self.cycles_scheduled = 0
        self.reopens = 0
        self.expiries: list[datetime] = []  # a heap of the expires_at not yet passed by a commit's clock

    @property
    def version(self) -> int:
        return 0 if self.state is None else self.state.version

    def feed(self, commit: Commit) -> None:
        if self.state is None:
            self.state = self.reducer.initial(commit.workspace_id)
            self.opened_at = commit.at
        self.state = self.reducer.evolve(self.state, commit)
        found = _changes_of(commit)
        if found:
            self.changes[commit.version] = found
        touched = False
        for item, decision in zip(commit.items, commit.decisions, strict=True):
            self._note(commit, item, decision)
            touched = touched or isinstance(item, TOUCHING)
            body = item.observation if isinstance(item, it.WorkResult) else item
            if isinstance(body, it.ObservationBody) and body.expires_at is not None:
                heapq.heappush(self.expiries, body.expires_at)
        while self.expiries and self.expiries[0] <= commit.at:
            heapq.heappop(self.expiries)
            touched = True
        if touched:  # else no status can have changed: asking each proposal's would cost commits x proposals
            self._statuses(commit)

    def feed_all(self, commits: Iterable[Commit]) -> HealthFold:
        for commit in commits:
            self.feed(commit)
        return self

    def _note(self, commit: Commit, item: it.Item, decision: dict[str, Any]) -> None:
        reached: tuple[str, str | None] | None = None
        match item:
            case it.StatusChange():
                reached = (item.to.value, item.reason)
            case it.Review(decision="revised" | "withdrawn"):
                self.reviews[item.decision] += 1
            case it.Cycle():
                self.cycles_scheduled += 1
            case it.Reopen():
                self.reopens += 1
            case _:
                pass
        escalation = decision.get("escalated")
        if escalation:
            reached = (str(escalation["to"]), escalation.get("reason"))
        if reached is not None and reached[0] in OUTCOMES:
            self.outcomes.append(
                {
                    "outcome": reached[0],
                    "version": commit.version,
                    "at": _iso(commit.at),
                    "seconds_from_open": _seconds(commit.at, self.opened_at),
                    "reason": reached[1],
                }
            )

    def _statuses(self, commit: Commit) -> None:
        state = self.state
        assert state is not None
        for proposal in state.proposals.values():
            now = self.reducer.proposal_status(state, proposal, state.at)
            before = self.statuses.get(proposal.id)
            self.statuses[proposal.id] = now
            if now != "requires_revalidation" or before == "requires_revalidation":
                continue
            if before is None or before in ("current", "accepted"):
                self.invalidations.append(
                    {
                        "proposal": proposal.id,
                        "version": commit.version,
                        "change": self._cause(proposal),
                        "was": before or "recorded_stale",
                    }
                )

    def _cause(self, proposal: Any) -> str:
        """The kind of the latest material change the proposal has not been checked against, as the reducer
        names it (``revalidation_causes``), told apart by what the commit of that version did; an expired
        observation under it when there is none."""
        state = self.state
        assert state is not None
        causes = self.reducer.revalidation_causes(state, proposal, state.at)
        for cause in reversed(causes):
            if cause.kind == "constraints":
                return "constraints_changed"
            if cause.kind == "material":
                kinds = self.changes.get(cause.version, set())
                for change in CHANGES:
                    if change in kinds:
                        return change
        return "evidence_expired" if any(c.kind == "expired" for c in causes) else "contradictory_evidence"

    def _expired_under(self, proposal: Any) -> list[str]:
        """The observations the proposal rests on that have expired as of this version's commit time."""
        state = self.state
        assert state is not None
        causes = self.reducer.revalidation_causes(state, proposal, state.at)
        return [cause.reference for cause in causes if cause.kind == "expired"]

    def report(self) -> dict[str, Any]:
        """The figures as of the last commit fed (``FIGURES``)."""
        state = self.state
        if state is None:
            raise ValueError("no commits were fed: a workspace's health starts at version 1")
        at = state.at
        stale: dict[str, list[str]] = {}
        for proposal in state.proposals.values():
            if self.statuses.get(proposal.id) not in LIVE_PROPOSAL:
                continue
            for ref in self._expired_under(proposal):
                stale.setdefault(ref, []).append(proposal.id)
        by_change = dict.fromkeys(CHANGES, 0)
        for event in self.invalidations:
            by_change[event["change"]] += 1
        accepted_then = sorted({e["proposal"] for e in self.invalidations if e["was"] == "accepted"})
        return {
            "schema_version": SCHEMA_VERSION,
            "workspace_id": state.workspace_id,
            "tenant_id": tenant_of(state),
            "workspace_version": state.version,
            "reducer_version": self.reducer.name,
            "as_of": _iso(at) if at else None,
            "status": state.status,
            "invalidations": {"total": len(self.invalidations), "by_change": by_change, "events": self.invalidations},
            "stale_evidence_in_use": {
                "total": len(stale),
                "observations": [
                    {
                        "observation": ref,
                        "expires_at": _iso(state.observations[ref].expires_at),
                        "expired_for_s": _seconds(at, state.observations[ref].expires_at),
                        "proposals": sorted(proposals),
                    }
                    for ref, proposals in sorted(stale.items())
                ],
            },
            "outstanding_work": self._work(),
            "cycles": {
                "used": state.cycles_used,
                "budget": state.limits.get("max_investigation_cycles"),
                "scheduled_since_open": self.cycles_scheduled,
                "reopens": self.reopens,
            },
            "outcomes": {"reached": self.outcomes, "seconds_to_first": self._first_outcome()},
            "operator_corrections": {
                "reviews_revised": self.reviews["revised"],
                "reviews_withdrawn": self.reviews["withdrawn"],
                "accepted_then_revalidation": accepted_then,
            },
            "late_counterevidence": self._late(),
            "refusals_by_reason": NOT_INSTRUMENTED,
            "duplicate_deliveries_absorbed": NOT_INSTRUMENTED,
        }

    def _late(self) -> dict[str, Any]:
        state = self.state
        assert state is not None
        found: dict[str, dict[str, Any]] = {}
        for rec in self.reducer.late_counterevidence(state):
            entry = found.setdefault(
                rec.observation,
                {"observation": rec.observation, "recorded_at_version": rec.version, "bears_on": []},
            )
            entry["bears_on"].append(rec.bears_on)
        return {"total": len(found), "observations": list(found.values())}

    def _first_outcome(self) -> float | None:
        return self.outcomes[0]["seconds_from_open"] if self.outcomes else None

    def _work(self) -> dict[str, Any]:
        state = self.state
        assert state is not None
        at = state.at
        requests = []
        for work in state.work.values():
            if work.status not in ("awaiting_result", "claimed"):
                continue
            lease = work.lease_expires_at
            lapsed = work.status == "claimed" and lease is not None and at is not None and lease <= at
            requests.append(
                {
                    "request_id": work.request_id,
                    "status": "lease_lapsed" if lapsed else work.status,
                    "age_s": _seconds(at, work.requested_at),
                    "claimed_for_s": _seconds(at, work.claimed_at) if work.status == "claimed" else None,
                    "generation": work.generation,
                }
            )
        counts = {name: sum(r["status"] == name for r in requests) for name in ("awaiting_result", "claimed")}
        counts["lease_lapsed"] = sum(r["status"] == "lease_lapsed" for r in requests)
        ages = [r["age_s"] for r in requests if r["age_s"] is not None]
        return {**counts, "oldest_age_s": max(ages) if ages else None, "requests": requests}


def health(
    commits: Iterable[Commit], upto: int | None = None, reducer: Reducer[WorkspaceState] | None = None
) -> dict[str, Any]:
    """The health report of one workspace as of version ``upto`` (the last commit when None)."""
    fold = HealthFold(reducer)
    for commit in commits:
        if upto is not None and commit.version > upto:
            break
        fold.feed(commit)
    if upto is not None and fold.version < upto:
        raise ValueError(f"the commits end at version {fold.version}, before version {upto}")
    return fold.report()


def tenant_health(reports: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Several workspaces' reports summed: the figures per tenant (or per deployment)."""
    listed = list(reports)
    by_change = dict.fromkeys(CHANGES, 0)
    outcomes = dict.fromkeys(OUTCOMES, 0)
    work = {"awaiting_result": 0, "claimed": 0, "lease_lapsed": 0}
    to_first: list[float] = []
    total = {"invalidations": 0, "stale_evidence_in_use": 0, "reviews_revised": 0, "reviews_withdrawn": 0}
    accepted_then = 0
    exhausted_budget = 0
    late = 0
    for report in listed:
        late += report.get("late_counterevidence", {}).get("total", 0)
        total["invalidations"] += report["invalidations"]["total"]
        for change, count in report["invalidations"]["by_change"].items():
            by_change[change] += count
        total["stale_evidence_in_use"] += report["stale_evidence_in_use"]["total"]
        for name in work:
            work[name] += report["outstanding_work"][name]
        for reached in report["outcomes"]["reached"]:
            outcomes[reached["outcome"]] += 1
        first = report["outcomes"]["seconds_to_first"]
        if first is not None:
            to_first.append(first)
        corrections = report["operator_corrections"]
        total["reviews_revised"] += corrections["reviews_revised"]
        total["reviews_withdrawn"] += corrections["reviews_withdrawn"]
        accepted_then += len(corrections["accepted_then_revalidation"])
        cycles = report["cycles"]
        exhausted_budget += cycles["budget"] is not None and cycles["used"] >= cycles["budget"]
    return {
        "schema_version": SCHEMA_VERSION,
        "workspaces": len(listed),
        "invalidations": {"total": total["invalidations"], "by_change": by_change},
        "stale_evidence_in_use": total["stale_evidence_in_use"],
        "outstanding_work": work,
        "workspaces_at_cycle_budget": exhausted_budget,
        "outcomes": outcomes,
        "seconds_to_first_outcome": {"median": _median(to_first), "max": max(to_first) if to_first else None},
        "operator_corrections": {
            "reviews_revised": total["reviews_revised"],
            "reviews_withdrawn": total["reviews_withdrawn"],
            "accepted_then_revalidation": accepted_then,
        },
        "late_counterevidence": late,
        "refusals_by_reason": NOT_INSTRUMENTED,
        "duplicate_deliveries_absorbed": NOT_INSTRUMENTED,
    }


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def ledger_health(ledger: Ledger, workspace_id: str, upto: int | None = None) -> dict[str, Any]:
    """The health report of a workspace of the ledger as of ``upto`` (the head when None), by the current
    reducer: the commits as stored, folded from version 1 (no snapshot: the report needs every commit)."""
    head = ledger.head(workspace_id)
    if head == 0:
        raise UnknownWorkspace(workspace_id)
    if upto is not None and not 1 <= upto <= head:
        raise VersionOutOfRange(workspace_id, upto, head)
    return health(ledger.iter_commits(workspace_id, upto=upto), upto)
