"""End to end on PostgreSQL and Redis: the ``caseboard agent`` processes of docs/participants.md (planner with the
controller, specialists of every kind, verifier, reporter) backed by the test suite's model server carry
incident-042's work to an outcome within its budget; every contribution of theirs carries its judgment, an
auditor lists them, and the export replays with every socket refused to what ``show`` gives at every version.
Every notification routed is processed, none re-driven: the topology drains."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from caseboard.cli.live_demo import open_item
from caseboard.cli.main import main
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.e2e.procs import Cluster, poll
from tests.fake_model_server import FakeModel, Reply, items
from tests.integration.test_agent_live_loop import MODEL_ROLES, replayed_offline, shows

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WS = "incident-042"
CYCLES = 8
"""The scripted run needs 5 cycles; the verifier's two bad replies may each cost it one."""


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def drained(cluster: Cluster) -> bool:
    status = cluster.status()
    return bool(status["pending"] == 0 and status["unprocessed"] == 0 and status["delivered"] > 0)


def status_of(url: str) -> str | None:
    ledger = open_ledger(url)
    try:
        state = Coordinator(ledger).workspaces.show(WS)
    finally:
        ledger.close()
    return None if state["status"] == "investigating" else str(state["status"])


@pytest.mark.parametrize(
    "beside",
    [None, ("--passive", "--tenant", "tenant-a"), ("--tenant", "tenant-a"), ("--passive", "--all-tenants")],
    ids=["agents", "beside-a-passive-worker", "beside-a-plain-worker", "beside-an-operator-wide-passive-worker"],
)
def test_the_documented_agent_processes_run_incident_042_to_an_outcome_and_drain(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str], beside: tuple[str, ...] | None
) -> None:
    """``beside``: the options of a ``caseboard worker`` started after the agents (None: none), which takes from
    the same shared queues and passes on to them what it does not run (the participants' notifications; when
    passive, the controller's snapshot notices too: docs/adr/0186, 0188), operator-wide too (docs/adr/0190)."""
    url = cluster.database_url
    with FakeModel() as fake:
        fake.script = [  # bad replies that lose no work: each must be recorded, and the agents go on
            Reply(status=429, headers={"retry-after": "0.05"}, role="planner"),
            Reply(status=429, headers={"retry-after": "0.05"}, role="specialist"),
            Reply(items(), delay_s=2.5, role="specialist"),  # past the 1 s timeout: retried
            Reply(items({"type": "constraints", "goal": "Fix it", "execution_mode": "read_write"}), role="verifier"),
            Reply("Sure! Here is my answer: confirmed.", role="verifier"),
        ]
        model = {"CASEBOARD_MODEL_URL": fake.url, "CASEBOARD_MODEL": "fake-model-1", "CASEBOARD_MODEL_TIMEOUT_S": "1"}
        agents = [
            cluster.spawn(
                "agent",
                "--role",
                "planner",
                "--principal",
                "planner-1",
                "--with-controller",
                "--turn-timeout",
                "20",
                "--tick",
                "0.5",
                "--tenant",
                "tenant-a",
                **model,
            ),
            cluster.spawn(
                "agent",
                "--role",
                "specialist",
                "--principal",
                "specialist",
                "--threads",
                "2",
                "--tenant",
                "tenant-a",
                **model,
            ),
            cluster.spawn("agent", "--role", "verifier", "--principal", "verifier-1", "--tenant", "tenant-a", **model),
            cluster.spawn("agent", "--role", "reporter", "--principal", "reporter-1", "--tenant", "tenant-a", **model),
        ]
        if beside is not None:
            for agent in agents:
                poll("the agents announced", lambda agent=agent: cluster.saw(agent, "consumers_announced"), timeout=60)
            cluster.spawn("worker", *beside)
        dispatcher = cluster.spawn("dispatch", "--poll", "0.1", "--redrive-after", "20")
        ledger = open_ledger(url)
        try:
            body = {
                "workspace_id": WS,
                "author": {"principal": "oncall-operator", "role": "operator"},
                "items": [open_item(CYCLES)],
            }
            assert Coordinator(ledger).submit(parse_contribution(body))["ok"]
        finally:
            ledger.close()
        outcome = poll("an outcome", lambda: status_of(url), timeout=180, every=0.5)
        for proc in agents:
            assert proc.poll() is None, cluster.logs[proc.pid].read_text()[-2000:]
        # docs/participants.md's topology drains: every routed queue has a consumer (docs/adr/0160)
        poll("every notification processed", lambda: drained(cluster) or None, timeout=60, every=0.5)
        assert not cluster.saw(dispatcher, "notifications_redriven")
    assert outcome == "human_review_required"
    ledger = open_ledger(url)
    try:
        commits = ledger.read(WS)
    finally:
        ledger.close()
    theirs = [c for c in commits if c.author.role.value in MODEL_ROLES]
    assert {c.author.principal for c in theirs} >= {
        "planner-1",
        "verifier-1",
        "log-query-specialist",
        "change-calendar-specialist",
        "certificate-check-specialist",
    }
    for commit in theirs:
        assert commit.items[-1].type == "judgment", commit.summary()
    final = json.loads(shows(url, WS, len(commits), capsys)[str(len(commits))])
    assert [h["status"] for h in final["hypotheses"]] == ["confirmed"]
    assert final["cycles_used"] <= CYCLES
    listed = subprocess.run(
        [sys.executable, "-m", "caseboard", "judgments", WS, "--format", "json"],
        env=cluster.env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    entries = [json.loads(line) for line in listed.stdout.splitlines()]
    assert len(entries) == sum(1 for c in commits for i in c.items if i.type == "judgment")
    assert sum(e["attempts"] for e in entries) == len(fake.requests)  # every request is an attempt of a recorded call
    for entry in entries:
        assert entry["model"] == "fake-model-1" and entry["usage"]["total_tokens"] > 0
        assert entry["latency_ms"] >= 0 and 1 <= entry["input_workspace_version"] < entry["workspace_version"]
    refused = {(e["author"]["principal"], e["refusal"]["reason"]) for e in entries if e["refusal"]}
    assert {("verifier-1", "invalid"), ("verifier-1", "malformed_reply")} <= refused
    assert sum(e["attempts"] for e in entries) == len(entries) + 3  # two 429s and a timeout, each retried
    assert final["execution_mode"] == "read_only" and final["goal"] == open_item(CYCLES)["goal"]
    assert main(["--database-url", url, "export", WS, "--out", str(tmp_path / "run.jsonl")]) == 0
    capsys.readouterr()
    expected = shows(url, WS, len(commits), capsys)
    assert replayed_offline(tmp_path / "run.jsonl", len(commits), tmp_path) == expected
