"""The operator's list of workspaces: one row per workspace of the ledger, kept from the notification log.

The ledger answers per workspace; listing a tenant's investigations by folding each one's ledger would cost a
read per workspace per request. ``Directory`` follows the notification log instead (``Ledger.outbox``, every
commit in an order no later commit can jump behind, ADR 0096) from where it stopped, and folds each commit
into that workspace's state with the current reducer, once: a listing is then one read of what was committed
since the last one (none when it was asked for less than ``max_age_s`` ago) and a filter over rows in memory.
The first listing in a process reads the whole log once (ADR 0151).

A row holds what the console's list shows: status and its reason, version, service, when the workspace opened
and last moved, the model calls its judgments record and the cycles used, each against its budget, and why it
needs a person (``NEEDS_PERSON``; ``late_counterevidence`` only where the reducer's projection has that field,
never guessed from anything else). Rows are made again only for workspaces that moved since.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from caseboard.domain import items as it
from caseboard.domain.commit import Commit
from caseboard.domain.workspace_key import bare
from caseboard.ledger.base import Position
from caseboard.ledger.outbox import START, Outbox
from caseboard.reducers import Reducer, WorkspaceState, tenant_of

BATCH = 1000
NEEDS_PERSON = ("human_review_required", "budget_exhausted", "evidence_incomplete")
"""Statuses a workspace waits in for a person; ``late_counterevidence`` on the projection is the fourth reason."""
LATE = "late_counterevidence"


@dataclass
class _Entry:
    key: str
    seq: int
    """The order the workspace opened in among its tenant's, as the log has it: the list is newest first by it
    (counted per tenant, so it says nothing of other tenants' workspaces)."""
    state: WorkspaceState
    opened_at: datetime
    last_at: datetime
    calls: int = 0
    tokens: int = 0
    row: dict[str, Any] | None = None
    """The row as last made; None once the workspace moved."""


@dataclass
class Directory:
    """Every workspace of a ledger, by tenant (``listing``), folded from the notification log."""

    outbox_of: Callable[[], Outbox]
    reducer: Reducer[WorkspaceState]
    calls_per_cycle: int
    charged: Callable[[Commit], tuple[int, int]]
    """The model calls and tokens a commit's judgments charge to the budget (``agent/budget.py::spent``)."""
    position: Position = START
    entries: dict[str, _Entry] = field(default_factory=dict)
    tenants: dict[str, list[_Entry]] = field(default_factory=dict)
    """Each tenant's workspaces in the order they opened (oldest first)."""
    changed: dict[str, int] = field(default_factory=dict)
    """How many commits of each tenant's workspaces have been folded: a stream resends when it moves."""
    refreshed_at: float = float("-inf")
    _outbox: Outbox | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def refresh(self, max_age_s: float = 0.0) -> None:
        """Fold what was committed since the last refresh (nothing when that was less than ``max_age_s`` ago)."""
        with self._lock:
            if time.monotonic() - self.refreshed_at < max_age_s:
                return
            if self._outbox is None:
                self._outbox = self.outbox_of()
            while True:
                entries = self._outbox.read(self.position, BATCH)
                for entry in entries:
                    self._fold(entry.commit)
                    self.position = entry.position
                if len(entries) < BATCH:
                    break
            self.refreshed_at = time.monotonic()

    def _fold(self, commit: Commit) -> None:
        found = self.entries.get(commit.key)
        if found is None:
            if commit.version != 1 or not commit.items or not isinstance(commit.items[0], it.Open):
                return  # not a workspace's opening: nothing the list can show
            initial = self.reducer.initial(commit.workspace_id)
            found = _Entry(commit.key, 0, initial, commit.at, commit.at)
            self.entries[commit.key] = found
        elif commit.version != found.state.version + 1:
            return  # seen already (the log never skips a version of a workspace)
        found.state = self.reducer.evolve(found.state, commit)
        found.last_at = commit.at
        calls, tokens = self.charged(commit)
        found.calls += calls
        found.tokens += tokens
        found.row = None
        tenant = tenant_of(found.state)
        if tenant is not None:
            if commit.version == 1:
                opened = self.tenants.setdefault(tenant, [])
                found.seq = len(opened)
                opened.append(found)
            self.changed[tenant] = self.changed.get(tenant, 0) + 1

    def moved(self, tenant_id: str) -> int:
        """A number that changes whenever a workspace of the tenant moves (as of the last refresh)."""
        return self.changed.get(tenant_id, 0)

    def _row(self, entry: _Entry) -> dict[str, Any]:
        if entry.row is not None:
            return entry.row
        state = entry.state
        projection = self.reducer.render(state)
        late = projection.get(LATE)  # only a reducer whose projection has the field says anything of it
        needs = [state.status] if state.status in NEEDS_PERSON else []
        if late:
            needs.append(LATE)
        cycles_budget = state.limits.get("max_investigation_cycles")
        entry.row = {
            "workspace_id": bare(entry.key),
            "status": state.status,
            "status_reason": state.status_reason,
            "handoff": state.handoff,
            "owner": state.owner,
            "workspace_version": state.version,
            "service": state.scope.get("service"),
            "environment": state.scope.get("environment"),
            "goal": state.goal,
            "opened_at": _iso(entry.opened_at),
            "last_commit_at": _iso(entry.last_at),
            "model_calls": {
                "used": entry.calls,
                "budget": None if cycles_budget is None else cycles_budget * self.calls_per_cycle,
                "tokens": entry.tokens,
            },
            "cycles": {"used": state.cycles_used, "budget": cycles_budget},
            "needs_person": needs,
            LATE: (len(late) if isinstance(late, list | dict) else late) if LATE in projection else None,
            "order": entry.seq,
        }
        return entry.row

    def listing(
        self,
        tenant_id: str,
        *,
        statuses: frozenset[str] = frozenset(),
        needs_person: bool = False,
        text: str | None = None,
        before: int | None = None,
        limit: int = 50,
        now: datetime | None = None,
    ) -> dict[str, Any]:
        """A page of the tenant's workspaces, newest first: at most ``limit`` rows opened before the row whose
        ``order`` is ``before``, of the statuses asked for, only those needing a person when ``needs_person``,
        and only those whose id, service, goal, status reason or handoff contain ``text`` (case ignored).
        ``next_before`` is where the next page starts (None on the last); ``total``: the rows that match."""
        when = now or datetime.now(UTC)
        wanted = text.casefold() if text else None
        rows: list[dict[str, Any]] = []
        total = 0
        with self._lock:
            for entry in reversed(self.tenants.get(tenant_id, [])):
                row = self._row(entry)
                if statuses and row["status"] not in statuses:
                    continue
                if needs_person and not row["needs_person"]:
                    continue
                if wanted is not None and not _matches(row, wanted):
                    continue
                total += 1
                if (before is None or entry.seq < before) and len(rows) < limit + 1:
                    rows.append(row)
        more = len(rows) > limit
        shown = [_aged(row, when) for row in rows[:limit]]
        return {
            "tenant_id": tenant_id,
            "total": total,
            "workspaces": shown,
            "next_before": shown[-1]["order"] if more else None,
        }


def _matches(row: dict[str, Any], wanted: str) -> bool:
    fields = (row["workspace_id"], row["service"], row["goal"], row["status_reason"], row["handoff"])
    return any(wanted in value.casefold() for value in fields if value)


def _aged(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The row with its ages as of ``now`` (the reader's clock, not the commits')."""
    opened = datetime.fromisoformat(row["opened_at"])
    last = datetime.fromisoformat(row["last_commit_at"])
    return {
        **row,
        "age_s": round((now - opened).total_seconds(), 1),
        "since_last_commit_s": round((now - last).total_seconds(), 1),
    }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
