"""The operator's console in a real server, in headless Debian chromium, as a person would see it: the list of a
tenant's investigations (only the key's tenant's, live, the "needs a person" filter), one investigation's page,
its judgments with their exact prompt and reply checked against the artifact store, and a diff; at a desktop's
width and at a phone's (390 px), with no console error and no horizontal scrolling of the page.

The screenshots go to a temporary directory the test prints, or ``CASEBOARD_TEST_SCREENSHOT_DIR`` (docs/ when
refreshing docs/console-*.png).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from caseboard.agent.board import Board
from caseboard.agent.budget import Budget
from caseboard.agent.model import OpenAIModel
from caseboard.agent.participant import ModelParticipant
from caseboard.agent.turn import take_turn
from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.dispatcher.notification import Notification
from caseboard.domain.items import Role
from caseboard.ledger import open_ledger
from caseboard.reducers import get_reducer
from caseboard.replay.history import told
from caseboard.replay.transfer import import_file
from caseboard.report import model
from caseboard.report.source import file_record
from tests.browser import offline_browser
from tests.conftest import ROOT, play, scenario_lines, stale_install
from tests.fake_model_server import FakeModel
from tests.http_server import RunningServer, observation, open_body, running_server

ESCALATED = {"a-02": "human_review_required", "a-07": "budget_exhausted", "a-11": "evidence_incomplete"}
AGENT_WS = "a-agent"
PHONE, DESKTOP = 390, 1280


def largest_corpus_incident() -> Path:
    """The corpus incident whose evidence graph has the most nodes (then edges)."""

    def size(path: Path) -> tuple[int, int]:
        graph = model.build_from(file_record(path), get_reducer()).graph
        return len(graph["nodes"]), len(graph["edges"])

    return max(sorted((ROOT / "corpus").glob("*.jsonl")), key=size)


@dataclass
class Console:
    server: RunningServer
    token_a: str
    token_b: str
    ids_a: set[str]
    ids_b: set[str]
    corpus_id: str
    judgments: list[Any]
    db_dir: Path

    def ours(self, url: str) -> bool:
        return urlsplit(url).netloc == urlsplit(self.server.base_url).netloc

    def bearer(self, token: str) -> httpx.Client:
        return self.server.client(token)


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Console]:
    where = tmp_path_factory.mktemp("console")
    url = f"sqlite:///{where}/ledger.db"
    ledger = open_ledger(url)
    corpus = largest_corpus_incident()
    try:
        coordinator = Coordinator(ledger, trust_timestamps=True)
        lines = scenario_lines()
        play(coordinator, lines[:19])
        coordinator.submit(parse_contribution(stale_install()))
        play(coordinator, lines[19:])
        corpus_id = import_file(ledger, corpus).workspace_id
    finally:
        ledger.close()
    with running_server(url) as server:
        token_a = server.token("operator-a", "operator", tenant="tenant-a")
        token_b = server.token("operator-b", "operator", tenant="tenant-b")
        a, b = server.client(token_a), server.client(token_b)
        ids_a, ids_b = {"incident-042", corpus_id}, set()
        for n in range(50):  # 50 workspaces of two tenants, opened one after the other
            tenant, client, ids = ("tenant-a", a, ids_a) if n % 5 < 3 else ("tenant-b", b, ids_b)
            workspace = f"{tenant[-1]}-{n:02d}"
            assert client.post("/workspaces", json=open_body(workspace, tenant=tenant)).status_code == 201
            ids.add(workspace)
        escalated = {**ESCALATED, "b-04": "human_review_required"}  # another tenant's escalation is not ours
        for workspace, status in escalated.items():
            client = a if workspace.startswith("a-") else b
            body = {"items": [{"type": "status", "to": status, "reason": f"escalated {workspace}"}]}
            answer = client.post(f"/workspaces/{workspace}/contributions", json=body)
            assert answer.status_code == 201, answer.text
        assert a.post("/workspaces", json=open_body(AGENT_WS)).status_code == 201
        ids_a.add(AGENT_WS)
        with FakeModel() as fake:  # two model calls, each a judgment with its prompt and reply kept
            llm = OpenAIModel(url=fake.url, name="fake-model-1", timeout_s=2, retries=1, backoff_s=0.01)
            planner = ModelParticipant("planner-1", Role.PLANNER, llm, Board(server.app), Budget(100, 10_000_000))
            for n in (1, 2):
                version = server.app.ledger.head(f"tenant-a/{AGENT_WS}")
                note = Notification(
                    id=f"{AGENT_WS}@{version}/turn/{n}",
                    kind="turn",
                    audience="planner",
                    workspace_id=f"tenant-a/{AGENT_WS}",
                    workspace_version=version,
                    subject="planner-1",
                    principal="planner-1",
                )
                take_turn(Board(server.app), planner, note)
        commits = server.app.ledger.read(f"tenant-a/{AGENT_WS}")
        judgments = [item for commit in commits for item in commit.items if item.type == "judgment"]
        assert len(judgments) == 2
        yield Console(server, token_a, token_b, ids_a, ids_b, corpus_id, judgments, where)


@pytest.fixture(scope="module")
def browser() -> Iterator[Callable[..., Any]]:
    """One browser for the module's pages (a fresh context, so no cookie, for each)."""
    with offline_browser() as opened:
        yield opened


