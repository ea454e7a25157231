"""An imported incident is a record (docs/adr/0158): with a dispatcher, a worker running the scripted cast and
the controller, and a model-backed planner running on PostgreSQL, importing incident-042's export adds no
commit (the workers are told of every imported commit and act on none, and a tenant's contribution is refused
``workspace_closed``); an operator's ``reopen`` with an owner and a budget makes it live again, and the
controller takes it up."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from caseboard.cli.main import main
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.e2e.procs import Cluster, poll
from tests.fake_model_server import FakeModel

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

EXPORT = Path(__file__).parents[2] / "corpus" / "incident-042.jsonl"
WS = "incident-042"


def drained(cluster: Cluster) -> bool:
    status = cluster.status()
    return bool(status["pending"] == 0 and status["delivered"] > 0 and status["unprocessed"] == 0)


def test_an_imported_incident_stays_as_recorded_until_an_operator_reopens_it(
    cluster: Cluster, capsys: pytest.CaptureFixture[str]
) -> None:
    url = cluster.database_url
    recorded = len(EXPORT.read_text().splitlines())
    with FakeModel() as fake:
        model = {"CASEBOARD_MODEL_URL": fake.url, "CASEBOARD_MODEL": "fake-model-1", "CASEBOARD_MODEL_TIMEOUT_S": "1"}
        worker = cluster.spawn(
            "worker", "--all-tenants", "--participant", "scripted", "--tick", "0.3", "--turn-timeout", "5"
        )
        agent = cluster.spawn("agent", "--role", "planner", "--principal", "planner-1", "--all-tenants", **model)
        cluster.spawn("dispatch", "--poll", "0.1")
        assert main(["--database-url", url, "import", str(EXPORT)]) == 0
        assert json.loads(capsys.readouterr().out)["record"] is True
        poll("the imported commits' notifications processed", lambda: drained(cluster) or None, timeout=90)
        time.sleep(4)  # ticks of the controller and turns the cast might take
        assert cluster.saw(worker, "notification_for_record")
        ledger = open_ledger(url)
        try:
            assert ledger.head(WS) == recorded
            coordinator = Coordinator(ledger)
            claim = {
                "workspace_id": WS,
                "author": {"principal": "log-query-specialist", "role": "specialist"},
                "items": [{"type": "question", "id": "q-late", "text": "Anything else?"}],
            }
            refused = coordinator.submit(parse_contribution(claim))
            assert not refused["ok"] and refused["reason"] == "workspace_closed"
            assert "imported record" in refused["message"]
            assert ledger.head(WS) == recorded
            for proc in (worker, agent):
                assert proc.poll() is None, cluster.logs[proc.pid].read_text()[-2000:]
            reopen = {
                "workspace_id": WS,
                "author": {"principal": "oncall-operator", "role": "operator"},
                "items": [
                    {"type": "reopen", "owner": "oncall-operator", "runtime_limits": {"max_investigation_cycles": 3}}
                ],
            }
            reopened = coordinator.submit(parse_contribution(reopen))
            assert reopened["ok"], reopened
            assert reopened["workspace_version"] == recorded + 1
            poll("the controller's cycle after the reopen", lambda: ledger.head(WS) > recorded + 1 or None)
        finally:
            ledger.close()
