"""Rule 5 of docs/rules-of-evidence.md: a fenced writer cannot launder its result (ADR 0167).

A principal whose claim on a request was fenced (a reclaim, or another's claim after its lease lapsed) and that
records a plain observation about that request's target is recorded, never refused: the observation shows
``fenced_writer`` (reducer workspace-rules-v4) and a hypothesis it supports lists it under ``uncounted_support``,
not among its ``supporting_sources``, and its status does not count it, until the live holder's result
supports the hypothesis too or a verification settles it. Each case is played through the command line and
over HTTP, its answers through the same door.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.evidence_doors import at, observation, opening, step
from tests.e2e.test_rule_held_at_limit import Play, play_cli, play_http
from tests.http_server import running_server

TARGET = "the certificate chain served by payments-api-3"
FULL = {
    "time_range": [at(-30), at(30)],
    "filters": {"service": "payments-api"},
    "targets": ["payments-api-3"],
    "completed": True,
}


@pytest.fixture(params=["cli", "http"])
def play(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Play]:
    if request.param == "cli":
        yield play_cli(tmp_path)
        return
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield play_http(running)


def asked(*support: str) -> list[dict[str, Any]]:
    """A hypothesis (supported by ``support``) and the check of the certificate chain, claimed by specialist-a."""
    return [
        opening(),
        step("specialist-9", "specialist", 0.5, observation("o-early", -40)),
        step(
            "planner-1",
            "planner",
            1,
            {
                "type": "hypothesis",
                "id": "h-cert",
                "statement": "the certificate expired",
                "supporting_evidence": support,
            },
            {"type": "work_request", "request_id": "chk-cert", "kind": "certificate_check", "target": TARGET},
        ),
        step("specialist-a", "specialist", 2, {"type": "work_claim", "request_id": "chk-cert", "lease_s": 60}),
    ]


def result(holder: str, minutes: float, generation: int, obs: dict[str, Any], **query: Any) -> dict[str, Any]:
    item = {
        "type": "work_result",
        "request_id": "chk-cert",
        "generation": generation,
        "status": "completed",
        "summary": obs["statement"],
        "observation": {k: v for k, v in obs.items() if k != "type"},
    }
    return step(holder, "specialist", minutes, item | ({"query": query} if query else {}))


def link(obs: str, relation: str = "supports") -> dict[str, Any]:
    return {"type": "link", "observation": obs, "hypothesis": "h-cert", "relation": relation}


EXPIRED = "the certificate of payments-api-3 expired"
VALID = "the certificate chain of payments-api-3 is valid until 2027"


def hypothesis_of(projection: dict[str, Any]) -> dict[str, Any]:
    [hyp] = [h for h in projection["hypotheses"] if h["id"] == "h-cert"]
    return hyp


def flag_of(projection: dict[str, Any], obs: str) -> dict[str, Any] | None:
    [entry] = [o for o in projection["observations"] if o["id"] == obs]
    flag: dict[str, Any] | None = entry["fenced_writer"]
    return flag


def test_a_reclaimed_writer_laundering_its_result_beside_the_live_result_is_flagged(play: Play) -> None:
    """The issue's example: the controller reclaims specialist-a's claim; specialist-b claims it; specialist-a's
    result is fenced, so it submits the same finding as a plain observation with a supports link; specialist-b's
    live result contradicts it. The laundered observation is recorded, flagged and not counted as support."""
    answers, projection = play(
        "ws-reclaimed",
        [
            *asked(),
            step("controller", "controller", 3, {"type": "work_reclaim", "request_id": "chk-cert", "reason": "stuck"}),
            step("specialist-b", "specialist", 4, {"type": "work_claim", "request_id": "chk-cert", "lease_s": 300}),
            result("specialist-a", 5, 1, observation("o-zombie", -5, statement=EXPIRED)),
            step("specialist-a", "specialist", 6, observation("o-zombie", -5, statement=EXPIRED), link("o-zombie")),
            result("specialist-b", 7, 2, observation("o-live", -1, statement=VALID)),
            step("planner-1", "planner", 8, link("o-live", "challenges")),
        ],
    )
    assert (answers[-4]["ok"], answers[-4]["reason"]) == (False, "fenced")
    assert answers[-3]["ok"] is True  # recorded, not refused
    assert flag_of(projection, "o-zombie") == {
        "request_id": "chk-cert",
        "recorded_at_version": 7,
        "live_result": "o-live",
    }
    assert flag_of(projection, "o-live") is None
    hyp = hypothesis_of(projection)
    assert (hyp["uncounted_support"], hyp["supporting_sources"]) == (["o-zombie"], [])
    assert hyp["status"] == "challenged"


def test_a_writer_fenced_by_a_lapsed_lease_is_not_counted_until_the_live_result(play: Play) -> None:
    """Another's claim after specialist-a's lease lapsed fences it; specialist-a (as "Specialist-A") records its
    finding about an instance the target names, and the planner cites it: the hypothesis stays proposed (v3
    would say supported). An observation of specialist-a about another target is not flagged."""
    elsewhere = observation("o-elsewhere", -2, source={"system": "auth-logs", "instance": "payments-api-1"})
    answers, projection = play(
        "ws-lapsed",
        [
            *asked(),
            step("specialist-b", "specialist", 5, {"type": "work_claim", "request_id": "chk-cert", "lease_s": 300}),
            step(
                "Specialist-A",
                "specialist",
                6,
                observation(
                    "o-zombie",
                    -5,
                    statement=EXPIRED,
                    source={"system": "tls-probe", "instance": "probe-1"},
                    scope={"instances": ["payments-api-3"]},
                ),
                elsewhere,
            ),
            step("planner-1", "planner", 7, link("o-zombie")),
        ],
    )
    assert all(answer["ok"] for answer in answers)
    assert flag_of(projection, "o-zombie") == {"request_id": "chk-cert", "recorded_at_version": 6, "live_result": None}
    assert flag_of(projection, "o-elsewhere") is None
    hyp = hypothesis_of(projection)
    assert (hyp["status"], hyp["uncounted_support"], hyp["supporting_sources"]) == ("proposed", ["o-zombie"], [])


def test_the_live_result_or_a_verification_settles_a_fenced_writers_support(play: Play) -> None:
    """The live holder's result supports the hypothesis too: the fenced writer's observation counts again. In
    a second hypothesis the live result does not support, a verification settles it."""
    answers, projection = play(
        "ws-settled",
        [
            *asked(),
            step("controller", "controller", 3, {"type": "work_reclaim", "request_id": "chk-cert", "reason": "stuck"}),
            step("specialist-b", "specialist", 4, {"type": "work_claim", "request_id": "chk-cert", "lease_s": 300}),
            step("specialist-a", "specialist", 5, observation("o-zombie", -5, statement=EXPIRED), link("o-zombie")),
            step(
                "planner-1",
                "planner",
                5.5,
                {
                    "type": "hypothesis",
                    "id": "h-rotation",
                    "statement": "a rotation",
                    "supporting_evidence": ["o-zombie"],
                },
            ),
            result("specialist-b", 6, 2, observation("o-live", -5, statement=EXPIRED), **FULL),
            step("planner-1", "planner", 7, link("o-live")),
            step(
                "verifier-1",
                "verifier",
                8,
                {"type": "verification", "claim": "h-rotation", "check": "chk-cert", "result": "confirmed"},
            ),
        ],
    )
    assert all(answer["ok"] for answer in answers), answers
    assert flag_of(projection, "o-zombie") == {
        "request_id": "chk-cert",
        "recorded_at_version": 7,
        "live_result": "o-live",
    }
    hyp = hypothesis_of(projection)
    assert (hyp["status"], hyp["uncounted_support"], hyp["supporting_sources"]) == (
        "supported",
        [],
        ["o-zombie", "o-live"],
    )
    [rotation] = [h for h in projection["hypotheses"] if h["id"] == "h-rotation"]
    assert (rotation["status"], rotation["uncounted_support"]) == ("confirmed", [])


def test_the_view_says_a_fenced_writers_observation_is_not_counted(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        play_http(running)(
            "ws-view",
            [
                *asked(),
                step("controller", "controller", 3, {"type": "work_reclaim", "request_id": "chk-cert", "reason": "x"}),
                step("specialist-a", "specialist", 6, observation("o-zombie", -5, statement=EXPIRED), link("o-zombie")),
            ],
        )
        view = running.as_("planner-1", "planner").get("/workspaces/ws-view/view", params={"budget_chars": 20000})
    [entry] = [e for e in view.json()["entries"] if e["ref"] == "o-zombie"]
    assert "FENCED WRITER: its author's claim on chk-cert was fenced" in entry["provenance"]["status"]
