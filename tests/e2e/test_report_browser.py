"""``caseboard report`` opened in headless Debian chromium, offline: incident-042 (played from the shared
scenario into a ledger, reported from the workspace) and a corpus incident (reported from its export file).

Every request that is not the file itself is refused, so the page must carry everything it needs. The
screenshots are kept in a temporary directory the test prints (or ``CASEBOARD_TEST_SCREENSHOT_DIR``).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from caseboard.report.page import content_security_policy
from tests.browser import offline_page
from tests.conftest import ROOT, caseboard, play, scenario_lines, stale_install

CORPUS_INCIDENT = ROOT / "corpus" / "stale-proposal-066.jsonl"


@dataclass
class Opened:
    console_errors: list[str]
    refused: list[str]
    timeline: list[str]
    sources: dict[str, str]  # an observation's id: its source cell as shown
    challenge_edges: int
    support_edges: int
    graph_ready: str | None
    why: dict[str, str]
    chain: str
    screenshot: Path


def open_report(html: Path, shots: Path, name: str) -> Opened:
    url = html.resolve().as_uri()
    with offline_page(lambda requested: requested == url) as (page, seen):
        page.goto(url, wait_until="load")
        page.wait_for_selector("#cy[data-ready='1']", timeout=30_000)
        page.wait_for_timeout(300)  # the layout's last frame
        timeline = page.locator("#timeline tr.entry").evaluate_all("rows => rows.map(r => r.dataset.id)")
        sources = dict(
            page.locator("#timeline tr.entry").evaluate_all(
                "rows => rows.map(r => [r.dataset.id, r.cells[4].innerText])"
            )
        )
        counts: Any = page.evaluate(
            "() => [window.caseboardGraph.edges('[relation = \"challenges\"]').length,"
            " window.caseboardGraph.edges('[relation = \"supports\"]').length]"
        )
        why = {
            item.removeprefix("why-"): page.locator(f"#{item} + ul").inner_text()
            for item in page.locator("#why h3").evaluate_all("hs => hs.map(h => h.id)")
        }
        chain = page.locator("#chain").inner_text()
        ready = page.get_attribute("#cy", "data-ready")
        shot = shots / f"report-{name}.png"
        page.screenshot(path=str(shot), full_page=True)
        page.locator("#graph").screenshot(path=str(shots / f"report-{name}-graph.png"))
    return Opened(seen.errors, seen.refused, timeline, sources, counts[0], counts[1], ready, why, chain, shot)


@pytest.fixture(scope="module")
def shots() -> Iterator[Path]:
    """Kept after the run (not in pytest's rotating tmp dirs): they are the test's artifacts."""
    where = Path(os.environ.get("CASEBOARD_TEST_SCREENSHOT_DIR") or tempfile.mkdtemp(prefix="caseboard-report-shots-"))
    where.mkdir(parents=True, exist_ok=True)
    print(f"\nreport screenshots: {where}")
    yield where


@pytest.fixture
def incident_042_ledger(tmp_path: Path) -> str:
    """incident-042 played through the coordinator from the shared scenario, the stale install refused."""
    url = f"sqlite:///{tmp_path}/ledger.db"
    ledger = open_ledger(url)
    try:
        coordinator = Coordinator(ledger, trust_timestamps=True)
        lines = scenario_lines()
        outcomes = play(coordinator, lines[:19])
        assert coordinator.submit(parse_contribution(stale_install()))["reason"] == "version_conflict"
        outcomes += play(coordinator, lines[19:])
        assert [o["workspace_version"] for o in outcomes] == list(range(1, 21))
    finally:
        ledger.close()
    return url


def test_the_incident_042_report_shows_the_timeline_the_challenge_and_why_proposal_008_is_stale(
    incident_042_ledger: str, tmp_path: Path, shots: Path
) -> None:
    out = tmp_path / "report.html"
    done = caseboard("report", "incident-042", "--out", str(out), url=incident_042_ledger)
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert "<script src" not in html and "<link" not in html and "<img" not in html  # one file, all inlined
    status = '<td>workspace status</td><td><span class="status status-investigating">investigating</span></td>'
    assert status in html  # a status with no reason shows nothing after it, not a dash
    opened = open_report(out, shots, "incident-042")
    assert opened.console_errors == []
    assert opened.refused == []
    assert opened.graph_ready == "1"
    order = opened.timeline
    assert order.index("obs-failures-before-change") < order.index("obs-certificate-change"), order
    assert opened.challenge_edges == 1 and opened.support_edges == 2  # the challenge hides no support
    recorded = {  # each observation of the scenario, on its own or reported by a work result
        observed["id"]: observed["source"]
        for line in scenario_lines()
        for item in json.loads(line)["items"]
        for observed in [item if item["type"] == "observation" else item.get("observation")]
        if isinstance(observed, dict)
    }
    assert opened.sources == {
        obs_id: f"{recorded[obs_id]['system']} · {recorded[obs_id]['instance']}" for obs_id in opened.timeline
    }
    why = opened.why["proposal-008"]
    assert "requires_revalidation" in why
    assert (
        "version 19 (log-specialist): link obs-failures-before-change challenges hyp-certificate-initiated-failure"
        in why
    )
    assert "material change on hyp-certificate-initiated-failure" in why
    assert opened.chain.startswith("Chain verified: 20 commits intact")
    assert opened.screenshot.stat().st_size > 20_000


def test_a_corpus_incident_report_renders_offline_with_every_status_and_its_cause(tmp_path: Path, shots: Path) -> None:
    out = tmp_path / "report.html"
    done = caseboard("report", str(CORPUS_INCIDENT), "--out", str(out), url=f"sqlite:///{tmp_path}/none.db")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "none.db").exists()  # a file's report opens no ledger
    opened = open_report(out, shots, CORPUS_INCIDENT.stem)
    assert opened.console_errors == []
    assert opened.refused == []
    assert opened.challenge_edges == 2 and opened.support_edges >= 1
    why = opened.why["proposal-004"]
    # recorded already stale (the challenge at 6), retained, accepted, then challenged again at 10
    assert "version 6 (log-specialist): link obs-early-failure challenges hyp-key-rotation" in why
    assert "accepted → requires_revalidation" in why
    assert "version 10 (edge-specialist): link obs-edge-clock challenges hyp-key-rotation" in why
    times = opened.timeline
    assert len(times) == len(set(times)) >= 3


def test_a_tampered_export_renders_a_report_that_says_so_at_the_top(tmp_path: Path, shots: Path) -> None:
    source = ROOT / "corpus" / "incident-042.jsonl"
    lines = source.read_text().splitlines()
    lines[9] = lines[9].replace("metrics", "metricz", 1)  # version 10 edited, not re-sealed
    assert lines[9] != source.read_text().splitlines()[9]
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text("\n".join(lines) + "\n")
    out = tmp_path / "report.html"
    done = caseboard("report", str(tampered), "--out", str(out), url=f"sqlite:///{tmp_path}/none.db")
    assert done.returncode == 1, done.stderr  # the page is written; a broken chain fails the command
    assert "NOT INTACT at version 10" in done.stderr
    html = out.read_text()
    body = html[html.index("<body>") :]
    assert body.index('id="chain"') < body.index("<section")
    opened = open_report(out, shots, "tampered")
    assert opened.console_errors == []
    assert opened.chain.startswith("NOT INTACT: this record fails verification at version 10 (altered)")
    assert "Only versions 1 to 9" in opened.chain
    assert "obs-failures-before-change" not in opened.timeline  # nothing after the bad version is shown


def test_report_at_a_past_version_shows_that_version(tmp_path: Path) -> None:
    out = tmp_path / "v18.html"
    source = ROOT / "corpus" / "incident-042.jsonl"
    done = caseboard("report", str(source), "--out", str(out), "--at-version", "18", url=f"sqlite:///{tmp_path}/n.db")
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    assert "version 18 of 20" in html
    assert "obs-failures-before-change" not in html
    beyond = caseboard("report", str(source), "--out", str(out), "--at-version", "21", url=f"sqlite:///{tmp_path}/n.db")
    assert beyond.returncode == 2
    assert beyond.stderr.strip() == "caseboard: --at-version 21: the record holds versions 1 to 20"


def test_a_script_the_page_did_not_ship_does_not_run_even_were_a_text_shown_unescaped(tmp_path: Path) -> None:
    """Every text a participant wrote is escaped; the page's policy is the second wall: were one ever shown
    unescaped (here: put into the file after it was written), its script and its handler would not run, while
    the scripts caseboard ships (the graph) still do."""
    out = tmp_path / "r.html"
    done = caseboard("report", str(CORPUS_INCIDENT), "--out", str(out), url=f"sqlite:///{tmp_path}/n.db")
    assert done.returncode == 0, done.stderr
    html = out.read_text()
    policy = escape(content_security_policy())  # as the template writes an attribute
    assert f'<meta http-equiv="Content-Security-Policy" content="{policy}">' in html
    injected = '<script>window.injected = 1</script><img src=x onerror="window.injected = 2">'
    out.write_text(html.replace("</header>", "</header>" + injected, 1))
    assert injected in out.read_text()
    url = out.resolve().as_uri()
    with offline_page(lambda requested: requested == url) as (page, seen):
        page.goto(url, wait_until="load")
        page.wait_for_selector("#cy[data-ready='1']", timeout=30_000)  # the shipped scripts ran
        assert page.evaluate("() => window.injected === undefined")
    assert any("Content Security Policy" in error for error in seen.errors), seen.errors


def copy_final(shots: Path, docs: Path) -> None:  # pragma: no cover - run by hand to refresh docs/report-*.png
    for name in ("incident-042", CORPUS_INCIDENT.stem):
        shutil.copy(shots / f"report-{name}.png", docs / f"report-{name}.png")
