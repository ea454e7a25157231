"""schemathesis over the served ``/openapi.json``, as ``st run --checks all`` runs it: every check, every phase
(examples, coverage, fuzzing, stateful), a fixed seed and a bounded number of examples, against a real server
with an operator key (an intake key for ``/intake/``). The document must say what the server does: 0 findings,
but the allowances below, each a rule no JSON Schema can state, listed in docs/adr/0173 and in the document's
own description (``caseboard/api/openapi_doc.py``).

An allowance excuses one thing only: a schema-valid request refused with 422 for one of those rules, on the
operations it names, every problem its message lists matching an allowance. Every other check (no 5xx,
statuses, content types, response schemas and headers, refusing what the schema refuses, ``Allow``,
authentication) holds as is.
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.engine import events, from_schema
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

from caseboard.api.models import ContributionRequest
from caseboard.api.openapi_doc import NO_CONTROL
from caseboard.coordinator.parse import parse_json
from caseboard.domain.errors import Refusal
from caseboard.reducers import REDUCERS
from tests.http_server import RunningServer, open_body, running_server

SEED = 34
MAX_EXAMPLES = 10
STREAM_READ_S = 1.0
"""How long an event stream is read (it lasts up to ``timeout_s``, 300 s by default): its first event and
its schema are what is checked here; the streams have their own tests."""


@dataclass(frozen=True)
class Allowance:
    """A 422 ``reason`` on the operations matching ``operation`` for a problem matching ``problem`` (a refusal's
    message lists its problems, ``<field>: <what>``, joined by ``; ``), and ``holds(case)`` true of the request."""

    rule: str
    operation: str
    reason: str
    problem: str
    holds: Callable[[Any], bool] = lambda case: True

    def excuses(self, case: Any, reason: str, problem: str) -> bool:
        return (
            re.fullmatch(self.operation, case.operation.label) is not None
            and reason == self.reason
            and re.search(self.problem, problem) is not None
            and self.holds(case)
        )


def _names_another_workspace(case: Any) -> bool:
    body = case.body if isinstance(case.body, dict) else {}
    return body.get("workspace_id") not in (None, (case.path_parameters or {}).get("workspace_id"))


def _as_integers(value: Any) -> Any:
    """``value`` with every integral float (``2.0``) written as the integer it is."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _as_integers(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_as_integers(inner) for inner in value]
    return value


CAPPED = re.compile(r" \(and \d+ more problems?\)$")
"""How a refusal ends that names only its first problems (``parse.MAX_PROBLEMS_NAMED``): the rest go unnamed."""


def _only_integral_floats_wrong(case: Any) -> bool:
    """Whether the contribution, its integral floats written as integers, passes the server's one parse path
    (``parse_json``): then a refusal whose message names only some of its problems refused only those."""
    if not isinstance(case.body, dict):
        return False
    try:
        parse_json(ContributionRequest, json.dumps(_as_integers(case.body)))
    except Refusal:
        return False
    return True


