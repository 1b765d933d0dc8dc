"""The Accumulator widget and lesson 23 exported (`lowprec export`) and opened from disk in Debian's
headless Chromium: the widget page keeps `distribution` live from the states computed in Python at
export (no arithmetic in the browser) and shows exactly what the widget computes for it; the lesson
checks an exercise offline; both pass the site checks (axe, phone width, prose width, the pager);
nothing but file:, data: and blob: URLs load."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lowprec.app.export import export, page_file
from lowprec.course.lessons import load_lessons
from lowprec.app.pages import lesson_route
from tests.browser import answer_every_prediction, check_site_page
from tests.test_export import Offline, wait_until

pytestmark = [pytest.mark.ui, pytest.mark.xdist_group("exported-site")]

LESSON = "lesson/what-the-tensor-core-keeps"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("acc") / "site"
    export(out, ["widget/Accumulator", LESSON])
    return out


def test_exported_widget_replays_precomputed_states(site: Path, browser: Any) -> None:  # noqa: F811
    from lowprec.app.widgets import Accumulator

    want = Accumulator(distribution="positive").source_data["points"]["err"]
    default = Accumulator().source_data["points"]["err"]
    w = Offline(browser)
    w.open(site / page_file("widget/Accumulator"))
    wait_until(lambda: w.column("err") is not None)
    assert w.column("err") == default
    assert w.page.get_by_text(re.compile(r"Offline page: only distribution works here")).count() > 0
    w.page.locator("select:not([disabled])").filter(has=w.page.locator("option[value='positive']")).select_option(
        "positive")
    wait_until(lambda: w.column("err") == want, timeout=60)
    problems = check_site_page(w.page, None, [])
    assert problems == [], problems
    w.check_clean()
    w.page.close()


def test_exported_lesson_checks_an_exercise_offline(site: Path, browser: Any) -> None:  # noqa: F811
    w = Offline(browser)
    w.open(site / page_file(LESSON))
    routes = [lesson_route(x) for x in load_lessons()]
    problems = check_site_page(w.page, routes.index(LESSON), [(site / page_file(r)).resolve().as_uri()
                                                              for r in routes])
    assert not [p for p in problems if "pager" not in p and "next" not in p and "prev" not in p], problems
    answer_every_prediction(w.page)
    ex = w.page.locator('[data-exercise="what-the-tensor-core-keeps/hopper-step"]')
    box = ex.get_by_label("Your answer")
    box.fill("4120")
    box.press("Enter")
    wait_until(lambda: ex.first.get_attribute("data-result") == "incorrect", timeout=30)
    box.fill("4112")
    box.press("Enter")
    wait_until(lambda: ex.first.get_attribute("data-result") == "correct", timeout=30)
    w.check_clean()
    w.page.close()