@pytest.fixture(scope="module")
def shots() -> Path:
    where = Path(os.environ.get("CASEBOARD_TEST_SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="caseboard-console-"))
    where.mkdir(parents=True, exist_ok=True)
    print(f"\nconsole screenshots: {where}")
    return where


def sign_in(page: Any, console: Console, token: str) -> None:
    page.goto(console.server.base_url + "/ui/")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_selector("#live-state[data-live='1']", timeout=10_000)


def rows(page: Any) -> dict[str, dict[str, str]]:
    found: list[dict[str, str]] = page.locator("#rows tbody tr[data-id]").evaluate_all(
        "rs => rs.map(r => ({id: r.dataset.id, version: r.dataset.version, status: r.dataset.status}))"
    )
    return {row["id"]: row for row in found}


def test_the_list_shows_only_the_keys_tenant_and_a_commit_appears_within_a_second(
    console: Console, browser: Callable[..., Any]
) -> None:
    from playwright.sync_api import expect

    with browser(console.ours, width=DESKTOP) as (page, seen):
        sign_in(page, console, console.token_a)
        shown = rows(page)
        assert set(shown) == console.ids_a
        assert not set(shown) & console.ids_b
        assert page.locator("#tenant").inner_text() == "tenant-a"
        order = list(shown)
        assert order.index(AGENT_WS) < order.index("a-01") < order.index("incident-042")  # newest first
        before = int(shown["a-05"]["version"])
        client = console.bearer(console.token_a)
        reporter = console.bearer(console.server.token("logs-a", "specialist", tenant="tenant-a"))
        started = time.monotonic()
        answer = reporter.post("/workspaces/a-05/contributions", json={"items": [observation("obs-live-1")]})
        assert answer.status_code == 201, answer.text
        page.wait_for_selector(f"#rows tr[data-id='a-05'][data-version='{before + 1}']", timeout=5_000)
        seen_after = time.monotonic() - started
        assert client.post("/workspaces", json=open_body("a-new")).status_code == 201
        page.wait_for_selector("#rows tr[data-id='a-new']", timeout=5_000)
        console.ids_a.add("a-new")
        first = page.locator("#rows tbody tr").first.get_attribute("data-id")
        page.goto(f"{console.server.base_url}/ui/workspaces/a-05")  # one investigation, live
        page.wait_for_selector("#cy[data-ready='1']", timeout=10_000)
        assert page.locator("h1").inner_text() == "a-05 — version 2 of 2"
        answer = reporter.post("/workspaces/a-05/contributions", json={"items": [observation("obs-live-2")]})
        assert answer.status_code == 201, answer.text
        expect(page.locator("h1")).to_contain_text("version 3 of 3", timeout=5_000)  # no eval: the policy forbids it
        timeline = page.locator("#timeline tr.entry").evaluate_all("rows => rows.map(r => r.dataset.id)")
    assert seen_after < 1.0, f"the commit appeared after {seen_after:.2f} s"
    assert first == "a-new"
    assert set(timeline) == {"obs-live-1", "obs-live-2"}
    assert seen.errors == [] and seen.refused == []


def test_needs_a_person_shows_exactly_the_escalated_ones(console: Console, browser: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    with browser(console.ours, width=DESKTOP) as (page, seen):
        sign_in(page, console, console.token_a)
        page.check("#needs-person")
        expect(page.locator("#rows tbody tr[data-id]")).to_have_count(3, timeout=5_000)
        shown = rows(page)
        assert {ref: row["status"] for ref, row in shown.items()} == ESCALATED
        page.fill("#q", "a-07")
        expect(page.locator("#rows tbody tr[data-id]")).to_have_count(1, timeout=5_000)
        assert set(rows(page)) == {"a-07"}
    assert seen.errors == [] and seen.refused == []
    listed = console.bearer(console.token_a).get("/workspaces", params={"needs_person": "true"}).json()
    assert {row["workspace_id"]: row["needs_person"] for row in listed["workspaces"]} == {
        ref: [status] for ref, status in ESCALATED.items()
    }
    other = console.bearer(console.token_b).get("/workspaces", params={"needs_person": "true"}).json()
    assert [row["workspace_id"] for row in other["workspaces"]] == ["b-04"]


def test_a_judgments_prompt_and_reply_match_the_stored_bytes_and_a_tampered_one_shows_mismatch(
    console: Console, browser: Callable[..., Any], shots: Path
) -> None:
    artifacts = console.server.app.artifacts
    first, second = console.judgments
    prompt = json.loads(b"".join(artifacts.read("tenant-a", f"sha256:{first.prompt_sha256}")))
    reply = b"".join(artifacts.read("tenant-a", first.output["reply_artifact"])).decode()
    blob = console.db_dir / "artifacts" / "tenant-a" / second.prompt_sha256[:2] / second.prompt_sha256
    kept = blob.read_bytes()
    blob.write_bytes(kept.replace(b"planner", b"PLANNER", 1))  # altered in place, not through the store
    try:
        with browser(console.ours, width=DESKTOP) as (page, seen):
            sign_in(page, console, console.token_a)
            page.goto(f"{console.server.base_url}/ui/workspaces/{AGENT_WS}/judgments")
            good = page.locator(f"article[data-invocation='{first.invocation_id}']")
            bad = page.locator(f"article[data-invocation='{second.invocation_id}']")
            checks = [
                good.locator(".prompt").get_attribute("data-check"),
                good.locator(".reply").get_attribute("data-check"),
                bad.locator(".prompt").get_attribute("data-check"),
            ]
            messages = good.locator(".prompt pre.message").all_inner_texts()
            shown_reply = good.locator(".reply pre").inner_text()
            badge = bad.locator(".prompt .check").inner_text()
            done = good.locator(".done").inner_text()
            bad.screenshot(path=str(shots / "console-judgments-mismatch.png"))
            shown_version = good.locator("table").inner_text()
    finally:
        blob.write_bytes(kept)
    assert checks == ["verified", "verified", "mismatch"]
    assert badge == "mismatch"
    assert messages == [m["content"] for m in prompt]
    assert shown_reply == reply
    assert f"version {first.input_workspace_version}" in shown_version
    carried = next(c for c in console.server.app.ledger.read(f"tenant-a/{AGENT_WS}") if first in c.items)
    made = [told(item) for item in carried.items if item.type != "judgment"]
    assert made and all(f"{what}: accepted" in done for what in made), (made, done)
    assert seen.errors == [] and seen.refused == []


def label_overlaps(page: Any) -> tuple[int, list[str]]:
    boxes: list[dict[str, Any]] = page.evaluate(
        """() => window.caseboardGraph.nodes().map(n => {
             const b = n.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true});
             return {id: n.id(), x1: b.x1, y1: b.y1, x2: b.x2, y2: b.y2};
           })"""
    )
    assert all(b["x2"] - b["x1"] > 10 and b["y2"] - b["y1"] > 3 for b in boxes), boxes  # each label measured
    clashes = []
    for i, one in enumerate(boxes):
        for other in boxes[i + 1 :]:
            apart = (
                one["x2"] <= other["x1"]
                or other["x2"] <= one["x1"]
                or one["y2"] <= other["y1"]
                or other["y2"] <= one["y1"]
            )
            if not apart:
                clashes.append(f"{one['id']} / {other['id']}")
    return len(boxes), clashes


@pytest.mark.parametrize("width", [DESKTOP, PHONE])
def test_no_two_graph_labels_overlap_on_incident_042_and_the_largest_corpus_incident(
    console: Console, browser: Callable[..., Any], shots: Path, width: int
) -> None:
    measured, styles = {}, {}
    with browser(console.ours, width=width, height=900) as (page, seen):
        sign_in(page, console, console.token_a)
        for workspace in ("incident-042", console.corpus_id):
            page.goto(f"{console.server.base_url}/ui/workspaces/{workspace}")
            page.wait_for_selector("#cy[data-ready='1']", timeout=10_000)
            measured[workspace] = label_overlaps(page)
            page.locator("#graph").screenshot(path=str(shots / f"console-graph-{workspace}-{width}.png"))
            challenges = page.evaluate(
                "window.caseboardGraph.edges('[relation = \"challenges\"]').map(e => [e.style('line-style'),"
                " parseFloat(e.style('width'))])"
            )
            styles[workspace] = challenges
    for workspace, (labels, clashes) in measured.items():
        assert labels >= 6, (workspace, labels)
        assert clashes == [], (workspace, clashes)
    for challenges in styles.values():  # the challenge edges stand out: thicker than the rest, dashed
        assert challenges and all(style == "dashed" and w >= 4 for style, w in challenges)
    assert seen.errors == [] and seen.refused == []


def test_a_browser_that_routes_nothing_asks_for_nothing_the_console_does_not_serve(
    console: Console, browser: Callable[..., Any]
) -> None:
    """A person's browser asks a site for its icon unless the page names one, and logs the 404 as an error in
    its console. Every page names an empty icon, so nothing is asked for that the server does not serve."""
    with browser(console.ours, width=DESKTOP, intercept=False) as (page, seen):
        page.goto(console.server.base_url + "/ui/")
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(1000)  # the icon is asked for after the load
        sign_in(page, console, console.token_a)
        page.goto(f"{console.server.base_url}/ui/workspaces/incident-042")
        page.wait_for_selector("#cy[data-ready='1']", timeout=10_000)
        page.wait_for_timeout(1000)
    assert seen.errors == [] and seen.refused == []


PAGES = {
    "list": "/ui/",
    "investigation": "/ui/workspaces/incident-042",
    "judgments": f"/ui/workspaces/{AGENT_WS}/judgments",
    "diff": "/ui/workspaces/incident-042/diff?from=18&to=20",
}


def test_every_page_at_a_desktops_and_a_phones_width_without_errors_or_sideways_scrolling(
    console: Console, browser: Callable[..., Any], shots: Path
) -> None:
    widths: dict[str, int] = {}
    with browser(console.ours, width=DESKTOP, height=1000) as (page, seen):
        sign_in(page, console, console.token_a)
        for device, width in (("desktop", DESKTOP), ("phone", PHONE)):
            page.set_viewport_size({"width": width, "height": 1000 if device == "desktop" else 844})
            for name, path in PAGES.items():
                page.goto(console.server.base_url + path)
                if name == "investigation":
                    page.wait_for_selector("#cy[data-ready='1']", timeout=10_000)
                if name == "list":
                    page.wait_for_selector("#live-state[data-live='1']", timeout=10_000)
                page.wait_for_timeout(150)
                widths[f"{name}-{device}"] = page.evaluate(
                    "document.documentElement.scrollWidth - document.documentElement.clientWidth"
                )
                whole = device == "desktop" and name in ("list", "diff")
                page.screenshot(path=str(shots / f"console-{name}-{device}.png"), full_page=whole)
        diff_text = None
        page.goto(console.server.base_url + PAGES["diff"])
        diff_text = page.locator("#status-changes").inner_text()
    assert seen.errors == [] and seen.refused == []
    assert widths == dict.fromkeys(widths, 0), widths
    assert "proposal-008" in diff_text and "requires_revalidation" in diff_text


def test_the_list_route_is_tenant_scoped_paginated_and_in_the_openapi_schema(console: Console) -> None:
    a = console.bearer(console.token_a)
    first = a.get("/workspaces", params={"limit": 10}).json()
    assert first["total"] == len(console.ids_a) and len(first["workspaces"]) == 10
    pages = [first]
    while pages[-1]["next_before"] is not None:
        pages.append(a.get("/workspaces", params={"limit": 10, "before": pages[-1]["next_before"]}).json())
    listed = [row["workspace_id"] for page in pages for row in page["workspaces"]]
    assert sorted(listed) == sorted(console.ids_a) and len(listed) == len(set(listed))
    assert [row["order"] for page in pages for row in page["workspaces"]] == sorted(
        (row["order"] for page in pages for row in page["workspaces"]), reverse=True
    )
    found = a.get("/workspaces", params={"q": "A-1"}).json()["workspaces"]
    assert {row["workspace_id"] for row in found} == {ref for ref in console.ids_a if ref.startswith("a-1")}
    escalated = a.get("/workspaces", params={"status": "budget_exhausted"}).json()["workspaces"]
    assert [row["workspace_id"] for row in escalated] == ["a-07"]
    agent = next(row for row in listed_rows(a) if row["workspace_id"] == AGENT_WS)
    assert agent["model_calls"]["used"] == 2 and agent["model_calls"]["budget"] == 6 * 12
    assert agent["late_counterevidence"] == 0  # workspace-rules-v4 lists none here (ADR 0165)
    assert httpx.get(console.server.base_url + "/workspaces").status_code == 401
    schema = a.get("/openapi.json").json()
    assert "get" in schema["paths"]["/workspaces"]
    assert {"status", "needs_person", "q", "before", "limit"} <= {
        p["name"] for p in schema["paths"]["/workspaces"]["get"]["parameters"]
    }


def listed_rows(client: httpx.Client) -> list[dict[str, Any]]:
    return list(client.get("/workspaces", params={"limit": 200}).json()["workspaces"])