def _integral_floats(value: Any) -> Iterator[float]:
    if isinstance(value, float) and value.is_integer():
        yield value
    elif isinstance(value, dict):
        for inner in value.values():
            yield from _integral_floats(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _integral_floats(inner)


WRITES = r"POST /workspaces(/\{workspace_id\}/contributions)?|POST /intake/.*"
READS = r"GET /(ui/)?workspaces/\{workspace_id\}(/timeline|/view|/health|/diff)?"
INTEGRAL_FLOAT = "an integer written with a fraction, `2.0` (JSON Schema's integers include it; ADR 0045 refuses it)"
CONTRIBUTIONS = "POST /workspaces/{workspace_id}/contributions"
ALLOWANCES = (
    Allowance(
        "a version past the workspace's head, or `from` after `to` (state; ADR 0030)",
        READS,
        "invalid",
        r"^workspace '[^']*' has versions 1\.\.\d+$|^version \d+ does not exist$"
        r"|^(version|to) \d+: the record holds versions 1 to \d+$|^from \d+ is after to \d+",
    ),
    Allowance(
        "a contribution body's `workspace_id` other than the path's (two locations)",
        r"POST /workspaces/\{workspace_id\}/contributions",
        "invalid",
        r"^workspace_id: the body names .* but the path names ",
        _names_another_workspace,
    ),
    Allowance(
        INTEGRAL_FLOAT,
        WRITES,
        "invalid",
        r"^[^ ]+: Input should be a valid integer$",
        lambda case: next(_integral_floats(case.body), None) is not None,
    ),
    Allowance(
        "an order between two values of an item: a time range's start before its end, `valid_from` before "
        "`valid_until`, a citation's `A-B` with A <= B",
        r"POST /workspaces/\{workspace_id\}/contributions",
        "invalid",
        r"^[^ ]+: (time_range must start before it ends|valid_until must not be before valid_from"
        r"|citation: (lines|bytes) range \d+-\d+: expected A-B with [01] <= A <= B .*)$",
    ),
    Allowance(
        "an excerpt's range: exactly one of `lines` and `bytes`, `A-B` with A <= B, inside the artifact",
        r"GET /artifacts/\{artifact_id\}/excerpt",
        "invalid",
        r"^name one range|is not A-B|expected A-B with|^(lines|bytes) \d+-\d+ is not inside artifact ",
    ),
    Allowance(
        "an id that must exist: an item a contribution refers to (state)",
        r"POST /workspaces/\{workspace_id\}/contributions",
        "unknown_reference",
        r".",
    ),
    Allowance(
        "an alert's labels must name a service and map to a tenant (docs/pilot.md)",
        r"POST /intake/.*",
        "invalid",
        r"no label names the service|CASEBOARD_TENANTS",
    ),
)
EXCUSED: list[tuple[str, str]] = []
"""(operation, rule) of each refusal an allowance excused in this run."""
REFUSED: list[str] = []
"""Each schema-valid request refused that no allowance excuses: its operation, the answer and the request."""


@schemathesis.check
def positive_data_accepted_but_for_allowances(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's ``positive_data_acceptance``, but for the refusals an ``ALLOWANCES`` entry excuses."""
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        try:
            refusal = json.loads(response.content)
        except ValueError:
            raise
        reason = refusal.get("reason") if isinstance(refusal, dict) else None
        message = str(refusal.get("message", "")) if isinstance(refusal, dict) else ""
        capped = CAPPED.search(message) is not None  # problems past the first 20 are not named
        problems = CAPPED.sub("", message).split("; ")
        rules = [next((a.rule for a in ALLOWANCES if a.excuses(case, str(reason), p)), None) for p in problems]
        if capped and not (
            case.operation.label == CONTRIBUTIONS
            and set(rules) == {INTEGRAL_FLOAT}
            and _only_integral_floats_wrong(case)
        ):
            rules.append(None)  # the unnamed ones are excused only when they can be shown to be the named kind
        if response.status_code == 422 and None not in rules:
            EXCUSED.extend((case.operation.label, rule) for rule in rules if rule is not None)
            return None
        request = json.dumps({"query": case.query, "body": case.body}, default=str)[:400]
        REFUSED.append(f"{case.operation.label}: {response.status_code} {response.content[:300]!r} to {request}")
        raise


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('schema')}/ledger.db"
    with running_server(url) as running:
        operator = running.as_("oncall-operator", "operator")
        assert operator.post("/workspaces", json=copy.deepcopy(open_body("ws-real"))).status_code == 201
        stored = operator.post("/artifacts", content=b"one\ntwo\nthree\n", headers={"Content-Type": "text/plain"})
        assert stored.status_code == 201
        yield running


def test_the_server_does_what_its_openapi_document_says(server: RunningServer) -> None:
    operator = server.token("schema-operator", "operator")
    intake = server.token("schema-intake", "intake")
    config = schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "workers": 1,
            "continue-on-failure": True,
            "request-timeout": 10,
            "headers": {"Authorization": f"Bearer {operator}"},
            "generation": {"max-examples": MAX_EXAMPLES},
            "checks": {"enabled": True, "positive_data_acceptance": {"enabled": False}},
            "operations": [
                {"include-path-regex": "^/intake/", "headers": {"Authorization": f"Bearer {intake}"}},
                {"include-path-regex": "/events$", "request-timeout": STREAM_READ_S, "max-stream-events": 1},
            ],
        }
    )
    schema = schemathesis.openapi.from_url(f"{server.base_url}/openapi.json", config=config)
    EXCUSED.clear()
    REFUSED.clear()
    started = time.monotonic()
    cases = 0
    findings: list[str] = []
    phases: dict[str, str] = {}
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            cases += len(event.recorder.cases)
            for checks in event.recorder.checks.values():
                for check in checks:
                    if check.failure_info is not None:
                        failure = check.failure_info.failure
                        findings.append(f"{event.recorder.label}: {failure.title}: {failure.message[:300]}")
        elif isinstance(event, events.PhaseFinished):
            phases[event.phase.name.value] = event.status.value
        elif isinstance(event, events.NonFatalError | events.FatalError):
            findings.append(f"error: {getattr(event, 'info', None) or getattr(event, 'exception', None)}")
    seconds = time.monotonic() - started
    excused = sorted(set(EXCUSED))
    print(f"\nschemathesis: {cases} cases in {seconds:.0f} s, phases {phases}; {len(EXCUSED)} refusals excused:")
    for operation, rule in excused:
        print(f"  {operation}: {rule}")
    assert not findings, "\n".join([*sorted(set(findings)), *REFUSED])
    assert cases > 500, cases
    assert phases.get("stateful") not in (None, "skip"), phases


