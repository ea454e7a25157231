"""``/docs`` renders the operations in a real headless browser with every request outside the server refused:
Swagger UI's assets come from the installed package, not from a CDN."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from tests.browser import offline_page
from tests.http_server import RunningServer, running_server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with running_server(f"sqlite:///{tmp_path_factory.mktemp('docs')}/ledger.db") as running:
        yield running


def test_the_docs_pages_reference_no_cdn(server: RunningServer) -> None:
    for page in ("/docs", "/redoc"):
        html = httpx.get(server.base_url + page, timeout=30).text
        assert "cdn." not in html and "https://" not in html, html
        assert "/docs/assets/" in html
    asset = httpx.get(server.base_url + "/docs/assets/swagger-ui-bundle.js", timeout=30)
    assert asset.status_code == 200
    assert len(asset.content) > 100_000


def test_swagger_ui_renders_the_operations_in_a_headless_browser_without_internet(
    server: RunningServer, tmp_path: Path
) -> None:
    ours = urlsplit(server.base_url).netloc
    with offline_page(lambda requested: urlsplit(requested).netloc == ours, 1280, 1400) as (page, seen):
        page.goto(server.base_url + "/docs", wait_until="networkidle")
        page.wait_for_selector(".opblock", timeout=30_000)
        operations = page.locator(".opblock-summary-path").all_inner_texts()
        title = page.locator(".info .title").inner_text()
        page.screenshot(path=str(tmp_path / "docs.png"), full_page=False)
        shot = Path(os.environ.get("CASEBOARD_TEST_SCREENSHOT", tmp_path / "docs.png"))
        if shot != tmp_path / "docs.png":
            shutil.copy(tmp_path / "docs.png", shot)
    assert seen.refused == []
    assert title.startswith("caseboard")
    paths = {text.replace("\u200b", "").strip() for text in operations}
    assert {"/workspaces", "/workspaces/{workspace_id}", "/workspaces/{workspace_id}/contributions"} <= paths
    assert len(operations) >= 8
