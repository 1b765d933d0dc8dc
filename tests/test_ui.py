"""Browser tests: the served app in Debian's headless Chromium through Playwright.

One server (`lowprec serve --no-show`) on a free port for the whole module; every request the page
makes is intercepted and any host other than the server fails the test. Every page is opened and
checked for console errors, page errors and traceback text; the bin explorer's controls are driven
and the plotted data (read from the page's Bokeh document) must change; garbage in the value box
must show the "Invalid" message and leave the page working; the URL query must reproduce a view.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser import CHROMIUM, CHROMIUM_ARGS, WatchedPage

pytestmark = pytest.mark.ui

ROOT = Path(__file__).resolve().parents[1]

import playwright.sync_api as playwright_api  # noqa: E402 - a test dependency (the test extra)

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until(condition: Any, timeout: float = 20.0, interval: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "lowprec.app.cli", "serve", "--no-show", "--port", str(port)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"

    def answers() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stdout.read() if proc.stdout else ''}")
        try:
            with urllib.request.urlopen(url + "/", timeout=5) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    try:
        wait_until(answers, timeout=60, interval=0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Watched(WatchedPage):
    """A page whose requests may go only to the server (or data:/blob: URLs), errors collected."""

    def __init__(self, browser: Any, server: str) -> None:
        host = urlparse(server).netloc

        def allow(url: str) -> bool:
            parsed = urlparse(url)
            return parsed.scheme in ("data", "blob") or parsed.netloc == host

        super().__init__(browser, allow, timeout_ms=90_000)

    def open(self, url: str, idle: bool = True) -> None:
        """Go to `url` and wait until Bokeh has rendered its views (and the network is idle)."""
        self.page.goto(url)
        self.page.wait_for_function(
            "() => window.Bokeh !== undefined && Bokeh.documents.length > 0"
            " && Bokeh.index !== undefined && Object.keys(Bokeh.index).length > 0", timeout=60000)
        if idle:
            self.page.wait_for_load_state("networkidle", timeout=60000)

    def check_clean(self) -> None:
        assert self.outside == [], f"requests to other hosts: {self.outside}"
        assert self.console_errors == [], self.console_errors
        assert self.page_errors == [], self.page_errors
        assert "Traceback" not in self.page.content()

    def url(self) -> str:
        """The address bar now (Playwright's page.url lags behind history.replaceState)."""
        return str(self.page.evaluate("() => window.location.href"))

    def source_data(self, column: str, key: str | None = None) -> Any:
        """Column `column` of the first ColumnDataSource in the page that has column `key`
        (default: `column` itself), as JSON; None when there is none."""
        return self.page.evaluate(
            """([column, key]) => {
                for (const doc of Bokeh.documents) {
                    for (const m of doc.all_models) {
                        const data = m.data;
                        if (data === undefined || data === null || typeof data !== 'object') continue;
                        const get = (name) => data instanceof Map ? data.get(name) : data[name];
                        if (get(key) !== undefined && get(column) !== undefined) return Array.from(get(column));
                    }
                }
                return null;
            }""", [column, key or column])


def _routes() -> list[str]:
    from lowprec.app.pages import routes

    return [r.lstrip("/") for r in routes()]


def test_every_page_renders_offline(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    for route in _routes():
        w.open(f"{server}/{route}", idle=False)
        w.page.get_by_text("lowprec").first.wait_for(timeout=30000)
        assert w.page.get_by_text("not available").count() == 0, route
        w.check_clean()
    w.page.wait_for_load_state("networkidle", timeout=60000)
    w.check_clean()
    w.page.close()


def test_bin_explorer_controls_change_the_plots(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer")
    before = w.source_data("log2_gap")
    assert before, "gap plot data not found"
    w.page.get_by_role("combobox").first.select_option("E5M2")
    wait_until(lambda: w.source_data("log2_gap") != before)
    # E5M2: subnormal plateau at 2^-16, 30 binades of 4 values
    assert min(w.source_data("log2_gap")) == -16
    # garbage in the value box: the message appears, the page keeps working
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.fill("not a number")
    box.press("Enter")
    w.page.get_by_text("Invalid input").first.wait_for(timeout=10000)
    points = w.source_data("interval")
    box.fill("0x1.8p3")
    box.press("Enter")
    wait_until(lambda: w.source_data("interval") != points)
    wait_until(lambda: w.page.get_by_text("Invalid input").count() == 0
               or not w.page.get_by_text("Invalid input").first.is_visible())
    assert 12.0 in w.source_data("x")
    wait_until(lambda: "value=0x1.8p3" in w.url() and "format=E5M2" in w.url())
    # flip the sign bit by clicking it: 12 = 0x4A in E5M2, so the code becomes 0xCA (-12)
    assert w.source_data("bits", "rel_error")[0] == "01001010"
    w.page.get_by_role("button", name="0", exact=True).first.click()
    wait_until(lambda: w.source_data("bits", "rel_error")[0] == "11001010")
    assert -12.0 in w.source_data("x", "interval")
    w.check_clean()
    w.page.close()


def test_url_reproduces_a_view(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer?format=BF16&value=-0x1.8p3&compare_format=FP16")
    wait_until(lambda: w.source_data("format") == ["BF16", "FP16"])
    # BF16 of -12 = -1.5 × 2^3: sign 1, exponent 3 + 127 = 130, mantissa .1000000 → 0xC140;
    # FP16: exponent 3 + 15 = 18, mantissa 0b1000000000 → 0xCA00
    assert w.source_data("code", "rel_error") == ["0xC140", "0xCA00"]
    w.check_clean()
    w.page.close()


def test_lesson_widget_works_and_refuses_a_bad_url_value(server: str, browser: Any) -> None:
    """A simulation widget inside a lesson page: an out-of-range URL value shows a message next to
    the controls, the session keeps working, a control change replots as the simulation says
    (most_recent forgets the spike one step later than max with history 16 would), and the URL
    follows with the widget-name prefix."""
    from lowprec.app.widgets import DelayedSpike

    expected = DelayedSpike(algo="most_recent").source_data["steps"]["delayed_amax_used"]
    w = Watched(browser, server)
    # the widget sits behind the prediction spike-clip: the refused value shows while it is locked
    w.open(f"{server}/lesson/when-the-scale-is-measured?DelayedSpike.spike=1e9")
    w.page.get_by_text("Invalid URL parameters").first.wait_for(timeout=20000)
    assert w.page.get_by_role("combobox").count() == 0 or not w.page.get_by_role("combobox").nth(1).is_visible()
    # a learner who answered it gets the controls
    w.page.evaluate("""localStorage.setItem('lowprec-progress',
        JSON.stringify({'when-the-scale-is-measured/spike-clip': 'answered'}))""")
    w.page.reload()
    w.page.get_by_text("Invalid URL parameters").first.wait_for(timeout=20000)
    before = w.source_data("delayed_amax_used")
    assert before and before != expected
    w.page.get_by_role("combobox").nth(1).select_option("most_recent")
    wait_until(lambda: w.source_data("delayed_amax_used") == expected)
    wait_until(lambda: "DelayedSpike.algo=most_recent" in w.url())
    w.check_clean()
    w.page.close()
