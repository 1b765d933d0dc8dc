"""RecipeLab: the recipe lab's widget (its parameters are `simulations.lab.workbench.LabConfig`'s).
Upload a `.npy`, `.npz`, `.safetensors` or PyTorch file (the size limit is stated above the drop
area) or pick a bundled sample; every float tensor runs through the chosen recipes and the table
shows each tensor × recipe's metrics (click a header to sort); for the selected tensor and recipe,
the histogram of magnitudes on a log2 axis with the format's grid and the flush and clip regions, and
the per-block error map. Every number comes from `simulations.lab` (`run_lab`); this module turns its
`LabView` into columns and words. Text that comes from the user (file and tensor names, messages
quoting them) is escaped before it reaches a Markdown pane; bad input shows a message and the last
good view stays.
"""

from __future__ import annotations

import math
from typing import Any

import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec.app import work
from lowprec.app.params import config_widget, widget_config
from lowprec.app.text import as_text
from lowprec.app.theme import wrap_row
from lowprec.app.plots.lab import (
    colored,
    detail_sources,
    error_bits_figure,
    error_map_figure,
    histogram_figure,
    results_table,
    table_data,
)
from lowprec.simulations.lab.readers import SUFFIXES
from lowprec.simulations.lab.samples import SAMPLES_DOC
from lowprec.simulations.lab.workbench import (
    UPLOAD_LIMIT_BYTES,
    LabConfig,
    LabInput,
    LabView,
    describe,
    run_lab,
    sample_input,
    tensor_names,
    upload_input,
)

__all__ = ["RecipeLab", "plain"]

def _number(v: Any, fmt: str) -> str:
    if v is None:
        return "–"
    f = float(v)
    return str(f) if not math.isfinite(f) else format(f, fmt)


#: the drop zone's label stays readable when the dropper is disabled (an exported page, where
#: nothing can be uploaded): filepond dims it to half opacity, below WCAG AA contrast (axe)
DROPPER_CSS = """
.filepond--root[data-disabled] .filepond--drop-label label { opacity: 1; }
.filepond--root[data-disabled] .filepond--drop-label { cursor: not-allowed; }
"""


