"""What a model-backed participant reads and writes, through the App's public parts.

``read`` gives the projection at the head, the bounded model-facing view of it for one role (judged now,
with the cited excerpts it quotes) and what the workspace's judgments have spent; ``submit`` hands a
contribution to the one parser and the coordinator; ``keep_prompt`` stores the exact bytes of a prompt in the
artifact store, where its id is the SHA-256 the judgment records (docs/adr/0111).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from caseboard.agent.budget import Spent, spent
from caseboard.app import App
from caseboard.coordinator import parse_contribution
from caseboard.domain.errors import Refused
from caseboard.domain.items import Role
from caseboard.evidence.cited import excerpts_for
from caseboard.projections.model_view import ModelView, build_view

PROMPT_MEDIA_TYPE = "application/json"
PROMPT_SOURCE = "caseboard.agent"


@dataclass(frozen=True)
class Reading:
    projection: dict[str, Any]
    view: ModelView
    spent: Spent


def _now() -> datetime:
    return datetime.now(UTC)


class Board:
    def __init__(self, app: App, *, clock: Callable[[], datetime] = _now) -> None:
        self.app = app
        self.clock = clock

    def read(self, workspace_id: str, role: Role, budget_chars: int) -> Reading:
        workspaces = self.app.workspaces
        state = workspaces.state_at(workspace_id)
        commits = self.app.ledger.read(workspace_id, upto=state.version)
        excerpts = excerpts_for(lambda: self.app.artifacts, state.tenant_id, commits)
        view = build_view(
            state, commits, role, budget_chars, workspaces.reducer.name, as_of=self.clock(), excerpts=excerpts
        )
        projection = workspaces.show(workspace_id, state.version)
        return Reading(projection, view, spent(commits))

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        """The coordinator's outcome as the contract's JSON (accepted, or refused with its reason)."""
        try:
            contribution = parse_contribution(body)
        except Refused as refusal:
            return refusal.to_outcome()
        return outcome_dict(self.app.coordinator().submit(contribution))

    def keep_prompt(self, tenant_id: str, data: bytes, stored_by: str) -> str:
        stored = self.app.artifacts.put(
            tenant_id, [data], stored_by=stored_by, media_type=PROMPT_MEDIA_TYPE, source_system=PROMPT_SOURCE
        )
        return stored.meta.artifact_id


def outcome_dict(outcome: Any) -> dict[str, Any]:
    """An outcome as the contract's JSON, whatever shape the coordinator returns it in (a dict today)."""
    if isinstance(outcome, dict):
        return outcome
    for method in ("to_outcome", "to_dict", "model_dump"):
        convert = getattr(outcome, method, None)
        if callable(convert):
            converted = convert()
            if isinstance(converted, dict):
                return converted
    if dataclasses.is_dataclass(outcome) and not isinstance(outcome, type):
        return dataclasses.asdict(outcome)
    raise TypeError(f"the coordinator answered with a {type(outcome).__name__}, not an outcome")
