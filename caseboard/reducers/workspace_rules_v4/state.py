"""The state of reducer workspace-rules-v4: v3's state, with what v4 keeps beside it.

- ``first_event_at`` / ``last_event_at``: the earliest and latest event time of the workspace's observations,
  kept as they arrive: the workspace's incident window (ADR 0132), read in O(1);
- ``decided_on``: for each hypothesis a verification settled, the version that verification was decided on
  (rule 4: a material change to the hypothesis after it leaves a confirmation ``confirmed_before_challenge``);
- ``future_clock``: the observations whose event time is later than their commit's time by more than the skew
  (rule 8), by id, with the version that recorded them: shown ``unverified`` with ``event_time_in_future``;
- ``unsettled``: each verification or answer that would have settled a claim on a check whose coverage does
  not cover it (rule 1 of docs/rules-of-evidence.md), with what the coverage is missing;
- ``copy_of`` / ``copies`` / ``excerpt_sources`` / ``cited_spans``: observations whose citations resolve to the
  same excerpt (rule 6, ADR 0166): the first to cite it is the source, each later one a copy of it.
  ``excerpt_sources`` finds a group by the excerpt's SHA-256 recorded at commit, ``cited_spans`` by an
  overlapping range of the same artifact in the same unit (``lines`` or ``bytes``): both in what one
  artifact's citations touch, never the history;
- ``late_counter``: each late arrival that bears on a closed conclusion (a confirmed hypothesis, an accepted
  plan), one record per observation and conclusion, with why (rule 2, ADR 0165).
- ``fenced_claims`` / ``fenced_writes`` / ``check_results``: who was fenced from which request, the observations
  such a principal recorded about that request's target afterwards, and the observation each check's result
  carried (rule 5, ADR 0167);
- ``held``: the questions, checks and proposals the coordinator held for lack of capacity (rule 9, ADR 0168).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from caseboard.domain.principals import principal_key
from caseboard.reducers.workspace_rules_v3.state import RECORDS as V3_RECORDS
from caseboard.reducers.workspace_rules_v3.state import WorkspaceStateV3
from caseboard.reducers.workspace_rules_v3.state import slot as slot_v3


@dataclass(frozen=True, slots=True)
class UnsettledRec:
    """A verification (of a hypothesis) or an answer (to a question) that settled nothing: the checks it cited
    did not cover the claim. ``missing`` holds ``check:part`` pairs (``query``, ``time_range``, ``targets``,
    ``filters``, ``completed``); the window is the period the claim is about, when one is known."""

    ref: str
    kind: str
    claim: str
    checks: tuple[str, ...]
    result: str
    author: str
    version: int
    missing: tuple[str, ...]
    window_start: datetime | None
    window_end: datetime | None


@dataclass(frozen=True, slots=True)
class LateCounterRec:
    """A late arrival (observation ``observation``, recorded at ``version`` while the workspace was closed) that
    bears on the conclusion ``bears_on`` (a ``hypothesis`` or a ``proposal``), and why (ADR 0165)."""

    ref: str
    observation: str
    bears_on: str
    kind: str
    why: str
    author: str
    version: int


@dataclass(frozen=True, slots=True)
class FencedWriteRec:
    """An observation recorded by a principal whose claim on ``request_id`` had been fenced, about that
    request's target (rule 5, ADR 0167): flagged, and not counted as support until the live holder's result
    corroborates it or a verification settles the hypothesis."""

    ref: str
    request_id: str
    author: str
    version: int


@dataclass(frozen=True, slots=True)
class FencedClaimsRec:
    """The requests a principal (``principal_key``) had its claim on fenced from (rule 5, ADR 0167)."""

    principal: str
    requests: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HeldRec:
    """A question, check or proposal the coordinator held for lack of capacity (rule 9, ADR 0168): in the ledger
    as submitted (``item``, its JSON), recorded as nothing else."""

    ref: str
    type: str
    item_id: str
    limit: str
    limit_value: int
    open: int
    author: str
    version: int
    item: dict[str, Any]


RECORDS: dict[str, type[Any]] = {
    **V3_RECORDS, "unsettled": UnsettledRec, "fenced_claims": FencedClaimsRec, "fenced_writes": FencedWriteRec,
    "held": HeldRec, "late_counter": LateCounterRec,
}  # fmt: skip


@dataclass(slots=True)
class WorkspaceStateV4(WorkspaceStateV3):
    exhausted_at: int | None = None
    """The version that set ``budget_exhausted``, until a reopen: work stays stopped whatever status is set in
    between (issue 33, rule 10; read by the coordinator through ``Reducer.stopped``)."""
    first_event_at: datetime | None = None
    last_event_at: datetime | None = None
    unsettled: MutableMapping[str, UnsettledRec] = field(default_factory=dict)
    check_runners: MutableMapping[str, str] = field(default_factory=dict)
    """Who ran each check: the author of its result, by request id (issue 33, rule 3; read by the coordinator
    through ``Reducer.check_runner``)."""
    decided_on: MutableMapping[str, int] = field(default_factory=dict)
    future_clock: MutableMapping[str, int] = field(default_factory=dict)
    copy_of: MutableMapping[str, str] = field(default_factory=dict)
    copies: MutableMapping[str, tuple[str, ...]] = field(default_factory=dict)
    excerpt_sources: MutableMapping[str, str] = field(default_factory=dict)
    cited_spans: MutableMapping[str, tuple[tuple[str, int, int, str], ...]] = field(default_factory=dict)
    late_counter: MutableMapping[str, LateCounterRec] = field(default_factory=dict)
    fenced_claims: MutableMapping[str, FencedClaimsRec] = field(default_factory=dict)
    """Rule 5 (ADR 0167): for each principal (``principal_key``), the requests its claim on was fenced (a reclaim,
    or another's claim after its lease lapsed)."""
    fenced_writes: MutableMapping[str, FencedWriteRec] = field(default_factory=dict)
    check_results: MutableMapping[str, str] = field(default_factory=dict)
    """Rule 5: the observation each check's result carried, by request id."""
    held: MutableMapping[str, HeldRec] = field(default_factory=dict)
    """Rule 9 (ADR 0168): the items held for lack of capacity, by ``<type> <id>@<version>``."""

    MAPPINGS: ClassVar[tuple[str, ...]] = (
        *WorkspaceStateV3.MAPPINGS, "unsettled", "check_runners", "decided_on", "future_clock",
        "copy_of", "copies", "excerpt_sources", "cited_spans",
        "fenced_claims", "fenced_writes", "check_results", "held", "late_counter",
    )  # fmt: skip

    def copied_from(self, excerpt: Mapping[str, Any]) -> str | None:
        """The source an excerpt recorded at commit (``{"artifact", "lines"|"bytes", "sha256"}``) copies: the
        first observation whose excerpt has its SHA-256, or whose range of the same artifact, in the same unit,
        overlaps it; None when it is the first. Reads one artifact's citations."""
        found = self.excerpt_sources.get(str(excerpt.get("sha256")))
        if found is not None:
            return found
        unit = "lines" if "lines" in excerpt else "bytes"
        first, last = excerpt[unit]
        for span_unit, start, end, source in self.cited_spans.get(str(excerpt.get("artifact")), ()):
            if span_unit == unit and start <= last and first <= end:
                return source
        return None

    def copy_group(self, ref: str) -> tuple[str, ...]:
        """The observations that are one source with ``ref``: its source first, then its copies; ``(ref,)``
        when it shares its excerpt with none."""
        source = self.copy_of.get(ref, ref)
        copies = self.copies.get(source)
        return (source, *copies) if copies else (ref,)

    def cite(self, ref: str, excerpt: Mapping[str, Any]) -> None:
        """Record that observation ``ref`` cites ``excerpt``: a copy of the source it shares it with, if any."""
        source = self.copied_from(excerpt)
        if source is not None:
            self.copy_of[ref] = source
            self.copies[source] = (*self.copies.get(source, ()), ref)
        sha256, artifact = str(excerpt.get("sha256")), str(excerpt.get("artifact"))
        if sha256 not in self.excerpt_sources:
            self.excerpt_sources[sha256] = source or ref
        unit = "lines" if "lines" in excerpt else "bytes"
        first, last = excerpt[unit]
        span = (unit, int(first), int(last), source or ref)
        self.cited_spans[artifact] = (*self.cited_spans.get(artifact, ()), span)


def slot(principal: str, key: str) -> str:
    """Where a principal's idempotency key lives: v3's slot, of the principal as principals are compared
    (``principal_key``), so ``Planner-1`` retrying with ``planner-1``'s key gets its outcome. The stored digest
    is unchanged: it is of the contribution as written."""
    return slot_v3(principal_key(principal), key)


__all__ = [
    "RECORDS",
    "FencedClaimsRec",
    "FencedWriteRec",
    "HeldRec",
    "LateCounterRec",
    "UnsettledRec",
    "WorkspaceStateV4",
    "slot",
]
