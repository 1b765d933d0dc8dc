"""Browser tests: the served app in Debian's headless Chromium through Playwright.

One server (`lowprec serve --no-show`, the `server` fixture of tests/conftest.py) for the whole
module; every request the page makes is intercepted and any host other than the server fails the
test (the `browser` fixture's offline check, and `Watched`'s own: this server only). Every page is
opened and checked for console errors, page errors and traceback text; the bin explorer's controls are driven
and the plotted data (read from the page's Bokeh document) must change; garbage in the value box
must show the "Invalid" message and leave the page working; the URL query must reproduce a view.
"""

from __future__ import annotations

import os
import re
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.browser import (
    CHROMIUM,
    COMPLETE_JS,
    READY_JS,
    WatchedPage,
    answer_every_prediction,
    check_site_page,
)

pytestmark = [pytest.mark.ui, pytest.mark.xdist_group("served-site")]

ROOT = Path(__file__).resolve().parents[1]

import playwright.sync_api as playwright_api  # noqa: E402 - a test dependency (the test extra)

if not os.path.exists(CHROMIUM):
    pytest.skip(f"{CHROMIUM} is not installed", allow_module_level=True)


def wait_until(condition: Any, timeout: float = 20.0, interval: float = 0.1) -> Any:
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


class Watched(WatchedPage):
    """A page whose requests may go only to the server (or data:/blob: URLs), errors collected."""

    def __init__(self, browser: Any, server: str) -> None:
        host = urlparse(server).netloc

        def allow(url: str) -> bool:
            parsed = urlparse(url)
            return parsed.scheme in ("data", "blob") or parsed.netloc == host

        super().__init__(browser, allow, timeout_ms=90_000)

    def open(self, url: str, idle: bool = True) -> None:
        """Go to `url` and wait until Bokeh has rendered its views (and the network is idle), and
        until every view has finished rendering (`document.is_idle`: the browser then sends
        `document_ready`, without which Panel drops the plot updates a widget makes under hold())."""
        self.page.goto(url)
        self.page.wait_for_function(READY_JS, timeout=60000)
        if idle:
            self.page.wait_for_load_state("networkidle", timeout=60000)
            self.wait_document_ready()

    def wait_document_ready(self, timeout_ms: int = 60000) -> None:
        try:
            self.page.wait_for_function("() => Bokeh.documents.every((d) => d.is_idle)", timeout=timeout_ms)
        except playwright_api.TimeoutError:
            raise AssertionError(f"{self.page.url}: Bokeh views never all finished rendering (no document_ready, "
                                 f"so the server drops held updates): {self.unfinished_views()}") from None

    def unfinished_views(self) -> list[str]:
        """Type and id of each Bokeh view (outermost first) that has not finished rendering."""
        return list(self.page.evaluate("""() => {
            const out = [];
            const walk = (v) => {
                let kids = [];
                try { kids = [...v.children()]; } catch (e) {}
                const mine = typeof v.has_finished === 'function' && !v.has_finished()
                    && v.model.type !== undefined && !/Tool|CDSView|CanvasPanel/.test(v.model.type);
                if (mine) out.push(`${v.model.type} ${v.model.id}`);
                kids.forEach(walk);
            };
            for (const v of Bokeh.index) walk(v);
            return out.slice(0, 20);
        }"""))

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
    from lowprec.app.pages import route_names

    return route_names()


def _lessons() -> list[str]:
    from lowprec.app.pages import lesson_route
    from lowprec.course.lessons import load_lessons

    return [lesson_route(x) for x in load_lessons()]


ROUTES = _routes()
LESSONS = _lessons()
#: the pages the default run gives the full site checks (axe, phone width, prose, pager): the start
#: page, the bin explorer, the first and last lessons and one with a widget locked behind a
#: prediction; every page is checked by the `slow` run
SITE_ROUTES = ["", "widget/BinExplorer", LESSONS[0], "lesson/when-the-scale-is-measured", LESSONS[-1]]


