"""Issue 33, the coordinator's rules of evidence, through the command line and over HTTP: a verification is
independent (rule 3), a judgment's record agrees with the ledger (rule 7), exhausted means stopped (rule 10).

Each script is one workspace's contributions in order, each with the outcome it must get: the issue's
examples, then variants of other fields, roles and orders, and a control that an honest contribution still
lands. The same script runs through ``caseboard submit`` (one subprocess, one line per contribution) and over
HTTP (one API key per principal and role), so both doors refuse the same contribution with the same reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import caseboard
from tests.http_server import LIMITS, RunningServer, open_body, running_server

Expect = tuple[str, str, str] | None
"""None: accepted; else (reason, field, a phrase of the message)."""


@dataclass(frozen=True)
class Step:
    principal: str
    role: str
    items: list[dict[str, Any]]
    expect: Expect = None


def obs(obs_id: str, statement: str = "TLS handshake failures on payments-api-3", **fields: Any) -> dict[str, Any]:
    return {
        "type": "observation",
        "id": obs_id,
        "statement": statement,
        "source": {"system": "auth-logs", "instance": "payments-api-3"},
        "event_time": "2026-03-02T14:03:00Z",
        "event_time_quality": "verified",
        **fields,
    }


def request(request_id: str, kind: str = "certificate_check") -> dict[str, Any]:
    return {"type": "work_request", "request_id": request_id, "kind": kind, "target": "payments-api-1..3"}


def claim(request_id: str) -> dict[str, Any]:
    return {"type": "work_claim", "request_id": request_id, "lease_s": 600}


QUERY = {
    "time_range": ["2026-03-02T13:00:00Z", "2026-03-02T15:00:00Z"],
    "filters": {"check": "certificate_chain"},
    "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
    "completed": True,
}


def result(request_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "type": "work_result",
        "request_id": request_id,
        "generation": 1,
        "status": "completed",
        "summary": "no chain mismatch found",
        "query": QUERY,
        **fields,
    }


def ran(principal: str, role: str, request_id: str, **fields: Any) -> Step:
    """``principal`` claims the check and completes it, in one contribution."""
    return Step(principal, role, [claim(request_id), result(request_id, **fields)])


def verify(claim_id: str, check: str, outcome: str = "confirmed") -> dict[str, Any]:
    return {"type": "verification", "claim": claim_id, "check": check, "result": outcome}


def status(to: str) -> dict[str, Any]:
    return {"type": "status", "to": to, "reason": "the controller's budget is spent", "handoff": "see open checks"}


def judgment(invocation_id: str, shown: int, revisions: dict[str, int]) -> dict[str, Any]:
    return {
        "type": "judgment",
        "invocation_id": invocation_id,
        "component": "planner.propose",
        "model": "test-model",
        "prompt_sha256": "0" * 64,
        "input_workspace_version": shown,
        "evidence_revisions": revisions,
    }


FORBIDDEN_CHECK = "forbidden", "items[0].check"
INDEPENDENT = [
    Step("specialist-1", "specialist", [obs("o1")]),
    Step("specialist-2", "specialist", [obs("o2", "auth failures on payments-api-2")]),
    Step(
        "planner-1",
        "planner",
        [
            {"type": "hypothesis", "id": "h1", "statement": "the certificate change", "supporting_evidence": ["o1"]},
            *(request(r) for r in ("chk-a", "chk-b", "chk-c", "chk-d", "chk-e")),
            request("q-1", "log_query"),
        ],
    ),
    # the example: the planner claimed and completed the check as a specialist
    ran("planner-1", "specialist", "chk-a"),
    Step("verifier-1", "verifier", [verify("h1", "chk-a")], (*FORBIDDEN_CHECK, "run by 'planner-1'")),
    # the issue's example: Planner-1 verifies planner-1's claim
    ran("verifier-2", "verifier", "chk-b"),
    Step("Planner-1", "verifier", [verify("h1", "chk-b")], ("forbidden", "items[0].claim", "authored 'h1'")),
    # the example: the very query whose result is the claim's own support
    ran("specialist-3", "specialist", "q-1", observation={k: v for k, v in obs("o3").items() if k != "type"}),
    Step("planner-1", "planner", [{"type": "link", "observation": "o3", "hypothesis": "h1", "relation": "supports"}]),
    Step("verifier-1", "verifier", [verify("h1", "q-1")], (*FORBIDDEN_CHECK, "produced 'o3'")),
    # variants: the check run by an author of the supporting evidence (a refutation, this time)
    ran("specialist-1", "specialist", "chk-c"),
    Step("verifier-1", "verifier", [verify("h1", "chk-c", "refuted")], (*FORBIDDEN_CHECK, "recorded 'o1'")),
    # ... by the claim's author under another case, as a verifier, for an inconclusive verification
    ran("PLANNER-1", "verifier", "chk-d"),
    Step("verifier-1", "verifier", [verify("h1", "chk-d", "inconclusive")], (*FORBIDDEN_CHECK, "'PLANNER-1'")),
    # ... by the author of what a summary supporting another claim summarizes
    Step("reporter-1", "reporter", [obs("s1", "failures across the fleet", derived_from=["o2"])]),
    Step(
        "planner-2",
        "planner",
        [{"type": "hypothesis", "id": "h2", "statement": "a bad rollout", "supporting_evidence": ["s1"]}],
    ),
    ran("Specialist-2", "specialist", "chk-e"),
    Step("verifier-1", "verifier", [verify("h2", "chk-e")], (*FORBIDDEN_CHECK, "recorded 'o2'")),
    # the control: a check nobody behind the claim ran settles it
    Step("verifier-1", "verifier", [verify("h1", "chk-b")]),
    Step("verifier-1", "verifier", [verify("h2", "chk-b", "refuted")]),
]

STOPPED = "limit_exceeded", "items[0]", "budget is exhausted"
EXHAUSTED = [
    Step("planner-1", "planner", [request("w1", "log_query"), request("w2")]),
    Step("controller-1", "controller", [status("budget_exhausted")]),
    # the examples: a waiting request claimed, a status change resuming the work, a new request
    Step("specialist-1", "specialist", [claim("w1")], STOPPED),
    Step("operator-1", "operator", [status("investigating")], ("invalid", "items[0].to", "only by a reopen")),
    Step("planner-1", "planner", [request("w3")], STOPPED),
    # variants: escalated in between, then set to investigating; other roles request and claim
    Step("controller-1", "controller", [status("human_review_required")]),
    Step("operator-1", "operator", [status("investigating")], ("invalid", "items[0].to", "only by a reopen")),
    Step("controller-1", "controller", [request("w4")], STOPPED),
    Step("verifier-1", "verifier", [claim("w2")], STOPPED),
    Step("controller-1", "controller", [{"type": "cycle", "number": 1}], ("limit_exceeded", "items[0]", "cycles")),
    # a reopen renews the budget with at least one cycle; then work resumes
    Step(
        "operator-1",
        "operator",
        [{"type": "reopen", "owner": "operator-2", "runtime_limits": {"max_investigation_cycles": 0}}],
        ("invalid", "items[0].runtime_limits.max_investigation_cycles", "at least 1"),
    ),
    Step("operator-1", "operator", [{"type": "reopen", "owner": "operator-2", "runtime_limits": {}}]),
    Step("specialist-1", "specialist", [claim("w1")]),
    Step("planner-1", "planner", [request("w3")]),
]


def revision(ref: str, phrase: str) -> Expect:
    return "invalid", f"items[0].evidence_revisions.{ref}", phrase


AGREES = [
    Step("specialist-1", "specialist", [obs("o1")]),  # version 2
    Step("planner-1", "planner", [{"type": "question", "id": "q1", "text": "which hosts?"}]),  # 3
    Step("planner-1", "planner", [request("w1")]),  # 4
    Step("specialist-1", "specialist", [obs("o2")]),  # 5
    Step("specialist-1", "specialist", [obs("o3")]),  # 6
    # the examples: shown version 4, quoting a revision of version 6, or of version 99
    Step("planner-1", "planner", [judgment("j1", 4, {"o1": 6})], revision("o1", "not at 6")),
    Step("planner-1", "planner", [judgment("j2", 4, {"o1": 99})], revision("o1", "not at 99")),
    # variants: an item recorded after the version shown; a question read before it was recorded; the version
    # shown ahead of the workspace
    Step("reporter-1", "reporter", [judgment("j3", 4, {"o2": 4})], revision("o2", "after version 4")),
    Step("specialist-1", "specialist", [judgment("j4", 5, {"q1": 2})], revision("q1", "recorded at version 3")),
    Step("planner-1", "planner", [judgment("j5", 9, {})], ("invalid", "items[0].input_workspace_version", "beyond")),
    # the control: every revision between its item's recording and the version shown
    Step("controller-1", "controller", [judgment("j6", 6, {"o1": 2, "q1": 3, "w1": 5, "o3": 6})]),
]

SCRIPTS = {"independent": INDEPENDENT, "exhausted": EXHAUSTED, "agrees": AGREES}


def outcome_matches(outcome: dict[str, Any], expect: Expect, where: str) -> None:
    if expect is None:
        assert outcome["ok"] is True, f"{where}: {outcome}"
        return
    reason, field, phrase = expect
    assert outcome["ok"] is False, f"{where}: accepted, expected {reason}"
    assert (outcome["reason"], outcome["field"]) == (reason, field), f"{where}: {outcome}"
    assert phrase in outcome["message"], f"{where}: {outcome['message']!r} does not say {phrase!r}"


@pytest.mark.parametrize("name", SCRIPTS)
def test_the_command_line_refuses_what_the_rules_of_evidence_refuse(name: str, tmp_path: Path) -> None:
    def line(principal: str, role: str, items: list[dict[str, Any]]) -> str:
        return json.dumps({"workspace_id": name, "author": {"principal": principal, "role": role}, "items": items})

    opening = {"type": "open", "execution_mode": "read_only", **open_body(name)}
    del opening["workspace_id"]
    lines = [line("operator-1", "operator", [opening])] + [line(s.principal, s.role, s.items) for s in SCRIPTS[name]]
    (tmp_path / "in.jsonl").write_text("\n".join(lines) + "\n")
    done = caseboard("submit", name, "--file", str(tmp_path / "in.jsonl"), url=f"sqlite:///{tmp_path}/ledger.db")
    assert "Traceback" not in done.stderr
    outcomes = [json.loads(text) for text in done.stdout.splitlines()]
    assert len(outcomes) == len(lines), done.stdout + done.stderr
    outcome_matches(outcomes[0], None, "open")
    for number, (step, outcome) in enumerate(zip(SCRIPTS[name], outcomes[1:], strict=True), start=1):
        outcome_matches(outcome, step.expect, f"line {number + 1}: {step.principal} {step.items[0]['type']}")
    assert done.returncode == (1 if any(step.expect for step in SCRIPTS[name]) else 0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path_factory.mktemp('evidence')}/ledger.db") as running:
        yield running


@pytest.mark.parametrize("name", SCRIPTS)
def test_http_refuses_what_the_rules_of_evidence_refuse(name: str, server: RunningServer) -> None:
    workspace = f"http-{name}"
    operator = server.as_("operator-1", "operator")
    assert operator.post("/workspaces", json=open_body(workspace, runtime_limits=LIMITS)).status_code == 201
    clients: dict[tuple[str, str], Any] = {}
    for number, step in enumerate(SCRIPTS[name], start=1):
        who = (step.principal, step.role)
        if who not in clients:
            clients[who] = server.as_(*who)
        response = clients[who].post(f"/workspaces/{workspace}/contributions", json={"items": step.items})
        outcome = response.json()
        outcome_matches(outcome, step.expect, f"step {number}: {step.principal} {step.items[0]['type']}")
        expected_status = (
            201 if step.expect is None else {"forbidden": 403, "invalid": 422, "limit_exceeded": 409}[step.expect[0]]
        )
        assert response.status_code == expected_status, outcome
