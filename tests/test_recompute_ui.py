"""The RecomputeDivergence page in the browser (served app, Debian's headless Chromium).

Its controls are generated from `RecomputeConfig`: the variant control replots as the simulation
says (commits per step from a direct run), the URL follows, a URL may set any knob of the record
(one the widget did not offer before it, `history`, included), and an out-of-range URL value
shows a message while the page keeps working. No request leaves localhost.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.test_ui import Watched, wait_until

pytestmark = pytest.mark.ui


def test_recompute_variant_control_replots_and_url_follows(server: str, browser: Any) -> None:
    from lowprec.simulations.recompute import run_recompute

    expected = [int(c) for c in run_recompute("recompute-mutates").state_commits]
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecomputeDivergence")
    wait_until(lambda: w.source_data("state_commits") == [4] * 20)
    assert set(w.source_data("status")) == {"bitwise identical"}
    w.page.get_by_role("combobox").first.select_option("recompute-mutates")
    wait_until(lambda: w.source_data("state_commits") == expected, timeout=60)
    assert "differs" in w.source_data("status")
    wait_until(lambda: "variant=recompute-mutates" in w.url())
    w.check_clean()
    w.page.close()


def test_recompute_url_sets_any_knob_and_refuses_out_of_range(server: str, browser: Any) -> None:
    from lowprec.app.plots.recompute import recompute_sources
    from lowprec.simulations.recompute import run_recompute

    short = recompute_sources(run_recompute("fixed", steps=12, history=2))["scales"]
    default = recompute_sources(run_recompute("fixed", steps=12))["scales"]
    assert short["encode_scale_forward"] != default["encode_scale_forward"]  # the knob matters
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecomputeDivergence?steps=12&history=2")
    wait_until(lambda: w.source_data("encode_scale_forward") == short["encode_scale_forward"], timeout=60)
    w.page.close()
    w = Watched(browser, server)
    w.open(f"{server}/widget/RecomputeDivergence?layers=100")
    w.page.get_by_text("Invalid URL parameters").first.wait_for(timeout=30000)
    wait_until(lambda: w.source_data("state_commits") == [4] * 20)  # the defaults stay on screen
    w.check_clean()
    w.page.close()