@pytest.mark.slow
def test_every_page_renders_offline(server: str, browser: Any) -> None:
    """Every served page in the browser: no console error, nothing fetched from outside (about
    three minutes; the default run checks SITE_ROUTES in test_site_page, and every page is built
    server-side by tests/test_pages.py)."""
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
    w.page.get_by_role("button", name="sign bit 7: 0", exact=True).click()
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
    """A simulation widget inside a lesson page, locked behind a prediction: an out-of-range URL
    value shows a message at once, above the still-locked widget; once the prediction is answered
    the session keeps working, a control change replots as the simulation says (most_recent
    forgets the spike one step later than max with history 16 would), and the URL follows with the
    widget-name prefix."""
    from lowprec.app.widgets import DelayedSpike

    expected = DelayedSpike(algo="most_recent").source_data["steps"]["delayed_amax_used"]
    w = Watched(browser, server)
    # the widget sits behind the prediction spike-clip: the refused value shows while it is locked
    w.open(f"{server}/lesson/when-the-scale-is-measured?DelayedSpike.spike=1e9")
    message = w.page.get_by_text("Invalid URL parameters: DelayedSpike.spike=")
    wait_until(lambda: message.is_visible())
    algo = w.page.locator("select").filter(has=w.page.locator("option[value='most_recent']"))
    assert algo.count() == 1 and not algo.is_visible()  # the widget is still locked
    before = w.source_data("delayed_amax_used")
    assert before and before != expected
    answer_every_prediction(w.page)
    algo.wait_for(state="visible")
    algo.select_option("most_recent")
    # the served run is in a worker process at a lower CPU priority than the server (so the event loop
    # keeps answering): on an oversubscribed machine (two full suites at once, load 12 on two cores)
    # it took over 20 s — this checks the widget works, its speed is benchmarked elsewhere
    wait_until(lambda: w.source_data("delayed_amax_used") == expected, timeout=120.0)
    wait_until(lambda: "DelayedSpike.algo=most_recent" in w.url())
    w.check_clean()
    w.page.close()


def test_lesson_widgets_are_built_as_the_reader_reaches_them(server: str, browser: Any) -> None:
    """A served lesson goes out with its prose and one slot per widget: the slots are built in the
    background without any scrolling (the locked ones too); a widget built that way shows what its
    directive asks (460 in E4M3FN rounds to 448, as ml_dtypes rounds it), works, and follows the URL
    with its prefix like a widget built with the page."""
    import ml_dtypes
    import numpy as np

    expected = float(np.float32(460.0).astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    w = Watched(browser, server)
    w.open(f"{server}/lesson/range-vs-resolution", idle=False)
    assert w.page.evaluate("() => document.body.dataset.lazySlots") == "3"
    assert w.page.evaluate("() => window.lowprecLazy.total()") == 3
    w.page.wait_for_function(COMPLETE_JS, timeout=120_000, polling=100)
    answer_every_prediction(w.page)
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.scroll_into_view_if_needed()
    w.wait_document_ready()
    wait_until(lambda: expected in (w.source_data("x", "interval") or []))
    assert expected == 448.0
    box.fill("0x1.8p3")
    box.press("Enter")
    wait_until(lambda: 12.0 in (w.source_data("x", "interval") or []))
    wait_until(lambda: "BinExplorer.value=0x1.8p3" in w.url())
    w.check_clean()
    w.page.close()


def test_a_widget_page_arrives_with_its_widget_built_after_the_page_went_out(server: str, browser: Any) -> None:
    """A served widget page (and the start page) is sent with a slot for its widget, and the server
    builds the widget while the browser loads the page's scripts (`pages.prebuild`): the document
    the browser pulls already holds it, so no slot is ever drawn or requested, and the widget
    works (5.1 typed into E2M1 gives 6, as ml_dtypes rounds it)."""
    import ml_dtypes
    import numpy as np

    expected = float(np.float32(5.1).astype(ml_dtypes.float4_e2m1fn).astype(np.float32))
    for route in ("widget/BinExplorer", ""):
        w = Watched(browser, server)
        w.open(f"{server}/{route}")
        assert w.page.evaluate("() => document.body.dataset.lazySlots") == "0", route
        assert w.page.evaluate("() => window.lowprecLazy === undefined || window.lowprecLazy.total() === 0"), route
        assert w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3").count() == 1, route
        w.check_clean()
        w.page.close()
    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer?format=E2M1")  # a URL that sets a parameter: built with the page
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.fill("5.1")
    box.press("Enter")
    wait_until(lambda: expected in (w.source_data("x", "interval") or []))
    assert expected == 6.0
    w.check_clean()
    w.page.close()


def test_a_page_whose_lazy_widget_needs_page_scripts_loads_them(server: str, browser: Any) -> None:
    """RecipeLab's file dropper needs filepond, which Panel loads only for what a page holds when
    it is sent: the served page of a lesson with a lazy RecipeLab (and its widget page) asks for it
    (`WidgetEntry.page_scripts`), a lesson without one does not load it, and the widget, built
    after the page arrived, draws without a page error."""
    def html(route: str) -> str:
        with urllib.request.urlopen(f"{server}/{route}", timeout=60) as reply:
            return str(reply.read().decode("utf-8"))

    assert "filepond" in html("lesson/reading-published-recipes")
    assert "filepond" in html("widget/RecipeLab")
    assert "filepond" not in html("lesson/range-vs-resolution")
    w = Watched(browser, server)
    w.open(f"{server}/lesson/reading-published-recipes", idle=False)
    assert w.page.evaluate("() => document.body.dataset.lazySlots") == "2"
    w.page.wait_for_function(COMPLETE_JS, timeout=120_000, polling=100)
    w.page.locator(".filepond--root").first.wait_for(state="attached", timeout=30_000)  # filepond ran
    w.check_clean()
    w.page.close()


# ------------------------------------------------------------------------------------------------
# the site: every page at desktop and phone width, accessibility, navigation, themes, keyboard
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", [r if r in SITE_ROUTES else pytest.param(r, marks=pytest.mark.slow)
                                   for r in ROUTES], ids=lambda r: r or "index")
