"""ScaleGrouping: the scale-grouping widget, the face of `simulations.studies.grouping` (its parameters are
`GroupingConfig`'s). The default study, `outlier`, casts a standard-normal tensor with one outlier to
the element format under each granularity of the list (`encode_scale = F / amax_group` stored as
float32, `decode_scale = 1 / encode_scale`, round-to-nearest-even, saturating); a row of buttons picks
the granularity whose heatmaps are shown: the decode scale of every element and its relative error
(at most 64 × 128 cells, a window around the outlier for larger tensors), and a chart compares every
granularity (the error of the outlier's neighbours — the other elements of its group, whose resolution
the outlier sets — against the median of the other groups). The summary gives bits per element
(element bits plus the FP32 scales amortised) and the errors of the shown granularity. The other
studies (`scale_choice`, `transpose`, `hadamard`) show their own chart. The buttons choose what is
drawn, not what is computed: every granularity of the list is in the result.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import panel as pn
from bokeh.models import ColumnDataSource

from lowprec.app.plots.grouping import study_columns, study_figure_of
from lowprec.app.plots.style import power_of_two_text
from lowprec.app.plots.widget_grouping import (
    GROUPING_CELL_COLUMNS,
    grouping_colors,
    grouping_figures,
    set_colorbar_ranges,
)
from lowprec.app.widgets._sim_base import SimulationWidget, binary_columns, simulation_widget
from lowprec.simulations.studies import grouping
from lowprec.simulations.studies.grouping import GroupingResult, OutlierEntry, OutlierStudy

#: the largest heatmap drawn (rows, columns); a larger tensor shows a window around the outlier
MAX_CELLS = (64, 128)


def _window(size: int, limit: int, centre: int) -> slice:
    """`limit` consecutive indices of `size` (all when fewer), centred on `centre` where possible."""
    n = min(size, limit)
    start = min(max(centre - n // 2, 0), size - n)
    return slice(start, start + n)


@simulation_widget(grouping.SIMULATION)
class ScaleGrouping(SimulationWidget):
    """One outlier in a tensor, scaled per tensor / row / column / block: scales and error."""

    title = "Scale grouping"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self._view.param.watch(self._on_view, "value")

    @property
    def _view(self) -> pn.widgets.RadioButtonGroup:
        """The granularity buttons (a choice of what to draw, not a simulation parameter)."""
        view = self.__dict__.get("_view_buttons")
        if view is None:
            view = pn.widgets.RadioButtonGroup(options=[], sizing_mode="stretch_width")
            self.__dict__["_view_buttons"] = view
        return view

    # -- what is shown ----------------------------------------------------------------------------
    def shown_entry(self, result: GroupingResult | None = None) -> OutlierEntry | None:
        """The outlier-study entry whose heatmaps are drawn (None for the other studies)."""
        study = (result or self.result).study
        if not isinstance(study, OutlierStudy):
            return None
        by_label = {e.granularity: e for e in study.entries}
        return by_label.get(self._view.value, study.entries[0])

    def _on_view(self, *events: Any) -> None:
        if self.__dict__.get("_setting_view"):
            return  # the buttons follow a new result; that update pushes the data
        if self.result is not None and isinstance(self.result.study, OutlierStudy):
            data = self._source_data(self.result)
            self.show_result(self.result, data, binary_columns(data))

    # -- columns ----------------------------------------------------------------------------------
    def _cells(self, study: OutlierStudy, entry: OutlierEntry) -> dict[str, list[Any]]:
        r0, c0 = study.outlier_index
        rows = _window(study.shape[0], MAX_CELLS[0], r0)
        cols = _window(study.shape[1], MAX_CELLS[1], c0)
        x = study.x.astype(np.float64)[rows, cols]
        x_hat = entry.dequantized[rows, cols]
        dec = entry.scaled.element_decode_scales()[rows, cols].reshape(-1)
        groups = entry.element_groups()[rows, cols].reshape(-1)
        rel = study.element_rel_error(entry)[rows, cols].reshape(-1)
        r_idx, c_idx = np.meshgrid(np.arange(rows.start, rows.stop), np.arange(cols.start, cols.stop), indexing="ij")
        with np.errstate(divide="ignore"):
            log2_scale = np.log2(dec)  # colour scales (layout), not data
            log_rel = np.log10(rel)
        scale_colors, error_colors = grouping_colors(log2_scale.tolist(), log_rel.tolist())
        texts = {float(v): power_of_two_text(float(v)) for v in np.unique(dec)}
        return {  # lists; the sources get the numeric ones as arrays (`binary_columns`)
            "x": c_idx.reshape(-1).tolist(), "y": r_idx.reshape(-1).tolist(),
            "row": r_idx.reshape(-1).tolist(), "col": c_idx.reshape(-1).tolist(),
            "value": x.reshape(-1).tolist(), "dequantized": x_hat.reshape(-1).tolist(),
            "decode_scale": dec.tolist(), "log2_decode_scale": log2_scale.tolist(),
            "scale_text": [texts[float(v)] for v in dec], "group": groups.tolist(),
            "rel_error": rel.tolist(), "log10_rel_error": log_rel.tolist(),
            "scale_color": scale_colors, "error_color": error_colors,
        }

    def _source_data(self, result: GroupingResult) -> dict[str, dict[str, list[Any]]]:
        data = study_columns(result.study)
        study = result.study
        if isinstance(study, OutlierStudy):
            labels = [e.granularity for e in study.entries]
            self.__dict__["_setting_view"] = True
            try:
                if self._view.options != labels:
                    self._view.options = labels
                if self._view.value not in labels:
                    self._view.value = labels[0]
            finally:
                self.__dict__["_setting_view"] = False
            entry = self.shown_entry(result)
            assert entry is not None
            data["cells"] = self._cells(study, entry)
            data["outlier"] = {"x": [study.outlier_index[1]], "y": [study.outlier_index[0]]}
        else:
            data["cells"] = {name: [] for name in GROUPING_CELL_COLUMNS}
            data["outlier"] = {"x": [], "y": []}
        return data

    # -- figures ----------------------------------------------------------------------------------
    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        """One (empty) column per study; a study's figures are built the first time it is shown
        (`_show_study`): the studies not shown were 129 of the widget's 303 Bokeh models, which a
        page built, sent and drew for nothing."""
        self._figures: dict[str, Any] = {}
        self._heatmaps: Any = None
        self._views: dict[str, pn.Column] = {}
        self._stack = pn.Column(sizing_mode="stretch_width")  # the views built so far
        return self._stack

    def _show_study(self, name: str) -> None:
        """Build study `name`'s figures over the widget's sources, once, styled as the page styled
        the rest of the widget (`restyle`, set when a page places it)."""
        if name in self._views:
            return
        sources = self.sources
        self._figures[name] = study_figure_of(name, sources)
        if name == "outlier":
            self._heatmaps = grouping_figures(sources)
            objects = [self._view, self._heatmaps, self._figures[name]]
        else:
            objects = [self._figures[name]]
        view = self._views[name] = pn.Column(*objects, sizing_mode="stretch_width", visible=False)
        if self.restyle is not None:
            self.restyle(view)
        self._stack.append(view)

    def _after_update(self, result: GroupingResult) -> None:
        self._show_study(result.config.study)
        for name, view in self._views.items():
            view.visible = name == result.config.study
        if isinstance(result.study, OutlierStudy):
            set_colorbar_ranges(self._heatmaps, self.source_data["cells"])
            self._figures["outlier"].x_range.factors = [e.granularity for e in result.study.entries]

    def _summary_text(self, result: GroupingResult) -> str:
        study = result.study
        entry = self.shown_entry(result)
        if not isinstance(study, OutlierStudy) or entry is None:
            return " ".join(grouping.summary_lines(result))
        st = entry.scaled
        others = entry.other_groups
        if others:
            groups_text = (f"the outlier's neighbours (the rest of its group) have {entry.outlier_group_rms_rel_error:.3g} "
                           f"against a median of {entry.other_groups_rms_rel_error:.3g} for the other {others} groups")
        else:
            groups_text = (f"one group holds every element, and the elements other than the outlier have "
                           f"RMS relative error {entry.outlier_group_rms_rel_error:.3g}")
        size = int(study.x.size)
        flushed = round(entry.report.flushed_fraction * size)
        window = "" if study.shape[0] <= MAX_CELLS[0] and study.shape[1] <= MAX_CELLS[1] else (
            f" (the heatmaps show a {min(study.shape[0], MAX_CELLS[0])} × {min(study.shape[1], MAX_CELLS[1])} "
            f"window around the outlier)")
        return (
            f"{st.fmt.name}, {entry.granularity}: {st.n_groups} scale{'s' if st.n_groups != 1 else ''}, "
            f"**{entry.bits_per_element:.4g} bits per element** ({st.fmt.bits} + FP32 scales amortised). "
            f"RMS relative error {entry.report.rms_rel_error:.3g} (per-tensor scaling: "
            f"{study.per_tensor_rms_rel_error:.3g}); {groups_text}; "
            f"{flushed} of {size} elements flushed to zero{window}."
        )


__all__ = ["MAX_CELLS", "ScaleGrouping"]
