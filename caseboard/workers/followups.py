"""What the controller may request beside a cycle: re-checks of stale evidence and the rest of incomplete checks.

``followups(state, reducer, now)`` is pure and judges freshness at ``now``, the controller's clock:

- an observation past its ``expires_at`` that a live proposal rests on needs a re-check of its source: a
  ``work_request`` ``recheck-<observation>`` of the kind of the request that produced it (``recheck`` when it
  came from no request), targeting the source system and instance;
- a check whose query did not complete (``incomplete``) is missing work: a ``work_request``
  ``<request>-rest`` of the same kind asks for what it did not cover;
- what is still missing coverage (an incomplete check without a completed rest) is named for the handoff.

Each is requested once (its request id is deterministic); the controller keeps them within the budget
(pending-work limit, cycles). docs/model-view.md and ADR 0061.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from caseboard.projections.freshness import stale_evidence
from caseboard.reducers import Reducer, WorkspaceState, finding

ID_LIMIT = 128
RECHECK_KIND = "recheck"


@dataclass(frozen=True)
class Followups:
    requests: tuple[dict[str, Any], ...] = ()
    """``work_request`` items, re-checks first, in the order the state holds their subjects."""
    stale_proposals: tuple[str, ...] = ()
    """Live proposals resting on evidence expired at the controller's clock."""
    missing_coverage: tuple[str, ...] = field(default=())
    """One line per incomplete check whose rest has not completed: what it covered."""


def followups(state: WorkspaceState, reducer: Reducer[WorkspaceState], now: datetime) -> Followups:
    requests: list[dict[str, Any]] = []
    stale_proposals: dict[str, None] = {}
    for evidence in stale_evidence(state, reducer, now):
        if not evidence.proposals:
            continue
        stale_proposals.update(dict.fromkeys(evidence.proposals))
        request_id = _id("recheck-", evidence.observation)
        if request_id in state.work:
            continue
        origin = state.work.get(evidence.via_request or "")
        requests.append(
            {
                "type": "work_request",
                "request_id": request_id,
                "kind": origin.kind if origin is not None else RECHECK_KIND,
                "target": f"{evidence.source_system}/{evidence.source_instance}",
                "question": (
                    f"{evidence.observation} expired at {_iso(evidence.expires_at)} and "
                    f"{', '.join(evidence.proposals[:5])}{' and others' if len(evidence.proposals) > 5 else ''} "
                    "rest on it: does it still hold?"
                ),
            }
        )
    missing: list[str] = []
    coverage = getattr(state, "coverage", {})
    for work in state.work.values():
        if work.status != "incomplete":
            continue
        rest_id = _id("", work.request_id, "-rest")
        rest = state.work.get(rest_id)
        if rest is None or rest.status != "completed":
            said = finding(work.status, work.result_summary, coverage.get(work.request_id))
            missing.append(f"check {work.request_id} ({work.kind}, {work.target}) is {said}")
        if rest is None:
            requests.append(
                {
                    "type": "work_request",
                    "request_id": rest_id,
                    "kind": work.kind,
                    "target": f"{work.target} (what {work.request_id} did not cover: its query did not complete)",
                    **({"question": work.question} if work.question else {}),
                }
            )
    return Followups(tuple(requests), tuple(stale_proposals), tuple(missing))


def _id(prefix: str, ref: str, suffix: str = "") -> str:
    """``prefix + ref + suffix``, or a digest of ``ref`` in its place when that would be too long for an id."""
    whole = f"{prefix}{ref}{suffix}"
    if len(whole) <= ID_LIMIT:
        return whole
    return f"{prefix}{hashlib.sha256(ref.encode()).hexdigest()[:16]}{suffix}"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
