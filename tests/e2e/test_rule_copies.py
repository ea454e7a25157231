"""Rule 6 of docs/rules-of-evidence.md: copies of one excerpt are one source (ADR 0166).

Observations whose citations resolve to the same excerpt (the same excerpt hash recorded at commit, or an
overlapping range of the same artifact in the same unit) count once toward ``max_selected_items`` (the
coordinator's selection, ``caseboard/coordinator/attention.py``) and once among a hypothesis's sources (reducer
workspace-rules-v4), and the projection and the model's view show them as one source with its copies. Each case
is played through the command line and over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from tests.e2e.evidence_doors import command, observation, opening, step, via_cli, via_http
from tests.http_server import RunningServer, running_server

LOG = b"".join(b"14:%02d auth_failure payments-api-%d certificate expired\n" % (m, m % 3) for m in range(12))
OTHER = LOG.splitlines(keepends=True)[0] + b"14:59 a different log, whose first line is the same\n"
FIRST_LINE = len(LOG.splitlines(keepends=True)[0])

Cite = Callable[[bytes], str]
"""Stores an artifact's bytes through the door under test and returns its id."""


def cited(obs_id: str, minutes: float, artifact: str, unit: str, first: int, last: int) -> dict[str, Any]:
    return observation(obs_id, minutes, evidence_ref={"artifact": artifact, unit: [first, last]})