@config_widget(LabConfig)
class RecipeLab(pn.viewable.Viewer):
    """Your own tensors (or a sample) through every recipe: table, histogram with grid, error map."""

    def config(self) -> LabConfig:
        cfg: LabConfig = widget_config(self)
        return cfg

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.error = ""
        self.upload: LabInput | None = None  # the uploaded file's tensors, while one is loaded
        self._alert = pn.pane.Alert("", alert_type="danger", visible=False, sizing_mode="stretch_width")
        self.view_data: LabView = run_lab(self._input(), self.config())  # the defaults must work
        self.sources = {"table": ColumnDataSource(colored(table_data(self.view_data.report)))}
        self.sources.update({k: ColumnDataSource(v) for k, v in self._detail_data(self.view_data).items()})
        limit = f"{UPLOAD_LIMIT_BYTES / 1e6:.0f} MB"
        self._limit_note = pn.pane.Markdown(
            f"**Upload a file of at most {limit}** ({', '.join(sorted(SUFFIXES))}; PyTorch files are read with "
            "`torch.load(weights_only=True)`, never unpickled), or pick a bundled sample below. Larger "
            "checkpoints: `lowprec analyze PATH` on your machine.", sizing_mode="stretch_width")
        self._dropper = pn.widgets.FileDropper(
            accepted_filetypes=sorted(SUFFIXES), max_file_size=limit.replace(" ", ""), multiple=False,
            sizing_mode="stretch_width", height=110, stylesheets=[DROPPER_CSS])
        self._dropper.param.watch(self._on_upload, "value")
        self._use_sample = pn.widgets.Button(label="Use the sample instead", visible=False)
        self._use_sample.on_click(self._on_use_sample)
        self._tensor_select = pn.widgets.Select(label="tensor in detail", options=tensor_names(self.view_data),
                                                value=self.view_data.tensor, width=260)
        self._tensor_select.param.watch(self._on_tensor_select, "value")
        self._summary = pn.pane.Markdown("", sizing_mode="stretch_width")
        self._detail_note = pn.pane.Markdown("", sizing_mode="stretch_width")
        hist, self._flush_box, self._clip_box = histogram_figure(self.sources)
        self._hist = pn.pane.Bokeh(hist, sizing_mode="stretch_width")
        self._map = pn.pane.Bokeh(error_map_figure(self.sources["map"]))
        self._table = pn.pane.Bokeh(results_table(self.sources["table"]), sizing_mode="stretch_width")
        self._scatter = pn.pane.Bokeh(error_bits_figure(self.sources["table"]), sizing_mode="stretch_width")
        self._show()
        self.param.watch(self._on_change, ["sample", "recipes", "tensor", "recipe"])

    # ---- inputs --------------------------------------------------------------------------------
    def _input(self) -> LabInput:
        return self.upload if self.upload is not None else sample_input(self.config().sample)

    def _on_upload(self, event: param.parameterized.Event) -> None:
        files = dict(event.new or {})
        if not files:
            return
        filename, data = list(files.items())[-1]
        self.load_file(filename, data)

    def load_file(self, filename: str, data: bytes) -> bool:
        """Analyse an uploaded file (what a drop does); on failure show why and keep the last view."""
        try:
            if isinstance(data, str):  # a text file arrives decoded
                data = data.encode("utf-8", "surrogateescape")
            inp = upload_input(filename, data)
        except (ValueError, TypeError) as exc:
            return self._fail(exc)
        previous, self.upload = self.upload, inp
        with param.parameterized.discard_events(self):
            self.tensor = ""
        if not self.update():
            self.upload = previous
            return False
        return True

    def _on_use_sample(self, _: Any) -> None:
        self.upload = None
        with param.parameterized.discard_events(self):
            self.tensor = ""
        self.update()

    def _on_tensor_select(self, event: param.parameterized.Event) -> None:
        if event.new and event.new != self.view_data.tensor:
            self.tensor = event.new

    def _on_change(self, *events: param.parameterized.Event) -> None:
        if any(e.name == "sample" for e in events) and self.upload is not None:
            self.upload = None  # picking a sample replaces the uploaded file
            with param.parameterized.discard_events(self):
                self.tensor = ""
        self.update()

    # ---- update ----------------------------------------------------------------------------------
    def update(self) -> bool:
        """Recompute and push the new columns (inside the document lock when served)."""
        with work.batched():
            try:
                view = run_lab(self._input(), self.config())
            except (ValueError, TypeError) as exc:
                return self._fail(exc)
            self.error = ""
            self._alert.visible = False
            self.view_data = view
            self.sources["table"].data = colored(table_data(view.report))
            for k, v in self._detail_data(view).items():
                self.sources[k].data = v
            self._show()
            return True

    def _fail(self, exc: BaseException) -> bool:
        self.error = f"Invalid input: {exc}"
        self._alert.object = as_text(self.error)
        self._alert.visible = True
        return False

    @staticmethod
    def _detail_data(view: LabView) -> dict[str, dict[str, list[Any]]]:
        if view.detail is None:
            return {"hist": {"left": [], "right": [], "input": [], "scaled": []}, "grid": {"x": []},
                    "map": {"x": [], "y": [], "rel_err": [], "log10": [], "color": []}}
        return detail_sources(view.detail)

    def _show(self) -> None:
        view = self.view_data
        names = tensor_names(view)
        self._tensor_select.options = names
        if view.tensor in names:
            self._tensor_select.value = view.tensor
        self._use_sample.visible = self.upload is not None
        facts = describe(view)
        lines = [f"**{as_text(facts['input'])}**: {facts['tensors']} tensor(s) × {facts['recipes']} recipe(s), "
                 f"{facts['skipped']} skipped."]
        for s in view.report.skipped:
            lines.append(f"- skipped {as_text(s.name or s.path)}: {as_text(s.reason)}")
        if facts["best"] is not None:
            lines.append(f"Lowest error over every tensor: **{as_text(facts['best'])}** (RMS relative error "
                         f"{_number(facts['best_rms_rel_err'], '.3e')} at {_number(facts['best_bits'], '.3g')} "
                         "bits per element). Click a column header to sort the table.")
        self._summary.object = "\n".join(lines)
        d = view.detail
        if d is None:
            self._detail_note.object = as_text(view.note)
            self._flush_box.right, self._clip_box.left = 0.0, 0.0
            self._flush_box.visible = self._clip_box.visible = False
            return
        assert view.detail_report is not None
        r = view.detail_report.results[0]
        st = view.detail_report.stats
        channels = ("" if st.channels is None else
                    f", {st.outlier_channels} outlier channel(s) of {st.channels} (RMS above 6 × the median)")
        stats_line = (f"Tensor **{as_text(view.tensor)}**: amax {_number(st.amax, '.4g')}, RMS {_number(st.rms, '.4g')}, "
                      f"excess kurtosis {_number(st.kurtosis, '.3g')}{channels}.\n\n")
        lo = d.bin_lo[0] if d.bin_lo else -1.0
        self._flush_box.right = d.flush_log2 if math.isfinite(d.flush_log2) else lo
        self._clip_box.left = d.clip_log2
        self._flush_box.visible = self._clip_box.visible = True
        self._detail_note.object = stats_line + (
            f"**{as_text(view.tensor)}** under **{as_text(d.recipe)}** ({as_text(d.element)} elements): RMS relative "
            f"error {_number(r.rms_rel_err, '.3e')}, SQNR {_number(r.sqnr_db, '.2f')} dB, "
            f"{_number((r.clipped_frac or 0) * 100, '.3f')}% clipped, "
            f"{_number((r.zero_frac or 0) * 100, '.3f')}% flushed to zero. In the histogram, magnitudes as the "
            f"cast sees them (|x| / decode scale) left of 2^{_number(d.flush_log2, '.2f')} become 0 (shaded "
            f"left), right of 2^{_number(d.clip_log2, '.2f')} saturate (shaded right); vertical lines are the "
            f"format's {'values' if d.grid_kind == 'values' else 'binades'}. The map shows the error of each "
            f"{d.tile[0]}×{d.tile[1]} tile.")

    def __panel__(self) -> pn.viewable.Viewable:
        # wrapping rows (not FlexBoxes, see theme.wrap_row): at phone width the controls and the
        # two plots wrap instead of pushing the page sideways
        controls = pn.Param(self.param, parameters=["sample", "recipes", "recipe"], show_name=False,
                            default_layout=pn.Row)  # rows in a page wrap (layout.ROW_WRAP_CSS)
        return pn.Column(
            "### Recipe lab", self._limit_note, self._dropper, pn.pane.Markdown(SAMPLES_DOC),
            wrap_row(controls, self._tensor_select, self._use_sample),
            self._alert, self._summary, self._table,
            self._scatter, self._detail_note, wrap_row(self._hist, self._map),
            sizing_mode="stretch_width")
