"""A process that runs the participants, restarted (SIGTERM, then started again) while investigations run beside a
plain worker: every investigation reaches its outcome (docs/adr/0192).

The plain worker consumes the participants' shared queues too, and passes a participant's notification on to a
process that has announced itself as running it. Before ADR 0192 the stopping process withdrew its announcements, so
the plain worker found nobody during the restart and absorbed the turns it took: each counted as a pass, and a
workspace whose planner or verifier was wanted was handed to a person as ``evidence_incomplete`` ("no participant
has anything left to do") or waited on a turn timeout."""

from __future__ import annotations

import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.e2e.procs import Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WORKSPACES = [f"incident-{n}" for n in range(6)]
SCRIPTED = ("worker", "--tenant", "tenant-a", "--participant", "scripted", "--tick", "0.5")


def test_a_participants_process_restarted_beside_a_plain_worker_loses_no_turn(cluster: Cluster) -> None:
    plain = cluster.spawn("worker", "--tenant", "tenant-a", "--tick", "0.5")
    scripted = cluster.spawn(*SCRIPTED)
    poll("both announced", lambda: all(cluster.saw(p, "consumers_announced") for p in (plain, scripted)), timeout=60)
    cluster.spawn("dispatch", "--poll", "0.1")
    ledger = open_ledger(cluster.database_url)
    try:
        coordinator = Coordinator(ledger)
        for workspace in WORKSPACES:
            body = {"workspace_id": workspace, "author": {"principal": "oncall-operator", "role": "operator"}}
            assert coordinator.submit(parse_contribution({**body, "items": [open_item(8)]}))["ok"]

        def heads() -> list[int]:
            return [int(coordinator.workspaces.show(w)["workspace_version"]) for w in WORKSPACES]

        poll("every investigation under way", lambda: min(heads()) >= 3, timeout=30, every=0.05)
        cluster.stop(scripted)
        assert scripted.returncode == 0
        # the restart falls within the investigations (here each was at version 4-9 of about 16)
        assert "investigating" in {str(coordinator.workspaces.show(w)["status"]) for w in WORKSPACES}
        cluster.spawn(*SCRIPTED)

        def outcomes() -> dict[str, str] | None:
            found = {w: str(coordinator.workspaces.show(w)["status"]) for w in WORKSPACES}
            return None if "investigating" in found.values() else found

        settled = poll("every investigation settled", outcomes, timeout=50, every=0.5)
        assert settled == dict.fromkeys(WORKSPACES, "human_review_required")
    finally:
        ledger.close()
