"""Issue 23's scenario on SQLite and PostgreSQL: evidence that expired while the workspace received no commit is
stale in the view used later, the projection of its version keeps its bytes and says what expired since, and
the controller's next cycle requests a re-check of the source."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from caseboard.dispatcher.notification import Notification
from caseboard.workers.controller import Controller
from caseboard.workers.runtime import bounded_view
from tests.conftest import caseboard
from tests.http_server import running_server
from tests.unit.board import Board, FakeClock
from tests.unit.freshness_board import BEFORE, MONTHS_LATER, fresh_board


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


@pytest.fixture
def board(url: str) -> Iterator[Board]:
    board = fresh_board(url)
    yield board
    board.ledger.close()


def test_the_view_used_months_later_marks_expired_evidence_and_the_controller_rechecks_its_source(
    url: str, board: Board
) -> None:
    with running_server(url) as server:
        planner = server.as_("planner-1", "planner")
        before = planner.get("/workspaces/fresh-1", params={"version": 4})
        assert before.status_code == 200 and before.headers["X-Caseboard-Stale-Now"] == "o-health"
        assert before.json() == board.show(4)
        health = next(o for o in before.json()["observations"] if o["id"] == "o-health")
        assert health["stale"] is False

        later: dict[str, str | int] = {"budget_chars": 6000, "as_of": "2026-09-01T08:00:00Z"}
        view = planner.get("/workspaces/fresh-1/view", params=later).json()
        assert view["as_of"] == "2026-09-01T08:00:00Z"
        assert view["stale"] == ["o-health"] and view["stale_proposals"] == {"p1": ["o-health"]}
        assert [e["ref"] for e in view["entries"] if e["section"] == "revalidation"] == ["p1", "o-health"]
        early = planner.get("/workspaces/fresh-1/view", params={"budget_chars": 6000, "as_of": BEFORE.isoformat()})
        assert early.json()["stale"] == [] and early.json()["stale_proposals"] == {}
        now = planner.get("/workspaces/fresh-1/view", params={"budget_chars": 6000}).json()
        assert datetime.fromisoformat(now["as_of"]) > MONTHS_LATER and now["stale"] == ["o-health"]

        notice = Notification(
            id="fresh-1/4/snapshot",
            kind="snapshot_changed",
            audience="snapshot",
            workspace_id="fresh-1",
            workspace_version=4,
        )
        controller = Controller(board.ledger, clock=FakeClock(MONTHS_LATER))
        items = controller.contribute(notice, bounded_view(board.show())) or []
        [recheck] = [i for i in items if i["type"] == "work_request"]
        assert (recheck["request_id"], recheck["target"]) == ("recheck-o-health", "checkout-db/db-primary")
        board.clock.now = MONTHS_LATER
        board.ok("controller", items, "controller")
        assert board.work("recheck-o-health")["status"] == "awaiting_result"

        after = planner.get("/workspaces/fresh-1", params={"version": 4})
        assert after.content == before.content
        assert planner.get("/workspaces/fresh-1/view", params=later).json()["built_from_version"] == 5


def test_caseboard_show_keeps_its_output_and_names_evidence_expired_since_on_stderr(url: str, board: Board) -> None:
    shown = caseboard("show", "fresh-1", "--at-version", "4", url=url)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == board.show(4)
    [line] = [text for text in shown.stderr.splitlines() if text.startswith("stale_now:")]
    assert line.startswith("stale_now: o-health expired at 2026-05-11T09:05:00Z")
    assert "(after this version's commit time 2026-05-11T09:03:00Z" in line
    assert datetime.now(UTC) > MONTHS_LATER  # the machine's clock is past the expiry, as the scenario needs
