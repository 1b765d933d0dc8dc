"""ScaleGrouping: the scale-grouping widget. A standard-normal float32 tensor of SHAPE (seeded as
`simulations.scaling.outlier_study` seeds it) gets one outlier at a chosen row and column, and is cast
to the element format by `simulations.scaling.quantize_scaled` with one scale per group — per tensor,
per row (token), per column (channel), 1-D blocks along a row, or square 2-D tiles. Scales follow
the module's convention: `encode_scale = F / amax_group` (stored as float32, round-to-nearest-even,
saturating cast), `decode_scale = 1 / encode_scale`. Heatmaps show the decode scale of every element
and its relative error; the summary gives bits per element (element bits plus the FP32 scales
amortised), from `error_report`, and the RMS relative error ‖x̂ − x‖₂ / ‖x‖₂ of the outlier's
neighbours (the other elements of its group, whose resolution the outlier sets) against the median
of the other groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import panel as pn
import param
from bokeh.models import ColumnDataSource

from lowprec.app.plots.style import power_of_two_text
from lowprec.app.plots.widget_grouping import grouping_colors, grouping_figures, set_colorbar_ranges
from lowprec.app.widgets._sim_base import SimulationWidget
from lowprec.simulations import scaling

#: rows × columns of the tensor the widget quantizes
SHAPE = (32, 64)


def outlier_tensor(outlier: float, outlier_row: int, outlier_col: int, seed: int = 0) -> np.ndarray:
    """The widget's input: standard normal (float32) of SHAPE with x[row, col] = outlier, drawn as
    `simulations.scaling.outlier_study` draws its tensor, so the two agree for the same seed."""
    x = np.random.default_rng(seed).standard_normal(SHAPE).astype(np.float32)
    x[outlier_row, outlier_col] = np.float32(outlier)
    return x


class ScaleGrouping(SimulationWidget):
    """One outlier in a tensor, scaled per tensor / row / column / block: scales and error."""

    format: param.Selector = param.Selector(default="E4M3FN", objects=["E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1", "INT8"],
                            doc="element format of the scaled cast")
    granularity: param.Selector = param.Selector(default="tensor", objects=["tensor", "row", "column", "block", "block2d"],
                                 doc="which elements share one scale: the whole tensor, a row (token), a "
                                     "column (channel), a 1-D block along a row, or a square 2-D tile")
    block_size: param.Selector = param.Selector(default=16, objects=[4, 8, 16, 32],
                                doc="elements per 1-D block, or the side of a 2-D tile")
    outlier = param.Number(default=100.0, bounds=(-1e6, 1e6), doc="value of the outlier element")
    outlier_row = param.Integer(default=3, bounds=(0, SHAPE[0] - 1), doc="row of the outlier")
    outlier_col = param.Integer(default=5, bounds=(0, SHAPE[1] - 1), doc="column of the outlier")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="seed of the Gaussian tensor")

    title = "Scale grouping"
    control_widgets = {"outlier": pn.widgets.FloatInput, "seed": pn.widgets.IntInput}
    watched = ("format", "granularity", "block_size", "outlier", "outlier_row", "outlier_col", "seed")

    def granularity_spec(self) -> str:
        """The granularity as `simulations.scaling.parse_granularity` spells it."""
        if self.granularity == "block":
            return f"block{self.block_size}"
        if self.granularity == "block2d":
            return f"block{self.block_size}x{self.block_size}"
        return str(self.granularity)

    def _compute(self) -> Any:
        x = outlier_tensor(self.outlier, self.outlier_row, self.outlier_col, self.seed)
        scaled = scaling.quantize_scaled(x, self.format, self.granularity_spec())
        report = scaling.error_report(x, scaled)
        per_tensor = scaling.error_report(x, scaling.quantize_scaled(x, self.format, "tensor"))
        marker = np.zeros(SHAPE, bool)
        marker[self.outlier_row, self.outlier_col] = True
        g = scaled.granularity
        outlier_group = int(np.argmax(g.to_groups(marker).any(axis=1)))
        # the outlier's neighbours: the other elements of its group, whose resolution it sets
        members = g.to_groups(np.ones(SHAPE, bool) & ~marker)[outlier_group]
        xs = g.to_groups(x.astype(np.float64))[outlier_group][members]
        hs = g.to_groups(scaled.dequantize())[outlier_group][members]
        signal = float(np.sum(xs * xs))
        neighbours = float(np.sqrt(np.sum((hs - xs) ** 2) / signal)) if signal > 0 else 0.0
        return {"x": x, "scaled": scaled, "report": report, "per_tensor": per_tensor,
                "outlier_group": outlier_group, "neighbours_rms_rel_error": neighbours}

    def _source_data(self, result: Any) -> dict[str, dict[str, list[Any]]]:
        x = result["x"].astype(np.float64)
        st = result["scaled"]
        g = st.granularity
        x_hat = st.dequantize()
        dec = st.decode_scales.reshape(-1)
        group_size = g.to_groups(x).shape[1]
        group_ids = g.from_groups(np.repeat(np.arange(dec.size), group_size).reshape(dec.size, group_size),
                                  st.shape).reshape(-1)
        texts = [power_of_two_text(float(v)) for v in dec]
        rows, cols = np.indices(st.shape)
        abs_err = np.abs(x_hat - x).reshape(-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(x.reshape(-1) != 0, abs_err / np.abs(x.reshape(-1)), np.where(abs_err == 0, 0.0, np.inf))
            log_rel = np.log10(rel)
        log2_scale = np.log2(dec)[group_ids]
        scale_colors, error_colors = grouping_colors(log2_scale.tolist(), log_rel.tolist())
        cells = {
            "x": cols.reshape(-1).tolist(), "y": rows.reshape(-1).tolist(),
            "row": rows.reshape(-1).tolist(), "col": cols.reshape(-1).tolist(),
            "value": x.reshape(-1).tolist(), "dequantized": x_hat.reshape(-1).tolist(),
            "decode_scale": dec[group_ids].tolist(), "log2_decode_scale": log2_scale.tolist(),
            "scale_text": [texts[i] for i in group_ids], "group": group_ids.tolist(),
            "abs_error": abs_err.tolist(), "rel_error": rel.tolist(), "log10_rel_error": log_rel.tolist(),
            "scale_color": scale_colors, "error_color": error_colors,
        }
        outlier = {"x": [self.outlier_col], "y": [self.outlier_row]}
        return {"cells": cells, "outlier": outlier}

    def _build_figures(self, sources: dict[str, ColumnDataSource]) -> Any:
        return grouping_figures(sources)

    def _after_update(self, result: Any) -> None:
        set_colorbar_ranges(self._plots, self.source_data["cells"])

    def _summary_text(self, result: Any) -> str:
        st = result["scaled"]
        rep = result["report"]
        rel = rep.group_rms_rel_error.reshape(-1)
        gid = result["outlier_group"]
        x_size = int(result["x"].size)
        others = np.delete(rel, gid)
        if others.size:
            groups_text = (f"the outlier's neighbours (the rest of its group) have {result['neighbours_rms_rel_error']:.3g} "
                           f"against a median of {float(np.median(others)):.3g} for the other {others.size} groups")
        else:
            groups_text = (f"one group holds every element, and the elements other than the outlier have "
                           f"RMS relative error {result['neighbours_rms_rel_error']:.3g}")
        return (
            f"{st.fmt.name}, {st.granularity.label}: {st.n_groups} scale{'s' if st.n_groups != 1 else ''}, "
            f"**{st.bits_per_element:.4g} bits per element** ({st.fmt.bits} + FP32 scales amortised). "
            f"RMS relative error {rep.rms_rel_error:.3g} (per-tensor scaling: "
            f"{result['per_tensor'].rms_rel_error:.3g}); {groups_text}; "
            f"{round(rep.flushed_fraction * x_size)} of {x_size} elements flushed to zero."
        )


__all__ = ["SHAPE", "ScaleGrouping", "outlier_tensor"]
