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
import param
from bokeh.models import ColumnDataSource

from lowprec.app import work
from lowprec.app.params import config_widget, widget_config
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
from lowprec.app.text import set_alert


@config_widget(ConventionsConfig)
class Conventions(pn.viewable.Viewer):
    """What ml_dtypes, torch, Triton (NVIDIA) and the OCP reading do at a format's edges."""

    def config(self) -> ConventionsConfig:
        """The current controls as the record."""
        cfg: ConventionsConfig = widget_config(self)
        return cfg

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.error = ""
        self.source_data = conventions_sources(self.config().format)
        self.sources = {k: ColumnDataSource(data=v) for k, v in self.source_data.items()}
        self._alert = pn.pane.Alert("", alert_type="danger", visible=False)
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
        self.param.watch(self._on_change, ["format"])

    def _on_change(self, *events: param.parameterized.Event) -> None:
        self.update()

    def update(self) -> bool:
        """Bokeh model changes go out as one patch (`work.batched`: held once the page has loaded)."""
        with work.batched():
            return self._update()

    def _update(self) -> bool:
        """Recompute; on failure show the message and keep the last table."""
        try:
            data = conventions_sources(self.config().format)
        except (ValueError, TypeError) as exc:
            self.error = f"Invalid input: {exc}"
            set_alert(self._alert, self.error)
            return False
        self.error = ""
        self._alert.visible = False
        self.source_data = data
        for k, v in data.items():
            self.sources[k].data = v
        self._show()
        return True

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
        controls = pn.Param(self.param, parameters=["format"], show_name=False, width=220)
        return pn.Column(pn.Row("### Backend conventions", controls), self._alert, self._descr,
                         self._table, self._reports_note, self._reports, self._blocks, sizing_mode="stretch_width")
