"""A worker killed while a workspace waits on its controller's clock alone: the worker started after it takes the
workspace up (docs/adr/0189).

The scripted planner asks for logs and changes, work no process of this topology takes (the worker runs only the
certificate-check specialist). Nothing commits until the controller takes the requests back at the turn
timeout, then escalates the workspace once no one has contributed for the stall bound. The worker is killed
(SIGKILL) once the controller has scheduled the specialists, and another started: before the controllers'
watch, the new one knew of the workspace only from a notification, none came, and it stayed ``investigating``
for good.

A controller's process started after a passive worker that was alone when a workspace opened: the passive worker
found no controller announced and absorbed the opening's notice, and nothing told the controller of it before
ADR 0191."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from caseboard.cli.live_demo import open_item
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import Ledger, open_ledger
from tests.e2e.procs import Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WS = "incident-77"
WORKER = ("worker", "--tenant", "tenant-a", "--participant", "scripted", "--kinds", "certificate-check")
CLOCK = ("--turn-timeout", "4", "--tick", "0.5")
STALL = {"CASEBOARD_STALL_AFTER_S": "10"}
"""Room for a new worker that is slow to start (a busy machine) to reach the turn timeout before the stall bound."""


@contextmanager
def opened(cluster: Cluster, *first: str, **env: str) -> Iterator[tuple[subprocess.Popen[bytes], Ledger, Coordinator]]:
    """The worker ``first`` started and announced, the dispatcher, then ``WS`` opened by an operator."""
    process = cluster.spawn(*first, **env)
    poll("the first worker announced", lambda: cluster.saw(process, "consumers_announced"), timeout=60)
    cluster.spawn("dispatch", "--poll", "0.1")
    ledger = open_ledger(cluster.database_url)
    try:
        coordinator = Coordinator(ledger)
        body = {"workspace_id": WS, "author": {"principal": "oncall-operator", "role": "operator"}}
        assert coordinator.submit(parse_contribution({**body, "items": [open_item(8)]}))["ok"]
        yield process, ledger, coordinator
    finally:
        ledger.close()


def settled(coordinator: Coordinator) -> str | None:
    """The workspace's status once it is no longer ``investigating``."""
    status = str(coordinator.workspaces.show(WS)["status"])
    return None if status == "investigating" else status


def test_a_worker_started_after_one_killed_takes_up_the_workspaces_it_was_waiting_on(cluster: Cluster) -> None:
    with opened(cluster, *WORKER, *CLOCK, **STALL) as (first, ledger, coordinator):

        def head() -> int:
            return int(coordinator.workspaces.show(WS)["workspace_version"])

        # killed once the controller has scheduled the specialists for the planner's requests: from there the
        # workspace moves only on the controller's clock
        poll("the planner's requests and the specialists' cycle", lambda: head() >= 4, timeout=30)
        cluster.kill(first)
        assert [item.type for item in ledger.read(WS, after=3)[0].items] == ["cycle"]
        waiting = coordinator.workspaces.show(WS)
        assert waiting["status"] == "investigating", waiting["status"]
        cluster.spawn(*WORKER, *CLOCK, **STALL)
        outcome = poll("the workspace settled", lambda: settled(coordinator), timeout=40, every=0.5)
        assert outcome == "human_review_required"
        kinds = [item.type for commit in ledger.read(WS, after=waiting["workspace_version"]) for item in commit.items]
        # the new controller took back both requests at the turn timeout (again at each timeout after), then escalated
        # the stalled workspace
        assert kinds[:2] == ["work_reclaim", "work_reclaim"] and kinds[-1] == "status", kinds


def test_a_controller_started_after_a_passive_worker_took_an_opening_alone_takes_the_workspace_up(
    cluster: Cluster,
) -> None:
    with opened(cluster, "worker", "--passive", "--tenant", "tenant-a") as (_, ledger, coordinator):

        def taken() -> bool:
            status = cluster.status()
            return bool(status["delivered"] > 0 and status["pending"] == 0 and status["unprocessed"] == 0)

        poll("the opening's notices taken by the passive worker", taken, timeout=30)
        assert coordinator.workspaces.show(WS)["workspace_version"] == 1
        cluster.spawn("worker", "--tenant", "tenant-a", "--participant", "scripted", "--tick", "0.5")
        outcome = poll("the workspace settled", lambda: settled(coordinator), timeout=60, every=0.5)
        assert outcome == "human_review_required"
        assert ledger.read(WS, after=1, upto=2)[0].author.role == "controller"  # cycle 1, at its first tick
