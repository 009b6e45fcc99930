"""Debian's Chromium driven by Playwright's sync API (Playwright cannot download its own browser
here), for the browser tests and for reading what a converted notebook shows offline."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("GPUGUARD_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@contextmanager
def chromium() -> Iterator[Any]:
    """A browser, closed on exit. Not for longer than a module: Playwright's sync API keeps an
    event loop running in this thread until it stops, which breaks every asyncio test after it."""
    if not shutil.which(CHROMIUM):
        pytest.fail(
            f"the browser tests need Chromium at {CHROMIUM}: apt-get install chromium "
            "(or set GPUGUARD_CHROMIUM to another Chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def offline_text(page_file: Path, screenshot: Path | None = None) -> str:
    """What a person reads on ``page_file`` with no network: every request that leaves the
    machine fails, as it does offline (a widget view needs a script from a CDN)."""
    with chromium() as browser:
        page = browser.new_page()
        page.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url.startswith("file:") else route.abort()
            ),
        )
        page.goto(page_file.as_uri(), wait_until="load")
        page.wait_for_timeout(500)  # scripts that did load have run
        if screenshot is not None:
            screenshot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(screenshot), full_page=True)
        return str(page.inner_text("body"))
