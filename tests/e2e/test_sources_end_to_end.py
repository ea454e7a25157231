"""Incident-042's story with its evidence from real sources, on PostgreSQL and Redis: a planner (the model twin
of the tests) requests checks; ``caseboard specialist`` processes for Prometheus, logs and TLS answer them from
a real Prometheus, a log directory and servers presenting two chains; the verifier settles the certificate
hypothesis from the TLS check; ``caseboard verify`` proves every cited excerpt of the export; replay equals
``show`` at every version with every socket refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import structlog

from caseboard.cli.live_demo import open_item
from caseboard.cli.main import main
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.pilot.servers import have_prometheus, make_chain, prometheus, tls_server
from tests.conftest import service_missing
from tests.e2e.procs import Cluster, poll
from tests.fake_model_server import ENTRY, FakeModel, Reply, items, role_of
from tests.integration.test_agent_live_loop import replayed_offline, shows
from tests.sources.servers import metrics_target

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

WS = "incident-042"
HYPOTHESIS = "hyp-certificate-initiated-failure"


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


def twin(tls_targets: list[str]) -> Any:
    """The model twin: the planner asks Prometheus for the failures, then proposes the certificate hypothesis
    on what came back and asks for the chains; the verifier settles it from the TLS check's observations."""

    def policy(messages: list[dict[str, Any]]) -> Reply:
        role, text = role_of(messages), messages[-1]["content"]
        shown = [{"kind": k, "ref": r} for _, k, r, _ in ENTRY.findall(text)]
        observations = [e["ref"] for e in shown if e["kind"] == "observation"]
        work = [e["ref"] for e in shown if e["kind"] == "work"]
        if role == "planner":
            if "metrics_query (prometheus: range_query" not in text or "certificate_check (certs: chain)" not in text:
                return Reply(items())  # it asks only for checks its view says the tenant's sources can run
            if not work:
                target = {"query": "auth_failures_total", "since_s": 300, "step_s": 1}
                asked = {"type": "work_request", "request_id": "metrics-001", "kind": "metrics_query"}
                logs = {
                    "type": "work_request",
                    "request_id": "log-query-003",
                    "kind": "log_query",
                    "target": json.dumps({"glob": "*.log", "match": "auth_failure"}),
                }
                return Reply(items({**asked, "target": json.dumps(target)}, logs))
            if observations and HYPOTHESIS not in text:
                return Reply(
                    items(
                        {
                            "type": "hypothesis",
                            "id": HYPOTHESIS,
                            "statement": "The certificate change initiated the failures",
                            "supporting_evidence": observations[:1],
                        },
                        {
                            "type": "work_request",
                            "request_id": "certificate-check-002",
                            "kind": "certificate_check",
                            "target": " ".join(tls_targets),
                        },
                    )
                )
        if role == "verifier" and "certificate-check-002.g1.o0" in observations:
            verdict = "confirmed" if re.search(r"present 2 different chains", text) else "refuted"
            return Reply(
                items(
                    {"type": "verification", "claim": HYPOTHESIS, "check": "certificate-check-002", "result": verdict}
                )
            )
        return Reply(items())

    return policy


