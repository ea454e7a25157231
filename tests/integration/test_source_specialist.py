"""``SourceSpecialist`` as a participant: one tenant only, one query per claim, nothing done twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from caseboard.dispatcher.notification import Notification, notification_id
from caseboard.sources.base import Answer, Deadline, Query
from caseboard.sources.config import SourceConfig
from caseboard.workers.runtime import act, bounded_view
from tests.sources.board import WORKSPACE, embedded, request_and_answer, specialist, submit


class Counting:
    """A source that answers at once and counts its queries."""

    def __init__(self, real: Any) -> None:
        self.kinds = real.kinds
        self.operations = real.operations
        self.default_operation = real.default_operation
        self.plain = real.plain
        self.runs = 0

    def run(self, query: Query, deadline: Deadline) -> Answer:
        self.runs += 1
        return Answer(b'{"status":"success","data":{"resultType":"matrix","result":[]}}')

    def close(self) -> None:
        pass


CONFIG = SourceConfig.model_validate({"type": "prometheus", "endpoint": "http://127.0.0.1:9"})


def test_a_workspace_of_another_tenant_is_left_alone(tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", CONFIG, tenant="tenant-b")
        who.source = counting = Counting(who.source)
        commits = request_and_answer(app, who, "m-1", "metrics_query", "up")
    assert commits == [] and counting.runs == 0  # no claim, no query


def test_one_query_per_claim_a_stale_view_gets_the_same_result_and_a_redelivery_nothing(tmp_path: Path) -> None:
    with embedded(tmp_path) as app:
        who = specialist(app, "prometheus", CONFIG)
        who.source = counting = Counting(who.source)
        asked = submit(
            app,
            "planner-1",
            "planner",
            [{"type": "work_request", "request_id": "m-2", "kind": "metrics_query", "target": "up"}],
        )
        notification = Notification(
            id=notification_id(WORKSPACE, asked.workspace_version, "work_requested", "m-2"),
            kind="work_requested",
            audience="specialist",
            workspace_id=WORKSPACE,
            workspace_version=asked.workspace_version,
            subject="m-2",
            request_kind="metrics_query",
        )
        claim = who.contribute(notification, bounded_view(app.workspaces.show(WORKSPACE)))
        assert claim == [{"type": "work_claim", "request_id": "m-2", "lease_s": 300}]
        submit(app, who.principal, "specialist", claim)
        claimed = bounded_view(app.workspaces.show(WORKSPACE))
        first = who.contribute(notification, claimed)
        again = who.contribute(notification, claimed)  # as after a version conflict: the same items, no new query
        assert first == again and counting.runs == 1
        assert first is not None and first[0]["type"] == "work_result" and first[0]["generation"] == 1
        submit(app, who.principal, "specialist", first)
        head = app.ledger.head(WORKSPACE)
        assert act(app.coordinator(), who, notification) == []  # redelivered: the request is done
        assert app.ledger.head(WORKSPACE) == head and counting.runs == 1