def test_site_page(server: str, browser: Any, route: str) -> None:
    """axe-core: 0 serious/critical; no sideways scroll at 390 px; a lesson's prose ≤ 800 px wide at
    1400 px and its previous/next links follow the course order; no console or page error."""
    w = Watched(browser, server)
    w.open(f"{server}/{route}", idle=False)
    w.page.wait_for_timeout(1000)  # the site script names controls and plots after the first render
    index = LESSONS.index(route) if route in LESSONS else None
    problems = check_site_page(w.page, index, [f"{server}/{r}" for r in LESSONS])
    assert problems == [], problems
    w.check_clean()
    w.page.close()


def test_table_updates_after_a_format_change(server: str, browser: Any) -> None:
    """The visible comparison table follows the data (BokehJS redraws a DataTable only when its row
    count changes; the site makes every data change redraw it)."""
    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer")
    wait_until(lambda: any(r.startswith("E4M3FN|0x45|") for r in w.table_rows()))
    w.page.get_by_role("combobox").first.select_option("E2M1")
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.fill("5.1")
    box.press("Enter")
    # 5.1 in E2M1 (values 4, 6 around it; midpoint 5 is below 5.1): 6 = 0b0111; E5M2: 5 = 0x45
    wait_until(lambda: any(r.startswith("E2M1|0x7|0111|6|") for r in w.table_rows()))
    assert any(r.startswith("E5M2|0x45|") for r in w.table_rows())
    assert not any(r.startswith("E4M3FN|") for r in w.table_rows())
    w.check_clean()
    w.page.close()


def test_theme_toggle_recolours_plots_and_is_remembered(server: str, browser: Any) -> None:
    from lowprec.app.theme import BOKEH_ROLES

    light, dark = BOKEH_ROLES["plot_bg"]
    w = Watched(browser, server)
    w.open(f"{server}/widget/DelayedSpike")
    backgrounds = ("() => [...Bokeh.documents[0].all_models].filter(m => m.constructor.__name__ === 'Figure')"
                   ".map(m => m.background_fill_color)")
    wait_until(lambda: w.page.evaluate(backgrounds) and set(w.page.evaluate(backgrounds)) == {light})
    w.page.get_by_role("button", name="Dark theme").click()
    wait_until(lambda: set(w.page.evaluate(backgrounds)) == {dark})
    assert w.page.evaluate("() => document.documentElement.dataset.theme") == "dark"
    # the button now names the theme a click gives (issue 33: its text never changed)
    assert w.page.get_by_role("button", name="Light theme").count() == 1
    assert w.page.get_by_role("button", name="Dark theme").count() == 0
    w.open(f"{server}/widget/DelayedSpike")  # remembered across pages and reloads
    wait_until(lambda: set(w.page.evaluate(backgrounds)) == {dark})
    w.page.get_by_role("button", name="Light theme").click()
    wait_until(lambda: set(w.page.evaluate(backgrounds)) == {light})
    assert w.page.get_by_role("button", name="Dark theme").count() == 1
    w.check_clean()
    w.page.close()


#: a bit toggle's text: its label, which names the bit ("sign bit 7:"); the 0/1 is drawn by CSS
BIT_LABEL = re.compile(r"(sign|exponent|mantissa) bit \d+:")
DEEP_ACTIVE = """() => { let a = document.activeElement;
    while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement;
    if (!a) return null;
    const cs = getComputedStyle(a);
    const ring = (cs.outlineStyle !== 'none' && parseFloat(cs.outlineWidth) > 0) || cs.boxShadow !== 'none';
    return {tag: a.tagName.toLowerCase(), type: a.type || '', text: (a.textContent || a.value || '').trim().slice(0, 20),
            ring: ring, aria: a.getAttribute('aria-label') || ''}; }"""


