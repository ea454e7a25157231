"""Pages in headless Debian chromium (Playwright), offline: every request a page makes outside what the test
allows is refused and recorded, and console errors and warnings are collected."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

CHROMIUM = os.environ.get("CASEBOARD_TEST_CHROMIUM", "/usr/bin/chromium")


def chromium() -> str:
    found = CHROMIUM if os.path.isfile(CHROMIUM) else shutil.which("chromium")
    if found is None:
        message = f"no chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


@dataclass
class Seen:
    """What a page did besides rendering: requests refused, console errors and warnings."""

    refused: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@contextmanager
def offline_page(allowed: Callable[[str], bool], width: int = 1400, height: int = 1000) -> Iterator[tuple[Any, Seen]]:
    """A new page of a fresh headless browser, with requests to URLs ``allowed`` refuses aborted as if the
    machine had no network; the browser is closed when the block ends."""
    executable = chromium()
    from playwright.sync_api import ConsoleMessage, Route, sync_playwright

    seen = Seen()

    def offline(route: Route) -> None:
        if allowed(route.request.url):
            route.continue_()
        else:
            seen.refused.append(route.request.url)
            route.abort("internetdisconnected")

    def console(message: ConsoleMessage) -> None:
        if message.type in ("error", "warning"):
            seen.errors.append(f"{message.type}: {message.text}")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.on("console", console)
            page.on("pageerror", lambda error: seen.errors.append(f"pageerror: {error}"))
            page.route("**/*", offline)
            yield page, seen
        finally:
            browser.close()


@contextmanager
def offline_browser() -> Iterator[Callable[..., Any]]:
    """One headless browser for several pages (a module's tests): yields ``opened(allowed, width, height)``, a
    context manager that gives a fresh page (its own context, so no cookie is shared) and its ``Seen``, refused
    and collected as ``offline_page``'s."""
    executable = chromium()
    from playwright.sync_api import ConsoleMessage, Route, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=["--no-sandbox", "--disable-gpu"]
        )

        @contextmanager
        def opened(
            allowed: Callable[[str], bool], width: int = 1400, height: int = 1000, intercept: bool = True
        ) -> Iterator[tuple[Any, Seen]]:
            """``intercept=False`` routes nothing: the page loads as in a person's browser, and a request
            ``allowed`` refuses is only recorded. Chromium does not route what it asks for on its own (a site's
            icon), and on a routed page such a request's failure is not reported either."""
            seen = Seen()

            def watched(request: Any) -> None:
                if not allowed(request.url):
                    seen.refused.append(request.url)

            def offline(route: Route) -> None:
                if allowed(route.request.url):
                    route.continue_()
                else:
                    seen.refused.append(route.request.url)
                    route.abort("internetdisconnected")

            def console(message: ConsoleMessage) -> None:
                if message.type in ("error", "warning"):
                    seen.errors.append(f"{message.type}: {message.text}")

            context = browser.new_context(viewport={"width": width, "height": height})
            try:
                page = context.new_page()
                page.on("console", console)
                page.on("pageerror", lambda error: seen.errors.append(f"pageerror: {error}"))
                if intercept:
                    page.route("**/*", offline)
                else:
                    page.on("request", watched)
                yield page, seen
            finally:
                context.close()

        try:
            yield opened
        finally:
            browser.close()
