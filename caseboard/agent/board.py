"""What a model-backed participant reads and writes, through the App's public parts.

``read`` gives the projection at the head, the bounded model-facing view of it for one role (judged now,
with the cited excerpts it quotes) and the commits the budget is charged from, from the workspace's cached
state under its lock (``Workspaces.head_state``) and the commits this board has read so far; ``submit`` hands a
contribution to the one parser and the coordinator; ``keep_prompt`` stores the exact bytes of a prompt in the
artifact store, where its id is the SHA-256 the judgment records (docs/adr/0111).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from caseboard.app import App
from caseboard.coordinator import parse_contribution
from caseboard.domain.commit import Commit
from caseboard.domain.errors import Refusal, UnknownWorkspace
from caseboard.domain.items import Role
from caseboard.domain.outcome import Outcome
from caseboard.evidence.cited import excerpts_for
from caseboard.projections.model_view import ModelView, build_view
from caseboard.reducers import WorkspaceState

PROMPT_MEDIA_TYPE = "application/json"
PROMPT_SOURCE = "caseboard.agent"
REPLY_MEDIA_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class Reading:
    projection: dict[str, Any]
    view: ModelView
    commits: list[Commit]
    """The workspace's commits up to the head read: what the budget is charged from."""


def _now() -> datetime:
    return datetime.now(UTC)


class Board:
    def __init__(self, app: App, *, clock: Callable[[], datetime] = _now) -> None:
        self.app = app
        self.clock = clock
        self._known: dict[str, list[Commit]] = {}
        self._guard = threading.Lock()

    def read(self, workspace_id: str, role: Role, budget_chars: int) -> Reading:
        """The head as the workspace's cached state has it, its view for ``role`` and what was spent."""
        workspaces = self.app.workspaces
        known = self._commits(workspace_id)
        excerpts = excerpts_for(lambda: self.app.artifacts, self._tenant(known), known)
        when = self.clock()

        def take(state: WorkspaceState) -> tuple[dict[str, Any], ModelView, list[Commit]]:
            commits = self._commits(workspace_id) if state.version > len(known) else known[: state.version]
            view = build_view(
                state, commits, role, budget_chars, workspaces.reducer.name, as_of=when, excerpts=excerpts
            )
            return workspaces.reducer.render(state), view, commits

        _, (projection, view, commits) = workspaces.head_state(workspace_id, take)
        if not projection.get("workspace_version"):
            raise UnknownWorkspace(workspace_id)
        return Reading(projection, view, commits)

    def _commits(self, workspace_id: str) -> list[Commit]:
        """Every commit of the workspace: those read before, and those after them read now (commits are
        immutable, so each is read and decoded once)."""
        with self._guard:
            known = self._known.setdefault(workspace_id, [])
            known.extend(self.app.ledger.read(workspace_id, after=len(known)))
            return list(known)

    @staticmethod
    def _tenant(commits: list[Commit]) -> str | None:
        scope = getattr(commits[0].items[0], "scope", None) if commits else None
        return getattr(scope, "tenant_id", None)

    def submit(self, body: dict[str, Any], key: str | None = None) -> Outcome:
        """The coordinator's outcome: accepted, or refused with its reason (by the parser, or the coordinator).
        ``key``: the workspace's key, as a notification names it (``Coordinator.submit``)."""
        try:
            contribution = parse_contribution(body)
        except Refusal as refusal:
            return refusal.outcome()
        return self.app.coordinator().submit(contribution, key)

    def keep_prompt(self, tenant_id: str, data: bytes, stored_by: str) -> str:
        stored = self.app.artifacts.put(
            tenant_id, [data], stored_by=stored_by, media_type=PROMPT_MEDIA_TYPE, source_system=PROMPT_SOURCE
        )
        return stored.meta.artifact_id

    def keep_reply(self, tenant_id: str, data: bytes, stored_by: str) -> str:
        """The exact bytes of a model's reply, kept as the prompt is (ADR 0152)."""
        stored = self.app.artifacts.put(
            tenant_id, [data], stored_by=stored_by, media_type=REPLY_MEDIA_TYPE, source_system=PROMPT_SOURCE
        )
        return stored.meta.artifact_id