def test_keyboard_reaches_the_controls_with_a_visible_focus(server: str, browser: Any) -> None:
    """Tab from the top of the bin explorer page: the skip link, the course map, then the widget's
    controls and bit toggles; every stop shows a focus ring; the value box takes a typed value and
    Enter; a toggle flips with the space bar."""
    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer")
    stops = []
    for _ in range(150):  # the frame's links (course map, crumbs, lessons using the widget) come first
        w.page.keyboard.press("Tab")
        info = w.page.evaluate(DEEP_ACTIVE)
        if info is None:
            continue
        stops.append(info)
        if info["tag"] == "button" and BIT_LABEL.fullmatch(info["text"]):
            break
    tags = [(s["tag"], s["type"]) for s in stops]
    assert stops[0]["tag"] == "a" and stops[0]["text"] == "Skip to content"
    assert ("input", "text") in tags and ("select", "select-one") in tags
    assert stops[-1]["tag"] == "button" and BIT_LABEL.fullmatch(stops[-1]["text"]), tags
    # the toggles' names carry the field, the weight and the bit (drawn from the pressed state)
    names = [w.page.get_by_role("button", name=f"{field} bit {k}: {bit}", exact=True).count()
             for k, (field, bit) in enumerate(reversed(list(zip(
                 ["sign"] + ["exponent"] * 4 + ["mantissa"] * 3, "01000101"))))]
    assert names == [1] * 8, names
    unringed = [s for s in stops if not s["ring"]]
    assert unringed == [], unringed
    before = w.source_data("bits", "rel_error")[0]  # the summary row: E4M3FN code of 3.3, 01000101
    w.page.keyboard.press("Space")  # flip the sign bit: -3.25, 11000101
    wait_until(lambda: w.source_data("bits", "rel_error")[0] == "1" + before[1:])
    wait_until(lambda: (w.page.evaluate(DEEP_ACTIVE) or {}).get("tag") == "button")  # focus stays on the bit
    w.page.keyboard.press("Space")  # and back
    wait_until(lambda: w.source_data("bits", "rel_error")[0] == before)
    w.check_clean()
    w.page.close()


def test_progress_marks_follow_local_storage(server: str, browser: Any) -> None:
    """The course map's marks are computed in the page from localStorage['lowprec-progress'] and
    refresh on the 'lowprec-progress' event the exercise components dispatch."""
    w = Watched(browser, server)
    w.open(f"{server}/")
    w.page.evaluate("""() => { const li = document.querySelector('.lp-course li');
        li.dataset.exercises = 'x/a x/b'; li.dataset.predictions = 'x/p'; }""")
    mark = w.page.locator(".lp-course li").first.locator(".lp-mark")
    w.page.evaluate("""() => { localStorage.setItem('lowprec-progress', JSON.stringify({'x/a': 'correct', 'x/p': 'answered'}));
        window.dispatchEvent(new CustomEvent('lowprec-progress')); }""")
    wait_until(lambda: mark.get_attribute("data-mark") == "part")
    assert mark.text_content() == "◐" and "2 of 3" in (mark.get_attribute("aria-label") or "")
    w.page.evaluate("""() => { localStorage.setItem('lowprec-progress', JSON.stringify({'x/a': 'correct', 'x/b': 'correct'}));
        window.dispatchEvent(new CustomEvent('lowprec-progress')); }""")
    wait_until(lambda: mark.get_attribute("data-mark") == "done")
    assert mark.text_content() == "✓"
    w.page.evaluate("() => localStorage.removeItem('lowprec-progress')")
    w.check_clean()
    w.page.close()


def test_anchor_links_into_shadow_dom_jump(server: str, browser: Any) -> None:
    """A link to a heading inside Panel's shadow DOM scrolls it into view (glossary#term)."""
    w = Watched(browser, server)
    w.page.set_viewport_size({"width": 1400, "height": 500})
    w.open(f"{server}/glossary#decode-scale", idle=False)
    top = ("() => { const f = (root) => { const e = root.getElementById ? root.getElementById('decode-scale') : null;"
           " if (e) return e; for (const el of root.querySelectorAll('*')) if (el.shadowRoot) { const r = f(el.shadowRoot);"
           " if (r) return r; } return null; }; const e = f(document); return e ? e.getBoundingClientRect().top : null; }")
    wait_until(lambda: w.page.evaluate(top) is not None and 0 <= w.page.evaluate(top) < 200)
    w.check_clean()
    w.page.close()