def scenario(copies: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """An independent observation, then four observations (by ``copies``' principals) citing the log, a hypothesis
    supported by all five, then a second hypothesis: with max_selected_items 6, counting each copy as a source
    leaves no room for the second, which displaces the independent observation."""
    return [
        opening(max_selected_items=6),
        step("specialist-9", "specialist", 1, observation("o-ind", -20)),
        *(step(principal, "specialist", 2 + n, body) for n, (principal, body) in enumerate(copies)),
        step(
            "planner-1",
            "planner",
            8,
            {
                "type": "hypothesis",
                "id": "h-cert",
                "statement": "the certificate expired",
                "supporting_evidence": ["o-ind", *(body["id"] for _, body in copies)],
            },
        ),
        step(
            "planner-1",
            "planner",
            9,
            {"type": "hypothesis", "id": "h-dns", "statement": "a DNS change", "supporting_evidence": ["o-ind"]},
        ),
    ]


def same_excerpt(log: str, other: str) -> list[tuple[str, dict[str, Any]]]:
    """The issue's example: three specialists cite the same lines, then one retries under a new id."""
    return [
        ("specialist-1", cited("c1", -10, log, "lines", 2, 4)),
        ("specialist-2", cited("c2", -10, log, "lines", 2, 4)),
        ("specialist-3", cited("c3", -10, log, "lines", 2, 4)),
        ("specialist-1", cited("c1-retry", -10, log, "lines", 2, 4)),
    ]


def overlapping(log: str, other: str) -> list[tuple[str, dict[str, Any]]]:
    """Overlapping ranges of the same artifact (each excerpt's hash differs); the last overlaps only the first."""
    return [
        ("specialist-1", cited("c1", -10, log, "lines", 2, 4)),
        ("specialist-2", cited("c2", -9, log, "lines", 3, 7)),
        ("specialist-3", cited("c3", -8, log, "lines", 4, 4)),
        ("specialist-1", cited("c1-retry", -7, log, "lines", 1, 2)),
    ]


def same_hash(log: str, other: str) -> list[tuple[str, dict[str, Any]]]:
    """The same bytes cited in two artifacts, and by lines and by bytes: the excerpt hash is the same."""
    return [
        ("specialist-1", cited("c1", -10, log, "lines", 1, 1)),
        ("specialist-2", cited("c2", -10, other, "lines", 1, 1)),
        ("specialist-3", cited("c3", -10, log, "bytes", 0, FIRST_LINE - 1)),
        ("specialist-1", cited("c1-retry", -10, other, "bytes", 0, FIRST_LINE - 1)),
    ]


CASES = {"same-excerpt": same_excerpt, "overlapping-ranges": overlapping, "same-hash-two-artifacts": same_hash}


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        yield running


Door = tuple[Cite, Callable[[str, list[dict[str, Any]]], dict[str, Any]]]


@pytest.fixture(params=["cli", "http"])
def door(request: pytest.FixtureRequest, tmp_path: Path) -> Door:
    if request.param == "cli":

        def put_cli(data: bytes) -> str:
            path = tmp_path / f"artifact-{len(list(tmp_path.glob('artifact-*')))}.log"
            path.write_bytes(data)
            try:
                code, out = command("--database-url", f"sqlite:///{tmp_path / 'cli.db'}", "artifacts", "put", str(path))
            finally:
                structlog.reset_defaults()
            assert code == 0, out
            return str(json.loads(out)["artifact_id"])

        return put_cli, lambda workspace, steps: via_cli(tmp_path, workspace, steps)
    running: RunningServer = request.getfixturevalue("server")

    def put_http(data: bytes) -> str:
        answer = running.as_("specialist-1", "specialist").post("/artifacts", content=data)
        assert answer.status_code == 201, answer.text
        return str(answer.json()["artifact_id"])

    return put_http, lambda workspace, steps: via_http(running, workspace, steps)


@pytest.mark.parametrize("case", list(CASES))
def test_copies_of_one_excerpt_are_one_source(door: Door, case: str) -> None:
    put, play = door
    copies = CASES[case](put(LOG), put(OTHER))
    projection = play(f"ws-{case}", scenario(copies))
    selected = projection["selected_items"]
    assert "o-ind" in selected["observations"], projection.get("status_detail")
    assert {h["id"] for h in selected["hypotheses"]} == {"h-cert", "h-dns"}
    assert projection["counters"]["selected_items"] == 4  # o-ind, one source of four copies, two hypotheses
    assert projection["status"] == "investigating"
    [cert] = [h for h in projection["hypotheses"] if h["id"] == "h-cert"]
    assert cert["supporting_sources"] == ["o-ind", "c1"]
    assert cert["supporting_copies"] == {"c1": ["c2", "c3", "c1-retry"]}
    shown = {o["id"]: (o["copy_of"], o["copies"]) for o in projection["observations"]}
    assert shown["c1"] == (None, ["c2", "c3", "c1-retry"])
    assert shown["c1-retry"] == ("c1", [])
    assert shown["o-ind"] == (None, [])


def test_ranges_that_do_not_overlap_are_separate_sources(door: Door) -> None:
    put, play = door
    log = put(LOG)
    copies = [
        ("specialist-1", cited("c1", -10, log, "lines", 1, 2)),
        ("specialist-2", cited("c2", -10, log, "lines", 3, 4)),
    ]
    projection = play("ws-apart", scenario(copies))
    [cert] = [h for h in projection["hypotheses"] if h["id"] == "h-cert"]
    assert (cert["supporting_sources"], cert["supporting_copies"]) == (["o-ind", "c1", "c2"], {})
    assert projection["counters"]["selected_items"] == 5


def test_the_view_shows_one_source_with_its_copies(tmp_path: Path) -> None:
    with running_server(f"sqlite:///{tmp_path}/http.db", trust_timestamps=True) as running:
        planner = running.as_("planner-1", "planner")
        log = str(running.as_("specialist-1", "specialist").post("/artifacts", content=LOG).json()["artifact_id"])
        via_http(running, "ws-view", scenario(same_excerpt(log, log)))
        view = planner.get("/workspaces/ws-view/view", params={"budget_chars": 20000}).json()
    refs = [entry["ref"] for entry in view["entries"] if entry["section"] == "observations"]
    assert "c1" in refs and not {"c2", "c3", "c1-retry"} & set(refs)
    [entry] = [e for e in view["entries"] if e["section"] == "observations" and e["ref"] == "c1"]
    assert entry["note"] == "one source with its copies (the same cited excerpt): c2, c3, c1-retry"


def test_a_source_is_displaced_with_all_its_copies_and_counted_once(door: Door) -> None:
    """At max_selected_items 3, two copies (one source), a newer plain observation and a hypothesis fill the
    selection; a second hypothesis displaces the lowest-ranked: the source, with its copies, freeing one slot."""
    put, play = door
    log = put(LOG)
    steps = [
        opening(max_selected_items=3),
        step("specialist-1", "specialist", 1, cited("c1", -10, log, "lines", 2, 4)),
        step("specialist-2", "specialist", 2, cited("c2", -10, log, "lines", 2, 4)),
        step("specialist-3", "specialist", 3, observation("o-a", -5)),
        step("planner-1", "planner", 4, {"type": "hypothesis", "id": "h1", "statement": "the certificate"}),
        step("planner-1", "planner", 5, {"type": "hypothesis", "id": "h2", "statement": "a DNS change"}),
    ]
    projection = play("ws-displaced", steps)
    assert projection["selected_items"]["observations"] == ["o-a"]
    assert projection["counters"]["selected_items"] == 3
    assert projection["status"] == "investigating"


def test_an_operator_selects_a_copy_of_a_selected_source_without_taking_room(door: Door) -> None:
    """At max_selected_items 2, full with a source (and its copy) and a plain observation: the operator drops the
    copy and selects it again; it takes no room of its own, so the selection is not refused as over the limit."""
    put, play = door
    log = put(LOG)
    steps = [
        opening(max_selected_items=2),
        step("specialist-1", "specialist", 1, cited("c1", -10, log, "lines", 2, 4)),
        step("specialist-2", "specialist", 2, cited("c2", -10, log, "lines", 3, 3)),
        step("specialist-3", "specialist", 3, observation("o-a", -5)),
        step("operator-1", "operator", 4, {"type": "selection", "deselect": ["c2"], "reason": "a copy"}),
        step("operator-1", "operator", 5, {"type": "selection", "select": ["c2"], "reason": "keep it in view"}),
    ]
    projection = play("ws-reselect", steps)
    assert sorted(projection["selected_items"]["observations"]) == ["c1", "c2", "o-a"]
    assert projection["counters"]["selected_items"] == 2
