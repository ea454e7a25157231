"""Rule 2 of docs/rules-of-evidence.md: late counterevidence reaches someone (ADR 0165).

After a hypothesis is confirmed, a plan accepted and the workspace closed, an observation that bears on that
conclusion (it, or the request it answers, names it or what it rests on; a link relates it after a reopen; or it
was read where the evidence under the conclusion was, within its time window) is flagged on the projection
(``late_counterevidence``, reducer workspace-rules-v4), in every role's view, in health, announced to the
reporter and handed to a person (a ``late_counterevidence`` handoff); after a reopen it can be selected and the
planner is shown it. A reopen needs an owner and a budget of at least one cycle, and new limits at a reopen are a
change of constraints. Each case is played through the command line and over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import structlog

from caseboard.agent.plugin import participant
from caseboard.app import build_app
from caseboard.dispatcher.notification import Notification
from caseboard.dispatcher.route import route
from caseboard.domain.items import Role
from caseboard.handoff.document import build
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from caseboard.settings import Settings
from tests.conftest import ROOT
from tests.e2e.evidence_doors import T0, at, command, observation, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server

FULL = {
    "time_range": [at(-30), at(30)],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-1", "payments-api-2", "payments-api-3"],
    "completed": True,
}

CONCLUDED = [
    opening(),  # 1
    step("specialist-1", "specialist", 1, observation("o-fail", -3, statement="auth failures after the rotation")),
    step(
        "planner-1",
        "planner",
        2,
        {
            "type": "hypothesis",
            "id": "h-chain",
            "statement": "the certificate rotation broke the chain",
            "supporting_evidence": ["o-fail"],
        },
        {"type": "work_request", "request_id": "chk-1", "kind": "certificate_check", "target": "the chain"},
        {"type": "work_request", "request_id": "logs-1", "kind": "log_query", "target": "app logs behind h-chain"},
    ),  # 3
    step("verifier-1", "verifier", 3, {"type": "work_claim", "request_id": "chk-1", "lease_s": 300}),  # 4
    step(
        "verifier-1",
        "verifier",
        4,
        {
            "type": "work_result",
            "request_id": "chk-1",
            "generation": 1,
            "status": "completed",
            "summary": "the chain differs",
            "query": FULL,
        },
    ),  # 5
    step(
        "verifier-2",
        "verifier",
        5,
        {"type": "verification", "claim": "h-chain", "check": "chk-1", "result": "confirmed"},
        expected_version=5,
    ),  # 6
    step(
        "planner-1",
        "planner",
        6,
        {
            "type": "proposal",
            "id": "p-rollback",
            "summary": "roll the certificate back",
            "based_on_workspace_version": 6,
            "depends_on": ["h-chain"],
        },
    ),  # 7
    step(
        "operator-1",
        "operator",
        7,
        {"type": "review", "proposal": "p-rollback", "decision": "accepted"},
        expected_version=7,
    ),  # 8
    step("specialist-3", "specialist", 8, {"type": "work_claim", "request_id": "logs-1", "lease_s": 3600}),  # 9
    step("operator-1", "operator", 9, {"type": "status", "to": "closed", "reason": "the rollback fixed it"}),  # 10
]
"""A confirmed hypothesis and an accepted plan resting on it, then the workspace closed (at version 10)."""

ELSEWHERE = {"source": {"system": "db-events", "instance": "ledger-db"}}
"""Read where nothing under the conclusion was read."""


def body(item: dict[str, Any]) -> dict[str, Any]:
    """An observation item as the body of a work result (without its type)."""
    return {key: value for key, value in item.items() if key != "type"}


def late(principal: str, minutes: float, body: dict[str, Any]) -> dict[str, Any]:
    return step(principal, "specialist", minutes, body)


CASES: dict[str, tuple[list[dict[str, Any]], dict[str, list[str]]]] = {
    # the example: failures before the change, read from the same logs as the evidence, after the close
    "failures-before-the-change": (
        [late("specialist-2", 20, observation("o-before", -40, statement="auth failures before the rotation"))],
        {"o-before": ["h-chain", "p-rollback"]},
    ),
    # a check's result arriving after the close, from elsewhere and hours earlier: its request names h-chain
    "a-result-whose-request-names-it": (
        [
            late(
                "specialist-3",
                20,
                {
                    "type": "work_result",
                    "request_id": "logs-1",
                    "generation": 1,
                    "status": "completed",
                    "summary": "resets to ledger-db",
                    "observation": body(observation("o-resets", -300, statement="connection resets", **ELSEWHERE)),
                },
            )
        ],
        {"o-resets": ["h-chain", "p-rollback"]},
    ),
    # an observation that names only the accepted plan, read elsewhere: it bears on the plan alone
    "names-the-plan-only": (
        [late("specialist-2", 20, observation("o-db", -300, statement="p-rollback needs ledger-db", **ELSEWHERE))],
        {"o-db": ["p-rollback"]},
    ),
    # late but unrelated (another source, hours before): recorded as a late arrival, flagged as nothing
    "unrelated-late-arrival": (
        [late("specialist-2", 20, observation("o-other", -300, statement="a backup ran", **ELSEWHERE))],
        {},
    ),
}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield running


Door = Callable[[str, list[dict[str, Any]]], dict[str, Any]]


@pytest.fixture(params=["cli", "http"])
def door(request: pytest.FixtureRequest, tmp_path: Path) -> Door:
    if request.param == "cli":
        return lambda workspace, steps: via_cli(tmp_path, workspace, steps)
    running: RunningServer = request.getfixturevalue("server")
    return lambda workspace, steps: via_http(running, workspace, steps)


def flagged(projection: dict[str, Any]) -> dict[str, list[str]]:
    return {e["observation"]: [b["ref"] for b in e["bears_on"]] for e in projection["late_counterevidence"]}


@pytest.mark.parametrize("case", list(CASES))
def test_late_evidence_that_bears_on_a_closed_conclusion_is_flagged(door: Door, case: str) -> None:
    steps, expected = CASES[case]
    projection = door(f"ws-{case}", [*CONCLUDED, *steps])
    assert projection["status"] == "closed"
    assert [h["status"] for h in projection["hypotheses"]] == ["confirmed"]
    assert flagged(projection) == expected
    [arrival] = [o for o in projection["observations"] if o["late_arrival"]]
    assert arrival["selected"] is False  # recorded, not selected while closed; flagged instead
    for entry in projection["late_counterevidence"]:
        assert entry["recorded_at_version"] == 11 and entry["selected"] is False
        assert all(b["why"] and b["since_version"] == 11 for b in entry["bears_on"])


def test_why_it_bears_is_said(door: Door) -> None:
    steps, _ = CASES["failures-before-the-change"]
    [entry] = door("ws-why", [*CONCLUDED, *steps])["late_counterevidence"]
    assert entry["bears_on"] == [
        {
            "ref": "h-chain",
            "kind": "hypothesis",
            "why": "read from the same source (auth-logs) as o-fail, at 2026-03-02T13:20:00Z, within "
            "2026-03-02T12:57:00Z..2026-03-02T14:57:00Z",
            "since_version": 11,
        },
        {
            "ref": "p-rollback",
            "kind": "proposal",
            "why": "read from the same source (auth-logs) as o-fail, at 2026-03-02T13:20:00Z, within "
            "2026-03-02T12:57:00Z..2026-03-02T14:57:00Z",
            "since_version": 11,
        },
    ]


def reopen(minutes: float, **limits: int) -> dict[str, Any]:
    return step("operator-1", "operator", minutes, {"type": "reopen", "owner": "operator-1", "runtime_limits": limits})


def test_after_a_reopen_it_can_be_selected_and_new_limits_flag_the_plan(door: Door) -> None:
    """The operator reopens with a larger budget (a change of constraints: the accepted plan requires
    revalidation) and selects the late observation; it stays flagged."""
    steps, _ = CASES["failures-before-the-change"]
    reopened = [
        reopen(30, max_investigation_cycles=4),
        step("operator-1", "operator", 31, {"type": "selection", "select": ["o-before"], "reason": "late evidence"}),
    ]
    projection = door("ws-reopened", [*CONCLUDED, *steps, *reopened])
    assert projection["status"] == "investigating"
    assert "o-before" in projection["selected_items"]["observations"]
    assert flagged(projection) == {"o-before": ["h-chain", "p-rollback"]}
    assert projection["late_counterevidence"][0]["selected"] is True
    assert [p["status"] for p in projection["proposals"]] == ["requires_revalidation"]


def test_a_reopen_that_restates_the_limits_flags_no_plan(door: Door) -> None:
    projection = door("ws-same-limits", [*CONCLUDED, reopen(30, max_investigation_cycles=6)])
    assert projection["runtime_limits"]["max_investigation_cycles"] == 6
    assert [p["status"] for p in projection["proposals"]] == ["accepted"]


def test_an_unrelated_late_arrival_linked_after_a_reopen_is_flagged(door: Door) -> None:
    """Another order: the late arrival bears on nothing when it lands; after a reopen a planner links it as a
    challenge to the confirmed hypothesis, and from then on it is late counterevidence."""
    steps, _ = CASES["unrelated-late-arrival"]
    link = {"type": "link", "observation": "o-other", "hypothesis": "h-chain", "relation": "challenges"}
    projection = door("ws-linked", [*CONCLUDED, *steps, reopen(30), step("planner-2", "planner", 31, link)])
    [entry] = projection["late_counterevidence"]
    assert entry["observation"] == "o-other"
    assert [(b["ref"], b["why"], b["since_version"]) for b in entry["bears_on"]] == [
        ("h-chain", "linked to h-chain after it arrived", 13),
        ("p-rollback", "linked to h-chain after it arrived", 13),
    ]


def test_health_and_handoffs_name_it_on_the_command_line(tmp_path: Path) -> None:
    steps, _ = CASES["failures-before-the-change"]
    via_cli(tmp_path, "ws-cli", [*CONCLUDED, *steps])
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    try:
        code, out = command("--database-url", url, "health", "ws-cli", "--format", "json")
        assert code == 0, out
        late_figure = json.loads(out)["late_counterevidence"]
        code, listed = command("--database-url", url, "handoffs", "ws-cli", "--format", "json")
        assert code == 0, listed
    finally:
        structlog.reset_defaults()
    assert late_figure == {
        "total": 1,
        "observations": [{"observation": "o-before", "recorded_at_version": 11, "bears_on": ["h-chain", "p-rollback"]}],
    }
    handoffs = [json.loads(line) for line in listed.splitlines()]
    assert [(h["workspace_version"], h["trigger"]) for h in handoffs] == [(11, "late_counterevidence")]


def test_every_role_is_shown_it_and_health_counts_it_over_http(server: RunningServer) -> None:
    steps, _ = CASES["failures-before-the-change"]
    via_http(server, "ws-seen", [*CONCLUDED, *steps])
    for principal, role in [
        ("planner-1", "planner"),
        ("specialist-1", "specialist"),
        ("verifier-1", "verifier"),
        ("reporter-1", "reporter"),
        ("controller-1", "controller"),
        ("operator-1", "operator"),
    ]:
        view = server.as_(principal, role).get("/workspaces/ws-seen/view", params={"budget_chars": 20000}).json()
        [entry] = [e for e in view["entries"] if e["ref"] == "o-before"]
        assert entry["section"] == "late_counterevidence", role
        assert entry["note"].startswith("LATE: arrived after the workspace closed; bears on h-chain (hypothesis)")
        assert "o-before" in view["text"]
    operator = server.as_("operator-1", "operator")
    health = operator.get("/workspaces/ws-seen/health").json()
    assert health["late_counterevidence"]["total"] == 1
    handoffs = operator.get("/workspaces/ws-seen/handoffs").json()["handoffs"]
    assert [(h["workspace_version"], h["trigger"]) for h in handoffs] == [(11, "late_counterevidence")]


def test_the_planner_is_shown_it_after_a_reopen(server: RunningServer) -> None:
    steps, _ = CASES["failures-before-the-change"]
    via_http(server, "ws-planner", [*CONCLUDED, *steps, reopen(30, max_investigation_cycles=4)])
    planner = server.as_("planner-1", "planner")
    view = planner.get("/workspaces/ws-planner/view", params={"budget_chars": 20000}).json()
    sections = {e["ref"]: e["section"] for e in view["entries"]}
    assert sections["o-before"] == "late_counterevidence"
    assert sections["p-rollback"] == "revalidation"  # new limits at the reopen: a change of constraints


REOPEN_REFUSALS = {
    "no-owner": ({"type": "reopen", "runtime_limits": {"max_investigation_cycles": 2}}, "items[0].owner"),
    "no-cycle": (
        {"type": "reopen", "owner": "operator-1", "runtime_limits": {"max_investigation_cycles": 0}},
        "items[0].runtime_limits.max_investigation_cycles",
    ),
}


@pytest.mark.parametrize("case", list(REOPEN_REFUSALS))
def test_a_reopen_needs_an_owner_and_a_cycle(tmp_path: Path, server: RunningServer, case: str) -> None:
    item, field = REOPEN_REFUSALS[case]
    via_cli(tmp_path, "ws-r", CONCLUDED)
    lines = tmp_path / "reopen.jsonl"
    lines.write_text(json.dumps({"workspace_id": "ws-r", **step("operator-1", "operator", 30, item)}) + "\n")
    try:
        code, out = command(
            "--database-url", f"sqlite:///{tmp_path / 'cli.db'}", "submit", "ws-r", "--file", str(lines)
        )
    finally:
        structlog.reset_defaults()
    [answer] = [json.loads(line) for line in out.splitlines()]
    assert code != 0 and not answer["ok"]
    assert (answer["reason"], answer["field"]) == ("invalid", field), answer
    via_http(server, "ws-r", CONCLUDED)
    body = {"author": {"principal": "operator-1", "role": "operator"}, "items": [item]}
    refused = server.as_("operator-1", "operator").post("/workspaces/ws-r/contributions", json=body)
    assert refused.status_code == 422, refused.text
    error = refused.json()
    assert (error["reason"], error["field"]) == ("invalid", field), error


def test_the_reporter_is_told_a_person_is_handed_it_and_the_planner_hears_of_it_at_the_reopen(
    tmp_path: Path,
) -> None:
    """What the dispatcher routes for each commit of the example played through the command line, and the
    handoff document the late arrival makes."""
    steps, _ = CASES["failures-before-the-change"]
    via_cli(tmp_path, "ws-routed", [*CONCLUDED, *steps, reopen(30, max_investigation_cycles=4)])
    ledger = open_ledger(f"sqlite:///{tmp_path / 'cli.db'}")
    reducer = get_reducer()
    state = reducer.initial("ws-routed")
    told: dict[int, set[tuple[str, str, str | None]]] = {}
    try:
        for commit in ledger.read("ws-routed"):
            state = reducer.evolve(state, commit)
            told[commit.version] = {(n.kind, n.audience, n.subject) for n in route(commit, state, reducer)}
            if commit.version == 11:
                projection = reducer.render(state)
    finally:
        ledger.close()
    assert {("late_counterevidence", "reporter", "o-before"), ("handoff", "handoff", "late_counterevidence")} <= (
        told[11]
    )
    assert not any(kind in ("late_counterevidence", "handoff") for kind, _, _ in told[10] | told[12])
    assert ("evidence_changed", "planner", "h-chain") in told[12]
    assert ("proposal_requires_revalidation", "planner", "p-rollback") in told[12]
    document = json.loads(build("ws-routed", projection, T0, "late_counterevidence", None).body())
    jsonschema.validate(document, json.loads((ROOT / "schemas" / "handoff.v1.schema.json").read_text()))
    assert document["trigger"] == "late_counterevidence" and document["status"] == "closed"
    assert [(e["observation"], e["bears_on"]) for e in document["late_counterevidence"]] == [
        ("o-before", ["h-chain", "p-rollback"])
    ]


def test_the_reporter_s_agent_is_asked_to_summarize_it_for_a_person(tmp_path: Path) -> None:
    """caseboard's model-backed reporter acts on the announcement, on the closed workspace (its summary is a
    derived summary: not a source, so it is no late counterevidence of its own)."""
    app = build_app(Settings(database_url=f"sqlite:///{tmp_path}/l.db"))
    try:
        reporter = participant(app, object(), Role.REPORTER, "reporter-1")  # type: ignore[arg-type]
    finally:
        app.close()
    told = Notification(
        id="n", kind="late_counterevidence", audience="reporter", workspace_id="w", workspace_version=11,
        subject="o-before",
    )  # fmt: skip
    task = reporter.task(told, {"status": "closed", "workspace_version": 11, "scope": {"tenant_id": "tenant-a"}})
    assert task is not None and "o-before" in task and "arrived after the workspace closed" in task
