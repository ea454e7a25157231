"""The ledger's record of one accepted contribution: its items as submitted, and the coordinator's decisions.

A commit holds inputs and recorded judgments only, never derived state. ``decisions`` has one entry per item,
in item order: what the coordinator decided at commit time (selection, a claim's generation and lease, an
escalation), so that any reducer can fold the commit without deciding again.

Commits form a hash chain: ``hash`` is the SHA-256 of the commit's canonical JSON without ``hash`` itself,
and ``previous_hash`` is the hash of the commit before it (absent on version 1). Altering a stored commit
breaks its own hash; re-sealing it breaks the next commit's ``previous_hash``.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, Field

from caseboard.domain.contribution import Author, IdempotencyKey
from caseboard.domain.items import Frozen, Id, Item

COMMIT_TOPIC = "caseboard.commit"
"""The stored name of a commit in the ledger; never a module path."""

COMMIT_SCHEMA_VERSION = 1

Decision = dict[str, Any]


class Commit(Frozen):
    schema_version: Literal[1] = 1
    workspace_id: Id
    version: Annotated[int, Field(ge=1)]
    at: AwareDatetime
    author: Author
    expected_version: int | None = None
    idempotency_key: IdempotencyKey | None = None
    digest: str | None = None
    items: tuple[Item, ...]
    decisions: tuple[Decision, ...]
    previous_hash: str | None = None
    hash: str | None = None

    def content_hash(self) -> str:
        content = self.model_dump(mode="json", exclude_none=True, exclude={"hash"})
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def sealed(self) -> Commit:
        return self.model_copy(update={"hash": self.content_hash()})

    def outcome_items(self) -> list[dict[str, Any]]:
        """Each item with what the coordinator decided about it, as returned to the submitter."""
        return [
            {"type": item.type, "ref": describe(item), **decision}
            for item, decision in zip(self.items, self.decisions, strict=True)
        ]

    def outcome(self) -> dict[str, Any]:
        return {"ok": True, "workspace_version": self.version, "items": self.outcome_items()}

    def summary(self) -> dict[str, Any]:
        """A short account of the commit, for a writer that has to catch up."""
        return {
            "workspace_version": self.version,
            "at": _iso(self.at),
            "author": self.author.principal,
            "items": [describe(item) for item in self.items],
        }


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def describe(item: Item) -> str:
    for field in ("id", "request_id", "invocation_id", "proposal", "question"):
        value = getattr(item, field, None)
        if isinstance(value, str):
            return f"{item.type} {value}"
    if item.type == "link":
        return f"link {item.observation} {item.relation} {item.hypothesis}"
    if item.type == "status":
        return f"status {item.to}"
    if item.type == "cycle":
        return f"cycle {item.number}"
    return item.type
