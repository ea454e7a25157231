"""``/ui/`` in a real server, in headless Debian chromium: sign in with a key, open incident-042, move the
version slider back to 18 (before the challenge), and see only the key's tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from caseboard.coordinator import Coordinator, parse_contribution
from caseboard.ledger import open_ledger
from tests.browser import offline_page
from tests.conftest import play, scenario_lines, stale_install
from tests.http_server import RunningServer, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    url = f"sqlite:///{tmp_path_factory.mktemp('ui')}/ledger.db"
    ledger = open_ledger(url)
    try:
        coordinator = Coordinator(ledger, trust_timestamps=True)
        lines = scenario_lines()
        play(coordinator, lines[:19])
        coordinator.submit(parse_contribution(stale_install()))
        play(coordinator, lines[19:])
        assert ledger.head("incident-042") == 20
    finally:
        ledger.close()
    with running_server(url) as running:
        yield running


def test_the_ui_signs_in_shows_incident_042_and_its_slider_moves_to_a_past_version(
    server: RunningServer, tmp_path: Path
) -> None:
    token = server.token("auditor-1", "operator", tenant="tenant-a")
    ours = urlsplit(server.base_url).netloc
    with offline_page(lambda requested: urlsplit(requested).netloc == ours) as (page, seen):
        page.goto(server.base_url + "/ui/")
        page.fill("input[name=token]", token)
        page.click("button[type=submit]")
        page.wait_for_selector("input[name=workspace]")
        page.fill("input[name=workspace]", "incident-042")
        page.click("button[type=submit]")
        page.wait_for_selector("#cy[data-ready='1']", timeout=30_000)
        head_title = page.locator("h1").inner_text()
        head_timeline = page.locator("#timeline tr.entry").evaluate_all("rows => rows.map(r => r.dataset.id)")
        with page.expect_navigation():
            page.eval_on_selector(
                "#version-slider",
                "s => { s.value = '18'; s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); }",
            )
        page.wait_for_selector("#cy[data-ready='1']", timeout=30_000)
        past_title = page.locator("h1").inner_text()
        past_url = page.url
        past_timeline = page.locator("#timeline tr.entry").evaluate_all("rows => rows.map(r => r.dataset.id)")
        past_status = page.locator("#why h3").all_inner_texts()
        page.screenshot(path=str(tmp_path / "ui-v18.png"), full_page=False)
        print(f"\nui screenshot: {tmp_path / 'ui-v18.png'}")
    assert seen.errors == [] and seen.refused == []
    assert head_title == "incident-042 — version 20 of 20"
    assert head_timeline.index("obs-failures-before-change") < head_timeline.index("obs-certificate-change")
    assert past_title == "incident-042 — version 18 of 20"
    assert past_url.endswith("/ui/workspaces/incident-042?version=18")
    assert "obs-failures-before-change" not in past_timeline
    assert past_status == ["hypothesis hyp-certificate-initiated-failure: supported"]


def test_the_ui_shows_only_the_keys_tenant_and_refuses_without_a_key(server: RunningServer) -> None:
    page = server.base_url + "/ui/workspaces/incident-042"
    other = server.token("auditor-2", "operator", tenant="tenant-b")
    mine = server.token("auditor-3", "operator", tenant="tenant-a")
    foreign = httpx.get(page, headers={"Authorization": f"Bearer {other}"}, timeout=30)
    missing = httpx.get(server.base_url + "/ui/workspaces/incident-404", headers={"Authorization": f"Bearer {mine}"})
    assert foreign.status_code == missing.status_code == 404
    assert foreign.json()["reason"] == missing.json()["reason"] == "unknown_workspace"
    anonymous = httpx.get(page, timeout=30)
    assert anonymous.status_code == 401 and anonymous.json()["reason"] == "unauthenticated"
    wrong = httpx.post(server.base_url + "/ui/login", data={"token": "cb_nope"}, timeout=30)
    assert wrong.status_code == 401 and "unknown or revoked" in wrong.text
    cookie = httpx.get(page, cookies={"caseboard_key": mine}, timeout=30)
    assert cookie.status_code == 200 and cookie.headers["content-type"].startswith("text/html")
    beyond = httpx.get(page + "?version=21", headers={"Authorization": f"Bearer {mine}"}, timeout=30)
    assert beyond.status_code == 422 and beyond.json()["reason"] == "invalid"


def test_every_page_forbids_framing_sniffing_referers_and_any_script_but_its_own(server: RunningServer) -> None:
    mine = server.token("auditor-4", "operator", tenant="tenant-a")
    base = server.base_url + "/ui"
    pages = ["/", "/workspaces/incident-042", "/workspaces/incident-042/judgments", "/workspaces/incident-042/diff"]
    answers = [
        httpx.get(
            base + path,
            params={"from": 3, "to": 9} if path.endswith("diff") else None,
            cookies={"caseboard_key": mine},
            timeout=30,
        )
        for path in pages
    ]
    answers.append(httpx.get(base + "/", timeout=30))  # the sign-in form
    answers.append(httpx.post(base + "/login", data={"token": "cb_nope"}, timeout=30))  # and its refusal
    for answer in answers:
        assert answer.headers["content-type"].startswith("text/html"), answer.url
        policy = answer.headers["content-security-policy"]
        assert (
            policy.startswith("default-src 'none'; script-src 'sha256-")
            and "'unsafe-inline'" not in policy.split(";")[1]
        )
        assert policy.endswith("; frame-ancestors 'none'")
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["referrer-policy"] == "no-referrer"


def test_signing_in_with_the_key_left_empty_stays_on_the_page_and_asks_for_it(server: RunningServer) -> None:
    """The browser holds the form back (the field is required), so a person never gets the JSON refusal the
    route gives a request without a token."""
    ours = urlsplit(server.base_url).netloc
    posted: list[str] = []
    with offline_page(lambda requested: urlsplit(requested).netloc == ours) as (page, seen):
        page.on("request", lambda request: posted.append(request.url) if request.method == "POST" else None)
        page.goto(server.base_url + "/ui/")
        page.click("button[type=submit]")
        page.wait_for_timeout(500)
        missing = page.eval_on_selector("input[name=token]", "field => field.validity.valueMissing")
        heading = page.locator("h1").inner_text()
    assert seen.errors == [] and seen.refused == []
    assert posted == [] and missing is True and heading == "caseboard console"
