"""Rule 9 of docs/rules-of-evidence.md: nothing submitted in good faith is lost at a limit (ADR 0168).

A question, check (``work_request``) or proposal that would cross its runtime limit, submitted beside other items,
no longer takes them down with it: the other items land, the overflowing one is recorded in the commit as
submitted and held for lack of capacity (its decision's ``held``, the answer's ``held``, the projection's
``held``), and the workspace escalates to ``human_review_required``, with the held items in its handoff. Alone
in its contribution it is still refused ``limit_exceeded``. Each case is played through the command line and
over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from caseboard.handoff.document import build
from tests.e2e.evidence_doors import T0, command, observation, opening, step
from tests.http_server import RunningServer, running_server

Play = Callable[[str, list[dict[str, Any]]], tuple[list[dict[str, Any]], dict[str, Any]]]
"""Submits each contribution through the door under test: the answers, and the projection after the last."""


def play_cli(tmp_path: Path) -> Play:
    def play(workspace: str, steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        url = f"sqlite:///{tmp_path / 'cli.db'}"
        answers = []
        try:
            for n, body in enumerate(steps):
                lines = tmp_path / f"{workspace}-{n}.jsonl"
                lines.write_text(json.dumps({"workspace_id": workspace, **body}) + "\n")
                _, out = command("--database-url", url, "submit", workspace, "--file", str(lines), "--trust-timestamps")
                answers.append(json.loads(out.splitlines()[-1]))
            code, out = command("--database-url", url, "show", workspace, "--format", "json")
            assert code == 0, out
        finally:
            structlog.reset_defaults()
        return answers, json.loads(out)

    return play


def play_http(server: RunningServer) -> Play:
    def play(workspace: str, steps: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        answers = []
        for body in steps:
            body = json.loads(json.dumps(body))
            author = body.pop("author")
            client = server.as_(author["principal"], author["role"])
            if body["items"][0]["type"] == "open":
                item = body.pop("items")[0]
                item.pop("type")
                response = client.post("/workspaces", json={"workspace_id": workspace, **body, **item})
            else:
                response = client.post(f"/workspaces/{workspace}/contributions", json=body)
            assert response.status_code in (201, 409), response.text
            answers.append(response.json())
        shown = server.as_("operator-1", "operator").get(f"/workspaces/{workspace}")
        assert shown.status_code == 200, shown.text
        return answers, shown.json()

    return play


@pytest.fixture(params=["cli", "http"])
def play(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Play]:
    if request.param == "cli":
        yield play_cli(tmp_path)
        return
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield play_http(running)


def hypothesis(hyp_id: str, *support: str) -> dict[str, Any]:
    return {"type": "hypothesis", "id": hyp_id, "statement": f"{hyp_id} explains it", "supporting_evidence": support}


def question(question_id: str, about: str | None = None) -> dict[str, Any]:
    return {"type": "question", "id": question_id, "text": f"what about {question_id}?", "about": about}


def request(request_id: str) -> dict[str, Any]:
    return {"type": "work_request", "request_id": request_id, "kind": "log_query", "target": "payments-api-3 logs"}


def proposal(proposal_id: str, basis: int, *depends_on: str) -> dict[str, Any]:
    return {
        "type": "proposal",
        "id": proposal_id,
        "summary": f"roll back ({proposal_id})",
        "based_on_workspace_version": basis,
        "depends_on": depends_on,
    }


def held_in(answer: dict[str, Any]) -> list[tuple[int, str, str]]:
    return [(entry["index"], entry["type"], entry["limit"]) for entry in answer.get("held", [])]


def test_a_contradiction_lands_when_its_question_is_held(play: Play) -> None:
    """The issue's example: at max_open_questions, a specialist's contradicting observation, its challenge link
    and a new question: the observation and the link land, the question is held, the workspace escalates."""
    contradiction = observation("o-before", -30, statement="auth failures before the change")
    answers, projection = play(
        "ws-question",
        [
            opening(max_open_questions=1),
            step("specialist-1", "specialist", 1, observation("o-1", -5)),
            step("planner-1", "planner", 2, hypothesis("h-change", "o-1"), question("q-1", "h-change")),
            step(
                "specialist-2",
                "specialist",
                3,
                contradiction,
                {"type": "link", "observation": "o-before", "hypothesis": "h-change", "relation": "challenges"},
                question("q-2", "h-change"),
            ),
        ],
    )
    answer = answers[-1]
    assert answer["ok"] is True and answer["workspace_version"] == 4
    assert held_in(answer) == [(2, "question", "max_open_questions")]
    assert answer["items"][2]["held"]["open"] == 1 and answer["items"][2]["escalated"]["to"] == "human_review_required"
    assert "held" not in answer["items"][0] and "held" not in answer["items"][1]
    assert {o["id"] for o in projection["observations"]} == {"o-1", "o-before"}
    [hyp] = projection["selected_items"]["hypotheses"]
    assert (hyp["status"], hyp["challenging_evidence"]) == ("challenged", ["o-before"])
    assert [q["id"] for q in projection["questions"]] == ["q-1"]
    assert projection["status"] == "human_review_required"
    assert "question q-2 held for lack of capacity" in projection["status_detail"]["reason"]
    [held] = projection["held"]
    assert (held["type"], held["id"], held["limit"], held["author"], held["recorded_at_version"]) == (
        "question",
        "q-2",
        "max_open_questions",
        "specialist-2",
        4,
    )
    assert held["item"]["text"] == "what about q-2?"
    handoff = build("ws-question", projection, T0, "human_review_required", None)
    assert [(h.type, h.id) for h in handoff.held] == [("question", "q-2")]


def test_a_hypothesis_lands_when_its_check_is_held(play: Play) -> None:
    """A planner's hypothesis and the check it asks for, at max_pending_work: the hypothesis lands, the check is
    held; a second check in the same contribution is held too, and the workspace escalates once."""
    answers, projection = play(
        "ws-check",
        [
            opening(max_pending_work=1),
            step("specialist-1", "specialist", 1, observation("o-1", -5)),
            step("planner-1", "planner", 2, request("chk-1")),
            step("planner-1", "planner", 3, hypothesis("h-dns", "o-1"), request("chk-2"), request("chk-3")),
        ],
    )
    assert held_in(answers[-1]) == [(1, "work_request", "max_pending_work"), (2, "work_request", "max_pending_work")]
    assert "escalated" in answers[-1]["items"][1] and "escalated" not in answers[-1]["items"][2]
    assert [h["id"] for h in projection["hypotheses"]] == ["h-dns"]
    assert [w["request_id"] for w in projection["pending_work"]] == ["chk-1"]
    assert [(h["type"], h["id"]) for h in projection["held"]] == [("work_request", "chk-2"), ("work_request", "chk-3")]
    assert projection["status"] == "human_review_required"


def test_a_proposal_over_its_limit_is_held_beside_a_question_and_alone_is_refused(play: Play) -> None:
    """At max_proposals, a proposal beside a question that fits is held and the question lands; the same proposal
    alone is refused limit_exceeded, as before: nothing else would be lost, and its submitter is told."""
    answers, projection = play(
        "ws-proposal",
        [
            opening(max_proposals=1),
            step("specialist-1", "specialist", 1, observation("o-1", -5)),
            step("planner-1", "planner", 2, hypothesis("h-cert", "o-1"), proposal("p-1", 2, "h-cert")),
            step("planner-1", "planner", 3, proposal("p-2", 3, "h-cert")),
            step("planner-1", "planner", 4, question("q-1", "h-cert"), proposal("p-2", 3, "h-cert")),
        ],
    )
    refused = answers[3]
    assert (refused["ok"], refused["reason"], refused["field"]) == (False, "limit_exceeded", "items[0]")
    assert held_in(answers[4]) == [(1, "proposal", "max_proposals")]
    assert "recorded_status" not in answers[4]["items"][1]
    assert [p["id"] for p in projection["proposals"]] == ["p-1"]
    assert [q["id"] for q in projection["questions"]] == ["q-1"]
    assert [(h["type"], h["id"], h["recorded_at_version"]) for h in projection["held"]] == [("proposal", "p-2", 4)]
    assert projection["status"] == "human_review_required"
