"""Conventions: the table of what each backend convention does at a format's edges.

Rows come from `formats.conventions_table` through `app.plots.conventions` (overflow, ±Inf, NaN,
and for E8M0 zero, negatives and the tie at 3; the E2M1 NaN row shows which conventions refuse
it), plus the cross-check reports under gpu/reports when present. Changing the format pushes new
columns into the existing sources.

Below it, the block-format section: where the `ocp`, `torchao` and `transformer_engine` block
conventions differ (`simulations.blocks.comparison.block_conventions_table`) and the lesson's worked
NVFP4 block (`simulations.examples_blocks`) element by element under each, with each one's error. It
does not depend on the format control.
"""

from __future__ import annotations

from typing import Any

import panel as pn
from bokeh.models import ColumnDataSource

from lowprec.app.params import config_widget
from lowprec.app.widgets._base import RecordWidget
from lowprec.formats import get_format
from lowprec.formats.conventions import ConventionsConfig
from lowprec.app.plots.conventions import (
    block_conventions_sources,
    block_conventions_table_figure,
    conventions_sources,
    conventions_table_figure,
    reports_table_figure,
    worked_block_figure,
    worked_block_sources,
    worked_block_summary,
    worked_block_table_figure,
)
from lowprec.simulations.blocks.comparison import block_conventions_table
from lowprec.simulations.examples_blocks import worked_block_comparison


@config_widget(ConventionsConfig)
class Conventions(RecordWidget):
    """What ml_dtypes, torch, Triton (NVIDIA) and the OCP reading do at a format's edges."""

    #: the alert keeps Panel's default sizing: a stretched one (even hidden) changes how the page
    #: lays out the wide tables below it (their columns lose the widths `app.plots.conventions` gives)
    alert_sizing_mode = None

    def _build(self) -> None:
        self.source_data = self._work(self._request(), None)
        self.sources = {k: ColumnDataSource(data=v) for k, v in self.source_data.items()}
        self._table = pn.pane.Bokeh(conventions_table_figure(self.sources["table"]))
        self._reports = pn.pane.Bokeh(reports_table_figure(self.sources["reports"]))
        self._reports_note = pn.pane.Markdown("")
        self._descr = pn.pane.Markdown("")
        worked = worked_block_comparison()
        self.block_data = {"probes": block_conventions_sources(block_conventions_table()),
                           "worked": worked_block_sources(worked)}
        self.block_sources = {k: ColumnDataSource(data=v) for k, v in self.block_data.items()}
        self._blocks = pn.Column(
            pn.pane.Markdown(
                "### Block formats: three implementations\n"
                "MX and NVFP4 blocks under the OCP reading (`ocp`, exact arithmetic), torchao 0.18 (`torchao`) "
                "and Transformer Engine 2.20 (`transformer_engine`). Each cell: the block's scale code and "
                "value, and what the probed elements are stored as (code) and decode to. MX rows use the "
                "rceil rule, the one all three have."),
            pn.pane.Bokeh(block_conventions_table_figure(self.block_sources["probes"])),
            pn.pane.Markdown(f"**Worked block** (the lesson's): sixteen values of at most "
                             f"{float(abs(worked.input).max()):.4g} next to a tensor amax of 2688, as NVFP4.\n\n"
                             + worked_block_summary(worked)),
            pn.pane.Bokeh(worked_block_figure(self.block_sources["worked"])),
            pn.pane.Bokeh(worked_block_table_figure(self.block_sources["worked"])),
            sizing_mode="stretch_width")
        self._show()

    # -- the protocol's steps (app.widgets._base) ---------------------------------------------------
    def _work(self, request: ConventionsConfig, generation: int | None) -> dict[str, dict[str, list[Any]]]:
        data: dict[str, dict[str, list[Any]]] = conventions_sources(request.format)
        return data

    def _paint(self, request: ConventionsConfig, outcome: dict[str, dict[str, list[Any]]]) -> None:
        self.source_data = outcome
        for k, v in outcome.items():
            self.sources[k].data = v
        self._show()

    def _show(self) -> None:
        f = get_format(self.config().format)
        self._descr.object = (f"**{f.name}**: {f.description}. Each cell: the code the convention "
                              f"writes and its value, or the error it raises.")
        n = len(self.source_data["reports"]["file"])
        self._reports_note.object = (
            f"{n} cross-check report(s) under gpu/reports cover {f.name} (values tried and "
            f"mismatches against the model, for this format)." if n else
            "No GPU cross-check reports for this format yet (gpu/reports/ is empty here).")
        self._reports.visible = bool(n)

    def __panel__(self) -> pn.viewable.Viewable:
        controls = self.record_controls(["format"], width=220)
        return pn.Column(pn.Row("### Backend conventions", controls), self._alert, self._descr,
                         self._table, self._reports_note, self._reports, self._blocks, sizing_mode="stretch_width")