def test_the_answers_the_document_now_states(server: RunningServer) -> None:
    """What the run above found, one request each: ``Allow`` names every method of the path, an artifact
    upload needs a body, a page past the head names its field, a status filter is one of the statuses."""
    operator = server.as_("answers-operator", "operator")
    for path, allowed in (("/workspaces", "GET, POST"), ("/artifacts", "GET, POST")):
        answer = operator.request("OPTIONS", path)
        assert (answer.status_code, answer.headers["allow"]) == (405, allowed)
        assert answer.json()["reason"] == "method_not_allowed"
    empty = operator.post("/artifacts", content=b"", headers={"Content-Type": "text/plain"})
    assert (empty.status_code, empty.json()["field"]) == (422, "$")
    assert all(meta["size"] > 0 for meta in operator.get("/artifacts").json()["artifacts"])
    page = operator.get("/ui/workspaces/ws-real", params={"version": 99})
    assert (page.status_code, page.json()["field"]) == (422, "version")
    diff = operator.get("/ui/workspaces/ws-real/diff", params={"to": 99})
    assert (diff.status_code, diff.json()["field"], diff.json()["message"]) == (
        422,
        "to",
        "to 99: the record holds versions 1 to 1",
    )
    unknown = operator.get("/workspaces", params={"status": "not-a-status"})
    assert (unknown.status_code, unknown.json()["reason"]) == (422, "invalid")
    assert operator.get("/workspaces", params={"status": "investigating"}).json()["total"] >= 1


def test_the_document_declares_the_text_and_the_reducers_it_takes(server: RunningServer) -> None:
    document = httpx.get(f"{server.base_url}/openapi.json").json()
    parameters = {p["name"]: p["schema"] for p in document["paths"]["/knowledge"]["get"]["parameters"]}
    assert parameters["service"]["pattern"] == NO_CONTROL
    projection = document["paths"]["/workspaces/{workspace_id}"]["get"]["parameters"]
    reducer = next(p["schema"] for p in projection if p["name"] == "reducer")
    assert {"type": "string", "enum": sorted(REDUCERS)} in reducer["anyOf"]
    stream = document["paths"]["/workspaces/{workspace_id}/events"]["get"]["responses"]["200"]["content"]
    assert {
        event["properties"].get("event", {}).get("const") for event in stream["text/event-stream"]["schema"]["oneOf"]
    } >= {"commit", "end"}
