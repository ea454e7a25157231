"""Freshness judged at use: which evidence has expired as of a time of use, and what rests on it.

The projection of a version judges expiry as of that version's commit time (DESIGN.md §4), so a replay
always shows the same bytes. A use of the evidence later is judged again at the time of use (DESIGN.md §7,
docs/model-view.md): the model-facing view (``as_of``), the controller's decisions (its clock), and the
readers of a version's projection, who are told what has expired since (``expired_since``).

Everything here is pure; statuses and what a proposal rests on come from the reducer's interface.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from caseboard.reducers import ObservationRec, Reducer, WorkspaceState

FINAL = ("revised", "withdrawn")


@dataclass(frozen=True)
class StaleEvidence:
    """An observation past its ``expires_at`` at the time of use, and the live proposals resting on it."""

    observation: str
    expires_at: datetime
    source_system: str
    source_instance: str
    via_request: str | None
    proposals: tuple[str, ...]


def expired(state: WorkspaceState, as_of: datetime | None) -> list[ObservationRec]:
    """The observations past their ``expires_at`` at ``as_of``, earliest expiry first."""
    if as_of is None:
        return []
    found = [o for o in state.observations.values() if o.expires_at is not None and o.expires_at <= as_of]
    return sorted(found, key=lambda o: (o.expires_at, o.id))


def stale_evidence(
    state: WorkspaceState, reducer: Reducer[WorkspaceState], as_of: datetime | None
) -> list[StaleEvidence]:
    """Every observation expired at ``as_of``, with the proposals (not revised or withdrawn) that rest on it,
    directly, through a hypothesis, a proposal they build on or a summary's sources (``reducer.rests_on``)."""
    stale = expired(state, as_of)
    resting: dict[str, list[str]] = {o.id: [] for o in stale}
    for proposal in state.proposals.values():
        if reducer.proposal_status(state, proposal, as_of) in FINAL:
            continue
        for ref in dict.fromkeys(reducer.rests_on(state, proposal)):
            if ref in resting:
                resting[ref].append(proposal.id)
    return [
        StaleEvidence(o.id, o.expires_at, o.source_system, o.source_instance, o.via_request, tuple(resting[o.id]))
        for o in stale
        if o.expires_at is not None
    ]


def stale_proposals(
    state: WorkspaceState, reducer: Reducer[WorkspaceState], as_of: datetime | None
) -> dict[str, list[str]]:
    """The proposals that require revalidation at ``as_of`` and rest on evidence expired then: each with that
    evidence."""
    out: dict[str, list[str]] = {}
    for evidence in stale_evidence(state, reducer, as_of):
        for proposal_id in evidence.proposals:
            if reducer.proposal_status(state, state.proposals[proposal_id], as_of) == "requires_revalidation":
                out.setdefault(proposal_id, []).append(evidence.observation)
    return {p: out[p] for p in state.proposals if p in out}


def expired_since(document: dict[str, Any], now: datetime) -> list[tuple[str, str]]:
    """``(id, expires_at)`` of each observation a rendered projection shows as fresh that has expired by ``now``:
    what a reader of a past version is told beside the unchanged projection (``stale_now``)."""
    found = []
    for obs in _observations(document):
        expires = obs.get("expires_at")
        if expires and not obs.get("stale") and datetime.fromisoformat(expires) <= now:
            found.append((str(obs["id"]), str(expires)))
    return found


def stale_now_line(document: dict[str, Any], now: datetime) -> str | None:
    """The one line ``caseboard show`` writes to stderr when evidence it shows has expired since."""
    found = expired_since(document, now)
    if not found:
        return None
    listed = ", ".join(f"{ref} expired at {at}" for ref, at in found)
    return f"stale_now: {listed} (after this version's commit time {document.get('as_of')}; judged at {_iso(now)})"


STALE_NOW_HEADER = "X-Caseboard-Stale-Now"
HEADER_LIMIT = 4000
"""The longest ``X-Caseboard-Stale-Now`` value: ids past it are counted, not listed."""


def stale_now_header(document: dict[str, Any], now: datetime) -> str | None:
    """The ``X-Caseboard-Stale-Now`` header of ``GET /workspaces/{id}``: the ids, comma-separated."""
    ids = [ref for ref, _ in expired_since(document, now)]
    if not ids:
        return None
    value = ""
    for n, ref in enumerate(ids):
        candidate = f"{value},{ref}" if value else ref
        if len(candidate) > HEADER_LIMIT:
            return f"{value},+{len(ids) - n} more"
        value = candidate
    return value


def _observations(document: dict[str, Any]) -> Iterable[dict[str, Any]]:
    observations = document.get("observations")
    return observations if isinstance(observations, list) else []


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
