"""A notification: a stable, self-describing announcement that something committed.

The id is derived from what it announces (``incident-042@19/evidence_changed/hyp-x``), never random, so a
re-sent notification has the same id and a consumer that already processed it can tell.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from caseboard.domain.items import Frozen

Kind = Literal[
    "proposal_requires_revalidation",  # planner: a proposal's basis moved under it
    "evidence_changed",  # planner: evidence under one of its hypotheses changed
    "claim_to_check",  # verifier: a claim with evidence, not verified yet
    "work_requested",  # specialists of the request's kind: open work (new, or back after a reclaim)
    "turn",  # a participant the controller scheduled in a cycle
    "status_changed",  # reporter: the workspace status moved
    "late_counterevidence",  # reporter: a late arrival bears on the closed workspace's conclusion (ADR 0165)
    "snapshot_changed",  # snapshot subscribers (controller): coalesced, only the latest matters
    "commit",  # history consumers: every commit, in order
    "handoff",  # the handoff deliverer: the workspace needs a person (caseboard/handoff)
]

AUDIENCES = ("planner", "verifier", "specialist", "reporter", "snapshot", "history", "handoff")


class Notification(Frozen):
    id: str
    kind: Kind
    audience: Literal["planner", "verifier", "specialist", "reporter", "snapshot", "history", "handoff"]
    workspace_id: str
    workspace_version: int
    subject: str | None = None
    request_kind: str | None = None
    principal: str | None = None
    based_on_version: int | None = None
    """For announcements that something is stale: the version the stale thing rests on."""
    evidence_revisions: dict[str, int] = Field(default_factory=dict)
    """Each announced evidence id with the workspace version of its latest change."""
    handed_back: int | None = None
    """How often consumers of other tenants handed this message back to its shared queue (``broker.pass_on``)."""

    @property
    def queue(self) -> str:
        return queue_of(self.audience, self.request_kind)

    @property
    def coalesces(self) -> bool:
        return self.kind == "snapshot_changed"


def queue_of(audience: str, request_kind: str | None = None) -> str:
    """The queue of an audience's notifications; a specialist's are by the kind of request."""
    if audience == "specialist" and request_kind:
        return specialist_queue(request_kind)
    return f"caseboard.{audience}"


def specialist_queue(kind: str) -> str:
    return "caseboard.specialist." + re.sub(r"[^A-Za-z0-9_.-]", "_", kind)


def notification_id(workspace_id: str, version: int, kind: str, subject: str | None = None) -> str:
    return f"{workspace_id}@{version}/{kind}" + (f"/{subject}" if subject else "")
