"""What the controller may request beside a cycle: re-checks of stale evidence and the rest of incomplete checks.

``followups(state, reducer, now)`` is pure and judges freshness at ``now``, the controller's clock:

- an observation past its ``expires_at`` that a live proposal rests on needs a re-check of its source: a
  ``work_request`` ``recheck-<observation>`` of the kind of the request that produced it (``recheck`` when it
  came from no request), targeting the source system and instance;
- a check whose query did not complete (``incomplete``) is missing work: a ``work_request``
  ``<request>-rest`` of the same kind asks for what it did not cover; an incomplete rest gets a rest of its
  own, up to ``REST_LIMIT`` rests of one check (a check that never completes does not make a chain without
  end: ADR 0125);
- what is still missing coverage (a check whose last attempt has not completed) is named for the handoff,
  one line per check, however many rests it had.

Each is requested once (its request id is deterministic); the controller keeps them within the budget
(pending-work limit, cycles). docs/model-view.md, ADR 0061 and ADR 0125.
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
REST_LIMIT = 2
"""How many rests one check gets: the check, its rest and the rest of that; then its coverage stays missing."""


@dataclass(frozen=True)
class Followups:
    requests: tuple[dict[str, Any], ...] = ()
    """``work_request`` items, re-checks first, in the order the state holds their subjects."""
    stale_proposals: tuple[str, ...] = ()
    """Live proposals resting on evidence expired at the controller's clock."""
    missing_coverage: tuple[str, ...] = field(default=())
    """One line per incomplete check whose last rest has not completed: what its last attempt covered."""


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
    rests = {_rest_id(w.request_id) for w in state.work.values() if w.status == "incomplete"}
    for work in state.work.values():
        if work.status != "incomplete" or work.request_id in rests:
            continue  # the rest of an incomplete check is followed from that check
        attempts = [work]
        while attempts[-1].status == "incomplete" and _rest_id(attempts[-1].request_id) in state.work:
            attempts.append(state.work[_rest_id(attempts[-1].request_id)])
        last = attempts[-1]
        if last.status == "completed":
            continue
        said = finding(last.status, last.result_summary, coverage.get(last.request_id))
        tried = f" after {len(attempts)} attempts (last {last.request_id})" if len(attempts) > 1 else ""
        missing.append(f"check {work.request_id} ({work.kind}, {work.target}) is {said}{tried}")
        if last.status == "incomplete" and len(attempts) <= REST_LIMIT:
            requests.append(
                {
                    "type": "work_request",
                    "request_id": _rest_id(last.request_id),
                    "kind": work.kind,
                    "target": f"{work.target} (what {last.request_id} did not cover: its query did not complete)",
                    **({"question": work.question} if work.question else {}),
                }
            )
    return Followups(tuple(requests), tuple(stale_proposals), tuple(missing))


def _rest_id(request_id: str) -> str:
    return _id("", request_id, "-rest")


def _id(prefix: str, ref: str, suffix: str = "") -> str:
    """``prefix + ref + suffix``, or a digest of ``ref`` in its place when that would be too long for an id."""
    whole = f"{prefix}{ref}{suffix}"
    if len(whole) <= ID_LIMIT:
        return whole
    return f"{prefix}{hashlib.sha256(ref.encode()).hexdigest()[:16]}{suffix}"


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
