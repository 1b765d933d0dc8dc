"""WhoseAmax and lesson 26 exported (`lowprec export`) and opened from disk with every non-file
request aborted (Debian's headless Chromium): both pages pass the site checks (axe-core: no serious or
critical violation, no sideways scroll at 390 px, prose width, the course's links) with no console
error; the widget's live control replays the columns the widget computes for another design; the
lesson keeps one live variant control per widget, each with its precomputed states.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser import COMPLETE_JS, answer_every_prediction, check_site_page
from tests.test_export import LESSONS, Offline, wait_until

pytestmark = [pytest.mark.ui, pytest.mark.xdist_group("exported-site")]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lowprec.app.export import export

    out = tmp_path_factory.mktemp("stateful-site") / "site"
    pages = export(out, ["widget/WhoseAmax", "lesson/whose-amax"])
    lesson = next(p for p in pages if p.route == "lesson/whose-amax")
    assert set(lesson.states) == {"WhoseAmax.variant"} | {f"WhoseAmax{i}.variant" for i in range(2, 6)}
    return out


# the exported lesson's full site checks run with the slow set (as test_export's every-page check)
@pytest.mark.parametrize("route", ["widget/WhoseAmax", pytest.param("lesson/whose-amax", marks=pytest.mark.slow)])
def test_exported_pages_pass_the_site_checks_offline(site: Path, browser: Any, route: str) -> None:  # noqa: F811
    from lowprec.app.export import page_file

    if True:
        w = Offline(browser)
        w.open(site / page_file(route))
        index = LESSONS.index(route) if route in LESSONS else None
        problems = check_site_page(w.page, index, [(site / page_file(r)).resolve().as_uri() for r in LESSONS])
        # a partial export links only to the pages it wrote (test_export checks the pager): the
        # neighbours of this lesson were not written, so its pager has no prev/next links
        assert [p for p in problems if not p.startswith(("next link", "previous link"))] == [], (route, problems)
        w.check_clean()
        w.page.close()


def test_exported_widget_replays_another_design(site: Path, browser: Any) -> None:  # noqa: F811
    from lowprec.app.widgets import WhoseAmax

    want = WhoseAmax(variant="cache-live-scale").source_data
    w = Offline(browser)
    w.open(site / "widget" / "WhoseAmax.html")
    before = w.column("insertions")
    assert before and before != want["steps"]["insertions"]
    w.page.locator("select:not([disabled])").first.select_option("cache-live-scale")
    wait_until(lambda: w.column("insertions") == want["steps"]["insertions"], timeout=30)
    assert w.column("unpaired_pct") == want["steps"]["unpaired_pct"]
    w.page.get_by_text("Offline page: only").first.wait_for(timeout=30000)
    w.check_clean()
    w.page.close()


def test_exported_lesson_draws_its_widgets_with_a_live_control_each(site: Path, browser: Any) -> None:  # noqa: F811
    from lowprec.app.export import page_file

    html = (site / page_file("lesson/whose-amax")).read_text(encoding="utf-8")
    config = json.loads(re.search(r'<script type="application/json" id="lp-offline">(.*?)</script>', html, re.S).group(1))
    assert len(config["states"]) == 5  # one live variant control per WhoseAmax
    assert re.search(r'data-lazy-slots="(\d+)"', html).group(1) == "5"
    w = Offline(browser)
    w.open(site / page_file("lesson/whose-amax"))
    w.page.wait_for_function(COMPLETE_JS, timeout=180_000, polling=100)
    answer_every_prediction(w.page)
    assert w.page.locator("select:not([disabled])").count() >= 5
    w.check_clean()
    w.page.close()
