"""Issue 23's scenario: evidence that expires while the workspace receives no commit (docs/model-view.md).

v1 open; v2 ``o-health`` ("checkout-db healthy", expires 09:05); v3 hypothesis ``h`` supported by it; v4
proposal ``p1`` depending on ``h``, committed at 09:03. Months later, with no commit since, it is used.
"""

from __future__ import annotations

from datetime import UTC, datetime

from caseboard.domain.items import Role
from caseboard.projections.model_view import ModelView, build_view
from caseboard.reducers import CURRENT
from tests.unit.board import Board, hyp, iso, obs, proposal

START = datetime(2026, 5, 11, 9, 0, tzinfo=UTC)
EXPIRES = datetime(2026, 5, 11, 9, 5, tzinfo=UTC)
BEFORE = datetime(2026, 5, 11, 9, 4, tzinfo=UTC)
MONTHS_LATER = datetime(2026, 9, 1, 8, 0, tzinfo=UTC)


def fresh_board(url: str = "memory://", workspace_id: str = "fresh-1", **limits: int) -> Board:
    board = Board(workspace_id, url=url)
    board.clock.now = START
    board.open(**limits)
    board.clock.advance(60)
    health = obs(
        "o-health",
        "checkout-db healthy",
        source={"system": "checkout-db", "instance": "db-primary"},
        event_time=iso(START),
        expires_at=iso(EXPIRES),
    )
    board.ok("specialist", [health])
    board.clock.advance(60)
    board.ok("planner", [hyp("h", "checkout latency is not the database", supporting_evidence=["o-health"])])
    board.clock.advance(60)
    board.ok("planner", [proposal("p1", 3, "h")])
    assert board.head == 4
    return board


def view_of(board: Board, as_of: datetime | None, version: int | None = None, budget: int = 6000) -> ModelView:
    state = board.coordinator.workspaces.state_at(board.workspace_id, version)
    commits = board.ledger.read(board.workspace_id, upto=state.version)
    return build_view(state, commits, Role.PLANNER, budget, CURRENT, as_of=as_of)
