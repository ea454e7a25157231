"""The incident timeline: observations in source event-time order, with ingestion times and what each result
covered. One function, read by ``caseboard timeline`` and ``GET /workspaces/{id}/timeline`` alike.

Ordering is by source ``event_time`` (then the version that recorded it), never by arrival; where the reducer
says which observations share an instant (``tied_with``, v4), each entry carries them, so that a tie is never
read as an order. An observation a work result brought carries the request it answered and, where the reducer
keeps it, that query's coverage (time range, filters, targets, completion), so that a finding is never read
without what it covered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

ENTRY_KEYS = (
    "event_time",
    "event_time_quality",
    "ingested_at",
    "recorded_at_version",
    "id",
    "source",
    "statement",
    "late_arrival",
    "stale",
)


def timeline(projection: dict[str, Any]) -> list[dict[str, Any]]:
    """The timeline entries of a rendered projection."""
    coverage = {work["request_id"]: work.get("coverage") for work in projection.get("work", ())}
    observations = sorted(
        projection["observations"],
        key=lambda o: (datetime.fromisoformat(o["event_time"]), o["recorded_at_version"], o["id"]),
    )
    entries = []
    for obs in observations:
        entry = {key: obs[key] for key in ENTRY_KEYS}
        request = obs.get("via_request")
        entry["via_request"] = request
        entry["coverage"] = coverage.get(request) if request else None
        if "tied_with" in obs:  # reducer v4 (rule 8): events at the same instant are ties, not an order
            entry["tied_with"] = obs["tied_with"]
            entry["event_time_flags"] = obs["event_time_flags"]
        entries.append(entry)
    return entries
