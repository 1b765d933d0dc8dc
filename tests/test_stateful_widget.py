"""The WhoseAmax widget and the stateful simulation's app faces, without a browser.

Every design builds and shows what the simulation computed: the verdict and the design's answers to
the checklist (`stateful.contract`) above the plots, the focus tensor in the amax figure's title,
the read matrix coloured grey exactly where a decode is paired, the clipped windows marked exactly
where the run clipped; a bad value is a message next to the controls with the last view kept;
`lowprec simulate stateful --html` writes one offline page.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from lowprec.app.plots.stateful import stateful_sources
from lowprec.app.plots.widget_heatmap import ZERO_COLOR
from lowprec.simulations import stateful


@pytest.mark.parametrize("variant", list(stateful.DESIGNS))
def test_every_design_builds_and_says_who_owns_what(variant: str) -> None:
    from lowprec.app.widgets import WhoseAmax

    w = WhoseAmax(variant=variant, steps=6, spike_step=2)
    r = w.result
    assert r.design.name == variant
    assert w.summary.startswith(f"**Verdict:** {r.verdict()}")
    for question, answer in stateful.contract(r.design, 4, 2, 4):
        assert question in w.summary and answer in w.summary
    assert stateful.ROLE_NAMES[r.design.focus] in w._amax.title.text.replace("\n", " ")
    assert w.source_data["steps"]["insertions"] == [int(v) for v in r.history_insertions()]


def test_sources_colour_paired_reads_grey_and_mark_clipped_windows() -> None:
    local = stateful.simulate_stateful(variant="dist-local-amax")
    data = stateful_sources(local)
    reads = data["reads"]
    matrix = local.read_matrix()
    assert reads["factor"] == matrix["factor"]
    for color, paired, factor in zip(reads["color"], matrix["paired"], matrix["factor"]):
        assert (color == ZERO_COLOR) == paired, (color, paired, factor)
    assert any(not p for p in matrix["paired"])
    windows = local.window_table("x0")
    clipped = [(s, k) for s, k, c in zip(windows["step"], windows["microbatch"], windows["clipped"]) if c]
    assert list(zip(data["clips"]["step"], data["clips"]["microbatch"])) == clipped
    owner = stateful_sources(stateful.simulate_stateful(variant="dist-owner-group"))
    assert set(owner["reads"]["color"]) == {ZERO_COLOR}
    cached = stateful_sources(stateful.simulate_stateful(variant="cache-paired"))
    assert all(math.isnan(v) for v, m in zip(cached["windows"]["sized_for"], cached["windows"]["microbatch"]) if m)


def test_a_bad_value_is_a_message_and_the_view_stays() -> None:
    from lowprec.app.widgets import WhoseAmax

    w = WhoseAmax()
    before = w.source_data
    w.param.update(spike_rank=7)  # outside the 4 ranks
    assert "Invalid input: spike_rank: 7 is outside the 4 ranks" in w.error
    assert w.source_data is before
    w.param.update(spike_rank=1)
    assert w.error == "" and w.result.config.spike_rank == 1


def test_simulate_html_writes_one_offline_page(tmp_path: Path) -> None:
    from lowprec.app import cli

    out = tmp_path / "s.html"
    assert cli.main(["simulate", "stateful", "--variant", "skip-rolls-stale", "--steps", "4", "--spike-step", "1",
                     "--quiet", "--html", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "Whose amax? skip-rolls-stale" in text and not re.search(r'<(script|link)[^>]+(src|href)="https?:', text)
    assert "What to look at" in text and "MS-AMP" in text  # the caption and the design's source
