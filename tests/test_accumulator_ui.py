"""The Accumulator widget and lesson 23 in the served app (Debian's headless Chromium; the exported
pages: tests/test_accumulator_export_ui.py): the widget draws what the study computes (columns read
from the page's Bokeh document against a direct run), a control change replots and the URL follows,
a URL may set any knob (one the record refuses, or one out of range, shows a message), a typed bad
instruction shows one "Invalid input" line and the page keeps working; the widget page and the
lesson pass the site checks (axe, phone width, prose width, the pager); nothing leaves 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest

from lowprec.app.pages import lesson_route
from lowprec.course.lessons import load_lessons
from tests.browser import check_site_page
from tests.test_ui import Watched, wait_until

pytestmark = pytest.mark.ui

LESSON = "lesson/what-the-tensor-core-keeps"
QUERY = "k_max=512&rows=8&cols=4"
SMALL = dict(k_max=512, rows=8, cols=4)


def expected(**changes: Any) -> dict[str, dict[str, list[Any]]]:
    from lowprec.app.plots.gemm import gemm_sources
    from lowprec.simulations.gemm.study import simulate_gemm

    data = gemm_sources(simulate_gemm(**{**SMALL, **changes}))
    return {k: {c: list(v) for c, v in cols.items()} for k, cols in data.items()}


def _lesson_urls(base: Any) -> tuple[list[str], int]:
    routes = [lesson_route(x) for x in load_lessons()]
    return [base(r) for r in routes], routes.index(LESSON)


def test_served_widget_replots_follows_the_url_and_refuses_bad_input(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/widget/Accumulator?{QUERY}")
    want = expected()
    wait_until(lambda: w.source_data("bit") == want["cells"]["bit"], timeout=180)
    assert w.source_data("label", "xs") == want["curves"]["label"]
    positive = expected(distribution="positive")
    w.page.get_by_role("combobox").nth(2).select_option("positive")  # arch, compare, distribution
    wait_until(lambda: w.source_data("err") == positive["points"]["err"], timeout=180)
    wait_until(lambda: "distribution=positive" in w.url())
    box = w.page.get_by_role("textbox").first  # the instruction
    box.fill("wgmma.bogus")
    box.press("Enter")
    w.page.get_by_text("Invalid input: instruction: 'wgmma.bogus' is not an instruction of hopper").first.wait_for(
        timeout=150000)
    assert w.source_data("err") == positive["points"]["err"]  # the last view stays
    box.fill("default")
    box.press("Enter")
    w.page.get_by_role("combobox").nth(2).select_option("normal")
    wait_until(lambda: w.source_data("err") == want["points"]["err"], timeout=180)
    problems = check_site_page(w.page, None, [])
    assert problems == [], problems
    w.check_clean()
    w.page.close()


def test_served_url_sets_knobs_and_refuses_a_bad_c(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/widget/Accumulator?{QUERY}&c=0.1")
    # a value of the right type passes the URL; the record refuses it like a typed one
    w.page.get_by_text("Invalid input: c: 0.1 is not exactly representable in FP32").first.wait_for(timeout=150000)
    w.page.close()
    w = Watched(browser, server)
    w.open(f"{server}/widget/Accumulator?{QUERY}&k_max=99999")
    w.page.get_by_text("Invalid URL parameters").first.wait_for(timeout=150000)
    w.check_clean()
    w.page.close()


def test_served_lesson_passes_the_site_checks(server: str, browser: Any) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/{LESSON}")
    urls, index = _lesson_urls(lambda r: f"{server}/{r}")
    problems = check_site_page(w.page, index, urls)
    assert problems == [], problems
    w.check_clean()
    w.page.close()
