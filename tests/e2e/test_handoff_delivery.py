"""Handoffs end to end: a workspace escalated to a person is delivered to the tenant's webhook, signed, at least
once and exactly once in effect, through a receiver that fails twice and a dispatcher killed after it handed the
notification over (real dispatcher and worker processes, PostgreSQL and Redis)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.handoff.signing import verify
from caseboard.ledger import open_ledger
from caseboard.pilot.servers import Serving
from tests.conftest import ROOT, caseboard
from tests.e2e.procs import Cluster, poll

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

SECRET = "s3cret-for-tenant-h"
KEY = "tenant-h/ws-handoff"


class Receiver:
    """A webhook receiver on loopback that answers 500 to its first ``failures`` requests, then 200, and takes
    each delivery id once."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.taken: dict[str, bytes] = {}
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                if len(receiver.requests) <= receiver.failures:
                    self.send_response(500)
                else:
                    receiver.taken.setdefault(self.headers["Caseboard-Delivery"], body)
                    self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook?token=never-logged"
        self.serving = Serving(self.server)

    def close(self) -> None:
        self.serving.stop()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    running = Receiver(failures=2)
    yield running
    running.close()


def escalate(url: str) -> None:
    """A workspace of tenant-h with an open question and a failed check, then escalated by its operator."""
    ledger = open_ledger(url)
    coordinator = Coordinator(ledger, trust_timestamps=True)

    def submit(principal: str, role: str, at: str, *items: dict[str, Any]) -> None:
        line = json.dumps(
            {"workspace_id": "ws-handoff", "author": {"principal": principal, "role": role}, "at": at, "items": items}
        )
        outcome = coordinator.submit(parse_contribution(line), KEY)
        assert outcome["ok"], outcome

    limits = {
        "max_selected_items": 20,
        "max_investigation_cycles": 3,
        "max_open_questions": 5,
        "max_proposals": 5,
        "max_pending_work": 5,
    }
    scope = {"tenant_id": "tenant-h", "environment": "production", "service": "payments-api"}
    try:
        submit("op", "operator", "2026-03-02T14:00:00Z", {"type": "open", "scope": scope, "goal": "Why do logins fail",
               "runtime_limits": limits, "execution_mode": "read_only"})  # fmt: skip
        submit(
            "planner-1",
            "planner",
            "2026-03-02T14:01:00Z",
            {"type": "question", "id": "q-chains", "text": "Do affected instances present different chains?"},
            {"type": "work_request", "request_id": "tls-1", "kind": "certificate_check", "target": "payments-api"},
        )
        submit("tls-specialist", "specialist", "2026-03-02T14:02:00Z",
               {"type": "work_claim", "request_id": "tls-1", "lease_s": 300})  # fmt: skip
        query = {"time_range": ["2026-03-02T13:00:00Z", "2026-03-02T14:02:00Z"], "filters": {},
                 "targets": ["payments-api-1", "payments-api-2"], "completed": False}  # fmt: skip
        submit("tls-specialist", "specialist", "2026-03-02T14:03:00Z",
               {"type": "work_result", "request_id": "tls-1", "generation": 1, "status": "failed",
                "summary": "timed out after 300 s; 1 of 2 instances read", "query": query})  # fmt: skip
        submit("op", "operator", "2026-03-02T14:04:00Z",
               {"type": "status", "to": "human_review_required", "reason": "the chains could not be read",
                "handoff": "Read the certificate chain of payments-api-2 by hand"})  # fmt: skip
    finally:
        ledger.close()


def test_an_escalation_reaches_the_webhook_signed_once_in_effect_through_failures_and_a_killed_dispatcher(
    cluster: Cluster, receiver: Receiver, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tenants = tmp_path / "tenants.toml"
    tenants.write_text(
        f'[tenants.tenant-h]\npublic_url = "http://127.0.0.1:8000"\n'
        f'[[tenants.tenant-h.webhooks]]\nurl = "{receiver.url}"\nsecret_env = "HOOK_SECRET"\n'
    )
    env = {"CASEBOARD_TENANTS": str(tenants), "HOOK_SECRET": SECRET}
    escalate(cluster.database_url)
    crashed = cluster.spawn("dispatch", CASEBOARD_DISPATCH_TEST_HOOK="pause-after-send", **env)
    poll("the dispatcher to hand the batch over", lambda: cluster.saw(crashed, "dispatch_test_hook"))
    cluster.kill(crashed)  # handed to the broker, its position never stored: the next one sends it again
    cluster.spawn("worker", "--tenant", "tenant-h", **env)
    cluster.spawn("dispatch", **env)
    poll("the handoff taken by the receiver", lambda: receiver.taken, timeout=90)
    poll("every copy of the notification processed", lambda: cluster.status()["unprocessed"] == 0, timeout=60)

    assert list(receiver.taken) == [f"{KEY}@5/handoff"]  # one handoff, whatever was sent twice
    assert len(receiver.requests) >= 3  # two refused, then taken
    for headers, body in receiver.requests:
        assert headers["Caseboard-Delivery"] == f"{KEY}@5/handoff"
        assert verify(SECRET.encode(), body, headers["Caseboard-Signature"])
        assert not verify(b"another secret", body, headers["Caseboard-Signature"])
    document = json.loads(receiver.taken[f"{KEY}@5/handoff"])
    jsonschema.validate(document, json.loads((ROOT / "schemas" / "handoff.v1.schema.json").read_text()))
    assert document["schema"] == "caseboard.handoff.v1" and document["trigger"] == "human_review_required"
    assert document["handoff"] == "Read the certificate chain of payments-api-2 by hand"
    assert [q["id"] for q in document["open_questions"]] == ["q-chains"]
    [check] = document["incomplete_checks"]
    assert check["request_id"] == "tls-1" and check["status"] == "failed"
    assert check["summary"] == "timed out after 300 s; 1 of 2 instances read"
    assert check["coverage"]["completed"] is False and check["coverage"]["targets"] == [
        "payments-api-1",
        "payments-api-2",
    ]
    assert document["links"]["ui"] == "http://127.0.0.1:8000/ui/workspaces/ws-handoff?version=5"

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    listing = caseboard("handoffs", KEY, "--format", "json", url=cluster.database_url)
    assert listing.returncode == 0, listing.stderr
    [entry] = [json.loads(line) for line in listing.stdout.splitlines()]
    assert entry["state"] == "delivered" and entry["trigger"] == "human_review_required"
    outcomes = [a["outcome"] for a in entry["attempts"]]  # two copies may have been delivered side by side
    assert outcomes.count("failed") == 2 and outcomes.count("delivered") == len(receiver.requests) - 2
    assert sorted(a["attempt"] for a in entry["attempts"]) == list(range(1, len(outcomes) + 1))
    assert {a["detail"] for a in entry["attempts"] if a["outcome"] == "failed"} == {"HTTP 500"}
    assert all("never-logged" not in a["webhook"] for a in entry["attempts"])  # no query string kept
    status = json.loads(caseboard("outbox", "status", url=cluster.database_url).stdout)
    assert status["handoffs"] == {"delivered": 1, "undelivered": 0}
