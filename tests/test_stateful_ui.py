"""The WhoseAmax widget and lesson 26 in the served app (Debian's headless Chromium); exported, offline:
tests/test_stateful_export.py.

The variant control replots as the simulation computes (the read matrix and the state transitions of
a direct run), the URL follows, a URL may set any knob of the record, an out-of-range value shows a
message while the page keeps working; the widget page and the lesson pass the site checks (axe-core:
no serious or critical violation, no sideways scroll at 390 px, prose width, the course's links). No
request leaves localhost.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import check_site_page
from tests.test_ui import LESSONS, Watched, wait_until

pytestmark = pytest.mark.ui


def _expected(**knobs: Any) -> dict[str, dict[str, list[Any]]]:
    from lowprec.app.plots.stateful import stateful_sources
    from lowprec.simulations.stateful import simulate_stateful

    return stateful_sources(simulate_stateful(**knobs))


def test_variant_control_replots_and_url_follows(server: str, browser: Any) -> None:
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


def test_url_sets_any_knob_and_refuses_out_of_range(server: str, browser: Any) -> None:
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


# the lesson's full site checks run with the slow set, as every lesson's but test_ui's SITE_ROUTES do
@pytest.mark.parametrize("route", ["widget/WhoseAmax", pytest.param("lesson/whose-amax", marks=pytest.mark.slow)])
def test_served_pages_pass_the_site_checks(server: str, browser: Any, route: str) -> None:
    w = Watched(browser, server)
    w.open(f"{server}/{route}", idle=False)
    w.page.wait_for_timeout(1000)
    index = LESSONS.index(route) if route in LESSONS else None
    problems = check_site_page(w.page, index, [f"{server}/{r}" for r in LESSONS])
    assert problems == [], problems
    w.check_clean()
    w.page.close()
