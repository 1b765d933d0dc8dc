"""Shared headless-Chromium harness for the browser tests: Debian's chromium through Playwright
(never `playwright install`), a page whose every request goes through an allow-check (anything
refused is recorded and aborted), collected console and page errors, and the site checks every
page must pass served and exported (`SiteChecks`): axe-core finds no serious or critical
violation, the page does not scroll sideways at phone width, a lesson's prose column stays at
reading width and its previous/next links follow the course order. The checks run with every
prediction answered (`answer_every_prediction`), so the widgets locked behind them are shown.

Offline by construction: every browser test gets its Chromium through the `browser` fixture of
tests/conftest.py, an `OfflineBrowser`. Each context it makes routes every request through one
check (`is_local`: 127.0.0.1 over http/https/ws, or a data:, blob:, about: or file: URL); anything
else is aborted and recorded, as is a WebSocket to another host, and the fixture fails the test
at teardown when anything was. A `WatchedPage` may be stricter still (an exported page: file: URLs
only) and hands what it allows on to that check (`route.fallback()`), never past it."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Callable
from urllib.parse import urlparse

from lowprec.app.layout import PAGE_COMPLETE_JS, PAGE_READY_JS

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
#: the page is ready (Bokeh rendered it; no widget in the window still waits to be built) and
#: complete (every widget of a served lesson is built): `layout.PAGE_READY_JS` / `PAGE_COMPLETE_JS`
READY_JS = PAGE_READY_JS
COMPLETE_JS = PAGE_COMPLETE_JS
PROSE_MAX_PX = 800  # a lesson's Markdown at 1400 px: at most this wide
PHONE_PX = 390
#: the only host a page may reach: the test's own server
LOCAL_HOST = "127.0.0.1"
#: URL schemes that reach no host at all
HOSTLESS_SCHEMES = ("data", "blob", "about", "file")


def is_local(url: str) -> bool:
    """Whether a request to `url` stays on this machine: a hostless URL (data:, blob:, about:,
    file:) or http/https/ws/wss to 127.0.0.1 (not even `localhost`, which may resolve elsewhere)."""
    parsed = urlparse(url)
    if parsed.scheme in HOSTLESS_SCHEMES:
        return True
    return parsed.scheme in ("http", "https", "ws", "wss") and parsed.hostname == LOCAL_HOST


class OfflineBrowser:
    """A Chromium whose pages may reach 127.0.0.1 only (see the module docstring): `new_page` and
    `new_context` as Playwright's, every request checked by `is_local`, the refused ones aborted and
    listed in `outside` (with the URL of the page that asked, when known)."""

    def __init__(self, browser: Any) -> None:
        self.browser = browser
        self.outside: list[str] = []
        self._contexts: list[Any] = []

    def new_context(self, **kwargs: Any) -> Any:
        context = self.browser.new_context(**kwargs)
        context.route("**/*", self._route)
        context.on("page", lambda page: page.on("websocket", lambda ws: self._websocket(ws.url)))
        self._contexts.append(context)
        return context

    def new_page(self, **kwargs: Any) -> Any:
        """A page in a context of its own (as Playwright's `Browser.new_page`)."""
        context = self.new_context(**kwargs)
        page = context.new_page()
        page.on("websocket", lambda ws: self._websocket(ws.url))
        return page

    def _route(self, route: Any) -> None:
        url = route.request.url
        if is_local(url):
            route.continue_()
            return
        frame = route.request.frame if hasattr(route.request, "frame") else None
        where = ""
        try:
            where = f" (asked by {frame.url})" if frame is not None else ""
        except Exception:  # noqa: BLE001 - a detached frame: the URL alone says enough
            where = ""
        self.outside.append(url + where)
        route.abort()

    def _websocket(self, url: str) -> None:
        if not is_local(url):
            self.outside.append(f"websocket {url}")

    def close(self) -> None:
        """Close every context this browser made (their pages with them)."""
        for context in self._contexts:
            try:
                context.close()
            except Exception:  # noqa: BLE001 - already closed with its page
                pass
        self._contexts.clear()


class WatchedPage:
    """A Playwright page; `allow(url)` decides which requests may proceed (default: all that the
    browser's offline check lets through), the rest land in `outside`. Timeouts are generous: the
    suite runs on 2 busy cores (pytest -n 2)."""

    def __init__(self, browser: Any, allow: Callable[[str], bool] | None = None, timeout_ms: int = 120_000) -> None:
        self.allow = allow or is_local
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
            route.fallback()  # on to the browser's own offline check (an `OfflineBrowser` context)
        else:
            self.outside.append(url)
            route.abort()

    def column(self, column: str, key: str | None = None) -> Any:
        """Column `column` of the first ColumnDataSource in the page that has column `key`
        (default: `column` itself), as a list; None when there is none."""
        return self.page.evaluate(
            """([column, key]) => {
                for (const doc of Bokeh.documents) for (const m of doc.all_models) {
                    const d = m.data;
                    if (d === undefined || d === null || typeof d !== 'object') continue;
                    const get = (name) => d instanceof Map ? d.get(name) : d[name];
                    if (get(key) !== undefined && get(column) !== undefined) return Array.from(get(column));
                }
                return null;
            }""", [column, key or column])

    def table_rows(self) -> list[str]:
        """The visible text of every DataTable row on the page ('|' between cells)."""
        return list(self.page.evaluate(
            """() => { const out = []; const walk = (root) => { for (const el of root.querySelectorAll('*')) {
                if (el.classList && el.classList.contains('slick-row'))
                    out.push([...el.querySelectorAll('.slick-cell')].map(c => c.textContent).join('|'));
                if (el.shadowRoot) walk(el.shadowRoot); } }; walk(document); return out; }"""))


@lru_cache(maxsize=1)
def _every_prediction() -> dict[str, str]:
    from lowprec.app.exercises import block_key
    from lowprec.course.lessons import load_lessons

    return {block_key(x.slug, pid): "answered" for x in load_lessons() for pid in x.predictions}


def answer_every_prediction(page: Any) -> None:
    """Mark every prediction of the course answered in the page's progress store (localStorage
    "lowprec-progress") and tell the page ("lowprec-progress" event): locked widgets open."""
    page.evaluate("""(marks) => { const key = "lowprec-progress"; let data = {};
        try { data = JSON.parse(localStorage.getItem(key) || "{}") || {}; } catch (e) { data = {}; }
        Object.assign(data, marks); localStorage.setItem(key, JSON.stringify(data));
        for (const k of Object.keys(marks))
            window.dispatchEvent(new CustomEvent(key, {detail: {key: k, result: marks[k]}})); }""",
                  _every_prediction())
    page.wait_for_timeout(500)


def axe_serious(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page, one line each."""
    from axe_playwright_python.sync_playwright import Axe

    result = Axe().run(page)
    return [f"{v['impact']} {v['id']}: {v['help']} at {[n['target'] for n in v['nodes'][:3]]}"
            for v in result.response["violations"] if v["impact"] in ("serious", "critical")]


def sideways_px(page: Any) -> int:
    """How far the page scrolls sideways (0: it fits the window)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth"))


def prose_width_px(page: Any) -> float:
    """The widest Markdown paragraph or list of the page's main column, in CSS pixels."""
    return float(page.evaluate(
        """() => { let w = 0; const walk = (root) => { for (const el of root.querySelectorAll('*')) {
            if (el.classList && el.classList.contains('markdown')) {
                for (const p of el.shadowRoot ? el.shadowRoot.querySelectorAll('p, li') : [])
                    w = Math.max(w, p.getBoundingClientRect().width);
            }
            if (el.shadowRoot) walk(el.shadowRoot); } }; walk(document); return w; }"""))


def pager_links(page: Any) -> dict[str, str]:
    """The previous/next links of a lesson page, as absolute URLs ('' when absent)."""
    return dict(page.evaluate(
        """() => { const g = (sel) => { const a = document.querySelector(sel); return a ? a.href : ''; };
                   return {prev: g('.lp-pager a[rel=prev]'), next: g('.lp-pager a[rel=next]')}; }"""))


def check_site_page(page: Any, lesson_index: int | None, lesson_urls: list[str]) -> list[str]:
    """The site checks of one loaded page at 1400 px (see the module docstring), then at phone
    width; returns the problems found ('' list: none). `lesson_index` is the page's position in the
    course (None: not a lesson); `lesson_urls` the course's page URLs in order. Every prediction
    is answered first (the widgets behind them shown), and every widget of a served lesson is
    built first (they are built as the reader reaches them), so axe checks them too."""
    page.wait_for_function(COMPLETE_JS, timeout=180_000, polling=100)
    answer_every_prediction(page)
    problems = [f"axe: {v}" for v in axe_serious(page)]
    if lesson_index is not None:
        width = prose_width_px(page)
        if not 0 < width <= PROSE_MAX_PX:
            problems.append(f"prose column {width:.0f} px wide at 1400 px (limit {PROSE_MAX_PX})")
        links = pager_links(page)
        want_next = lesson_urls[lesson_index + 1] if lesson_index + 1 < len(lesson_urls) else ""
        if links["next"] != want_next:
            problems.append(f"next link {links['next']!r}, expected {want_next!r}")
        if lesson_index > 0 and links["prev"] != lesson_urls[lesson_index - 1]:
            problems.append(f"previous link {links['prev']!r}, expected {lesson_urls[lesson_index - 1]!r}")
    page.set_viewport_size({"width": PHONE_PX, "height": 900})
    page.wait_for_timeout(800)
    wide = sideways_px(page)
    if wide > 0:
        problems.append(f"scrolls {wide} px sideways at {PHONE_PX} px")
    page.set_viewport_size({"width": 1400, "height": 1000})
    return problems
