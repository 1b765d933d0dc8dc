"""Shared headless-Chromium harness for the browser tests: Debian's chromium through Playwright
(never `playwright install`), a page whose every request goes through an allow-check (anything
refused is recorded and aborted), and collected console and page errors."""

from __future__ import annotations

from typing import Any, Callable

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


class WatchedPage:
    """A Playwright page; `allow(url)` decides which requests may proceed, the rest land in
    `outside`. Timeouts are generous: the suite runs on 2 busy cores (pytest -n 2)."""

    def __init__(self, browser: Any, allow: Callable[[str], bool], timeout_ms: int = 120_000) -> None:
        self.allow = allow
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.set_default_timeout(timeout_ms)
        self.page.set_default_navigation_timeout(timeout_ms)
        self.outside: list[str] = []
        self.console_errors: list[str] = []
        self.page_errors: list[str] = []
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: self.console_errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.page_errors.append(str(e)))

    def _route(self, route: Any) -> None:
        url = route.request.url
        if self.allow(url):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()
