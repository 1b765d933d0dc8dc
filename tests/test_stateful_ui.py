"""The WhoseAmax widget and lesson 26 in the browser (Debian's headless Chromium), served and exported.

Served: the variant control replots as the simulation computes (the read matrix and the state
transitions of a direct run), the URL follows, a URL may set any knob of the record, an out-of-range
value shows a message while the page keeps working; the widget page and the lesson pass the site
checks (axe-core: no serious or critical violation, no sideways scroll at 390 px, prose width, the
course's links). Exported: both pages open from disk with every non-file request aborted, pass the
same checks, and the widget's live control replays the columns the widget computes for another
design; the lesson keeps one live control per widget.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.browser import COMPLETE_JS, answer_every_prediction, check_site_page
from tests.test_ui import LESSONS, Watched, browser, server, wait_until  # noqa: F401  (fixtures)

pytestmark = pytest.mark.ui


def _expected(**knobs: Any) -> dict[str, dict[str, list[Any]]]:
    from lowprec.app.plots.stateful import stateful_sources
    from lowprec.simulations.stateful import simulate_stateful

    return stateful_sources(simulate_stateful(**knobs))


def test_variant_control_replots_and_url_follows(server: str, browser: Any) -> None:  # noqa: F811
    default, local = _expected(), _expected(variant="dist-local-amax")
    assert default["reads"]["label"] != local["reads"]["label"]
    w = Watched(browser, server)
    w.open(f"{server}/widget/WhoseAmax")
    wait_until(lambda: w.source_data("insertions") == default["steps"]["insertions"], timeout=60)
    w.page.get_by_role("combobox").first.select_option("dist-local-amax")
    wait_until(lambda: w.source_data("label") == local["reads"]["label"], timeout=60)
    assert w.source_data("factor") == local["reads"]["factor"]
    wait_until(lambda: "variant=dist-local-amax" in w.url())
    w.page.get_by_text("each rank alone").first.wait_for(timeout=30000)  # the contract table follows
    w.check_clean()
    w.page.close()


def test_url_sets_any_knob_and_refuses_out_of_range(server: str, browser: Any) -> None:  # noqa: F811
    want = _expected(variant="skip-rolls-zero", history=4)["steps"]["changes"]
    w = Watched(browser, server)
    w.open(f"{server}/widget/WhoseAmax?variant=skip-rolls-zero&history=4")
    wait_until(lambda: w.source_data("changes") == want, timeout=60)
    w.page.close()
    w = Watched(browser, server)
    w.open(f"{server}/widget/WhoseAmax?ranks=100")
    w.page.get_by_text("Invalid URL parameters").first.wait_for(timeout=30000)
    wait_until(lambda: w.source_data("insertions") == _expected()["steps"]["insertions"], timeout=60)
    w.check_clean()
    w.page.close()


@pytest.mark.parametrize("route", ["widget/WhoseAmax", "lesson/whose-amax"])
def test_served_pages_pass_the_site_checks(server: str, browser: Any, route: str) -> None:  # noqa: F811
    w = Watched(browser, server)
    w.open(f"{server}/{route}", idle=False)
    w.page.wait_for_timeout(1000)
    index = LESSONS.index(route) if route in LESSONS else None
    problems = check_site_page(w.page, index, [f"{server}/{r}" for r in LESSONS])
    assert problems == [], problems
    w.check_clean()
    w.page.close()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from lowprec.app.export import export

    out = tmp_path_factory.mktemp("stateful-site") / "site"
    pages = export(out, ["widget/WhoseAmax", "lesson/whose-amax"])
    lesson = next(p for p in pages if p.route == "lesson/whose-amax")
    assert set(lesson.states) == {"WhoseAmax.variant"} | {f"WhoseAmax{i}.variant" for i in range(2, 6)}
    return out


def test_exported_pages_pass_the_site_checks_offline(site: Path, browser: Any) -> None:  # noqa: F811
    from lowprec.app.export import page_file
    from tests.test_export import Offline

    for route in ("widget/WhoseAmax", "lesson/whose-amax"):
        w = Offline(browser)
        w.open(site / page_file(route))
        index = LESSONS.index(route) if route in LESSONS else None
        problems = check_site_page(w.page, index, [(site / page_file(r)).resolve().as_uri() for r in LESSONS])
        assert problems == [], (route, problems)
        w.check_clean()
        w.page.close()


def test_exported_widget_replays_another_design(site: Path, browser: Any) -> None:  # noqa: F811
    from lowprec.app.widgets import WhoseAmax
    from tests.test_export import Offline

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
    from tests.test_export import Offline

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