def test_bin_explorer_lists_the_registry_and_hands_over_p3109(server: str, browser: Any) -> None:
    """Issue 28: the format menu is the registry (ml_dtypes 0.7's other types and the P3109 family
    among them); a P3109 format under the default ml_dtypes convention, which has no P3109 type, is
    cast by the p3109 convention and the page's note says so. 60000 overflows P3109 K8P3 signed extended
    (max 49152) to +Inf, code 0x7F (the formats model computes the expected code)."""
    from lowprec import formats as F

    w = Watched(browser, server)
    w.open(f"{server}/widget/BinExplorer")
    menu = w.page.get_by_role("combobox").first
    options = menu.locator("option").all_inner_texts()
    for name in ("E3M4", "E4M3IEEE", "E4M3B11FNUZ", "E5M3FNU", "p3109_k8p3se", "p3109_k8p8uf"):
        assert name in options, name
    menu.select_option("p3109_k8p3se")
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.fill("60000")
    box.press("Enter")
    want = int(F.encode([60000.0], "p3109_k8p3se", F.policy_for("p3109", "p3109_k8p3se"))[0])
    wait_until(lambda: any(r.startswith(f"p3109_k8p3se|0x{want:02X}|") for r in w.table_rows()))
    w.page.get_by_text("ml_dtypes provides no p3109_k8p3se cast").first.wait_for(timeout=10000)
    w.check_clean()
    w.page.close()


#: JavaScript: the table cells (through every shadow root) whose text does not fit their box
CUT_CELLS = """() => { const cut = []; const walk = (root) => { for (const el of root.querySelectorAll('*')) {
    if (el.classList && el.classList.contains('slick-cell') && el.textContent.trim()
        && el.scrollWidth > el.clientWidth + 1) cut.push(el.textContent.trim());
    if (el.shadowRoot) walk(el.shadowRoot); } }; walk(document); return cut; }"""


@pytest.mark.parametrize("width", [1400, 390])
def test_bin_explorer_says_invalid_input_next_to_the_box_and_marks_the_stale_view(
        server: str, browser: Any, width: int) -> None:
    """Issue 33, F7: the message sits under the value box, on screen, and the bits, numbers and
    plots say they are the last valid value's until the input is valid again."""
    w = Watched(browser, server)
    w.page.set_viewport_size({"width": width, "height": 900})
    w.open(f"{server}/widget/BinExplorer?value=465")
    box = w.page.get_by_placeholder("3.3, 1e-3, -0, inf, nan, 0x1.8p3")
    box.scroll_into_view_if_needed()
    box.fill("12.5.7")
    box.press("Enter")
    alert = w.page.get_by_text("Invalid input:").first
    alert.wait_for(timeout=30000)
    stale = w.page.locator("p", has_text="Not updated:").first
    stale.wait_for(timeout=30000)
    a, b = alert.bounding_box(), box.bounding_box()
    assert a is not None and b is not None
    assert 0 <= a["y"] - b["y"] <= 160, (a, b)  # right under the box it is about
    assert a["y"] + a["height"] <= 900, a  # on screen without scrolling
    assert "465" in stale.inner_text()
    box.fill("3.5")
    box.press("Enter")
    wait_until(lambda: not stale.is_visible() and not alert.is_visible(), timeout=30)
    w.check_clean()
    w.page.close()


@pytest.mark.parametrize("route", ["widget/BinExplorer", "widget/RecipeLab"])
def test_tables_keep_whole_cells_at_phone_width(server: str, browser: Any, route: str) -> None:
    """Issue 33, F8: at 390 px the tables scroll sideways inside their box instead of cutting cells
    ("0100010", "subnorm", "mlp.u"); the page itself does not scroll sideways; the lab's errors
    carry no sign."""
    from tests.browser import sideways_px

    w = Watched(browser, server)
    w.page.set_viewport_size({"width": 390, "height": 900})
    w.open(f"{server}/{route}")
    wait_until(lambda: len(w.table_rows()) > 2, timeout=60)
    assert w.page.evaluate(CUT_CELLS) == []
    assert sideways_px(w.page) == 0
    if route == "widget/RecipeLab":
        cells = [row.split("|") for row in w.table_rows()]
        assert all(not c.startswith("+") for row in cells for c in row), cells[:3]
        assert any(re.fullmatch(r"\d\.\d{3}e-\d", c) for row in cells for c in row), cells[:3]
    w.check_clean()
    w.page.close()
