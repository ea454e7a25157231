"""What became of a workspace's handoffs: each commit that handed it to a person, and every attempt to deliver
it (``caseboard handoffs``, ``GET /workspaces/{id}/health``'s ``handoffs``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from caseboard.dispatcher.route import handoff_trigger
from caseboard.domain.commit import Commit
from caseboard.handoff.document import handoff_id


def handoffs(
    key: str, commits: Iterable[Commit], attempts: list[dict[str, Any]], webhooks: int
) -> list[dict[str, Any]]:
    """One entry per handoff of the workspace ``key``, oldest first: its id, version, trigger, its ``state``
    (``delivered`` to every webhook, ``failed`` while one has not taken it, ``pending`` before any attempt,
    ``no_webhook`` when the tenant has none) and its attempts."""
    by_id: dict[str, list[dict[str, Any]]] = {}
    for attempt in attempts:
        by_id.setdefault(attempt["handoff_id"], []).append(attempt)
    found = []
    for commit in commits:
        trigger = handoff_trigger(commit)
        if trigger is None:
            continue
        hid = handoff_id(key, commit.version)
        tried = by_id.get(hid, [])
        delivered = {a["webhook"] for a in tried if a["outcome"] == "delivered"}
        if webhooks == 0:
            state = "no_webhook"
        elif not tried:
            state = "pending"
        else:
            state = "delivered" if len(delivered) >= webhooks else "failed"
        found.append(
            {
                "handoff_id": hid,
                "workspace_version": commit.version,
                "trigger": trigger,
                "state": state,
                "attempts": tried,
            }
        )
    return found
