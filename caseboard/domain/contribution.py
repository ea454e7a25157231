"""The envelope a participant submits, and the outcome it gets back (DESIGN.md §3)."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated

from pydantic import AwareDatetime, Field, StringConstraints

from caseboard.domain.items import Frozen, Id, Item, Role, WorkspaceId

IdempotencyKey = Annotated[str, StringConstraints(min_length=1, max_length=256)]
MAX_ITEMS = 100


class Author(Frozen):
    principal: Id
    role: Role


class Contribution(Frozen):
    workspace_id: WorkspaceId
    author: Author
    expected_version: Annotated[int, Field(ge=1)] | None = None
    idempotency_key: IdempotencyKey | None = None
    at: AwareDatetime | None = None
    items: Annotated[tuple[Item, ...], Field(min_length=1, max_length=MAX_ITEMS)]

    def content_digest(self) -> str:
        """What an idempotency key promises stays the same on a retry: who, and which items."""
        content = {
            "author": self.author.model_dump(mode="json"),
            "items": [item.model_dump(mode="json", exclude_none=True) for item in self.items],
        }
        canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return hashlib.sha256(canonical.encode()).hexdigest()