def test_specialists_answer_from_real_sources_and_the_verifier_settles_the_certificate_hypothesis(
    cluster: Cluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not have_prometheus():
        service_missing("prometheus", FileNotFoundError("Debian's prometheus is not installed"))
    url = cluster.database_url
    change = tmp_path / "change"
    change.touch()
    old, new = make_chain("Old Root CA"), make_chain("New Root CA")
    with ExitStack() as stack:
        target = stack.enter_context(metrics_target(change))
        prom = stack.enter_context(prometheus([target]))
        tls = [stack.enter_context(tls_server(*chain))[0] for chain in (old, old, new)]
        logs = tmp_path / "logs"
        logs.mkdir()
        at = datetime.now(UTC) - timedelta(minutes=20)  # failures before the change, in the last hour
        (logs / "payments-api-2.log").write_text(
            f"{at.isoformat()} payments-api-2 auth_failure handshake: unknown certificate authority\n"
            f"{(at + timedelta(minutes=1)).isoformat()} payments-api-2 auth ok\n"
        )
        sources = tmp_path / "sources.toml"
        sources.write_text(
            f"""
[tenants.tenant-a.sources.prometheus]
type = "prometheus"
endpoint = "{prom}"
clock_trusted = true
[tenants.tenant-a.sources.certs]
type = "tls"
options = {{ allowed = {json.dumps(tls)} }}
[tenants.tenant-a.sources.auth-logs]
type = "logs"
options = {{ dirs = ["{logs}"] }}
"""
        )
        fake = stack.enter_context(FakeModel(twin(tls)))
        model = {"CASEBOARD_MODEL_URL": fake.url, "CASEBOARD_MODEL": "fake-model-1", "CASEBOARD_SOURCES": str(sources)}
        procs = [
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
            cluster.spawn("agent", "--role", "verifier", "--principal", "verifier-1", "--tenant", "tenant-a", **model),
            cluster.spawn("specialist", "--source", "prometheus", "--tenant", "tenant-a", "--tick", "0.5", **model),
            cluster.spawn("specialist", "--source", "certs", "--tick", "0.5", **model),
            cluster.spawn("specialist", "--source", "auth-logs", "--tick", "0.5", **model),
        ]
        cluster.spawn("dispatch", "--poll", "0.1")
        poll("Prometheus's first samples", lambda: _has_samples(prom), timeout=60, every=0.5)
        ledger = open_ledger(url)
        try:
            body = {
                "workspace_id": WS,
                "author": {"principal": "oncall-operator", "role": "operator"},
                "items": [open_item(8)],
            }
            assert Coordinator(ledger).submit(parse_contribution(body))["ok"]
        finally:
            ledger.close()
        poll("the verification", lambda: _verified(url), timeout=180, every=0.5)
        for proc in procs:
            assert proc.poll() is None, cluster.logs[proc.pid].read_text()[-2000:]
    ledger = open_ledger(url)
    try:
        commits = ledger.read(WS)
    finally:
        ledger.close()
    by_author = {c.author.principal for c in commits}
    assert {"metrics-query-specialist", "certificate-check-specialist", "log-query-specialist"} <= by_author
    results = {i.request_id: i for c in commits for i in c.items if i.type == "work_result"}
    metrics, chains = results["metrics-001"], results["certificate-check-002"]
    failures = results["log-query-003"]
    assert failures.status == "completed" and failures.query.operation == "lines"
    assert failures.observation.event_time == at  # the time in the log line
    assert "auth_failure handshake" in failures.observation.statement
    assert metrics.status == "completed" and metrics.query.operation == "range_query"
    assert set(metrics.query.answered) == {"payments-api-1", "payments-api-2", "payments-api-3"}
    assert chains.query.completed is True and chains.query.answered == tuple(tls)
    assert chains.observation.statement.startswith("3 targets present 2 different chains")
    verification = next(i for c in commits for i in c.items if i.type == "verification")
    assert (verification.claim, verification.check, verification.result) == (
        HYPOTHESIS,
        "certificate-check-002",
        "confirmed",
    )
    export = tmp_path / "run.jsonl"
    assert main(["--database-url", url, "export", WS, "--out", str(export), "--with-excerpts"]) == 0
    cited = [json.loads(line) for line in Path(f"{export}.excerpts.jsonl").read_text().splitlines()]
    assert len(cited) >= 6  # three series, the log file's lines, the chains' comparison and three targets' chains
    verify = [sys.executable, "-m", "caseboard", "verify", str(export), "--format", "json"]
    verified = subprocess.run(verify, env=cluster.env(), capture_output=True, text=True)
    assert verified.returncode == 0 and json.loads(verified.stdout)["intact"] is True, verified.stdout
    sidecar = Path(f"{export}.excerpts.jsonl")
    kept = sidecar.read_text()
    cited[0]["text"] = cited[0]["text"].replace("payments-api", "payments-apx", 1)
    sidecar.write_text("".join(json.dumps(r) + "\n" for r in cited))
    report = json.loads(subprocess.run(verify, env=cluster.env(), capture_output=True, text=True).stdout)
    assert (report["intact"], report["kind"]) == (False, "excerpt_mismatch")  # the check can fail
    sidecar.write_text(kept)
    capsys.readouterr()
    expected = shows(url, WS, len(commits), capsys)
    assert replayed_offline(export, len(commits), tmp_path) == expected


def _has_samples(prom: str) -> bool:
    import httpx

    found = httpx.get(prom + "/api/v1/query", params={"query": "count_over_time(auth_failures_total[1m]) > 2"})
    return len(found.json()["data"]["result"]) == 3


def _verified(url: str) -> bool:
    ledger = open_ledger(url)
    try:
        return any(i.type == "verification" for c in ledger.read(WS) for i in c.items)
    finally:
        ledger.close()
