"""Attention-rounding plots: pure builders over an `AttentionResult` (simulations.studies.attention).

`attention_sources(result)` returns plain column dicts (for `ColumnDataSource`s, so a widget can
update `source.data` in place); the `*_figure` builders take those sources and return Bokeh figures;
`attention_layout(result)` puts them together. Shown: ΔP = P̃ − P as a heat map, exact ΔO against the
first-order estimate ΔP·V + P·ΔV, Monte-Carlo variance against the analytic Σ_j V_j² Var(e_j),
the per-element bias of stochastic rounding (with ±3 standard errors, √(analytic variance / trials))
next to the deterministic error of nearest rounding, and each row's mass error ΣP̃ − ΣP.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, LinearColorMapper, Range1d
from bokeh.models.annotations import Slope
from bokeh.plotting import figure

from lowprec.simulations.studies.attention import AttentionResult

from .style import CURRENT_COLOR, DELAYED_COLOR, ERROR_COLOR, HIGHLIGHT_COLOR

_PALETTE = tuple(
    f"#{int(255 * min(1, 2 * (1 - t))):02x}{int(255 * (1 - abs(2 * t - 1))):02x}{int(255 * min(1, 2 * t)):02x}"
    for t in np.linspace(0.0, 1.0, 64)
)  # red → white → blue: positive ΔP red, negative blue


def attention_sources(result: AttentionResult) -> dict[str, dict[str, list[Any]]]:
    """Column data for every figure, from one result (JSON-ready lists)."""
    dp = result.delta_p
    q, k = dp.shape
    lower, upper = result.mean_error_band(3.0)
    return {
        "delta_p": {"image": [dp.tolist()], "x": [0.0], "y": [0.0], "dw": [float(k)], "dh": [float(q)]},
        "first_order": {
            "exact": result.delta_o.reshape(-1).tolist(),
            "first_order": result.delta_o_first_order.reshape(-1).tolist(),
        },
        "variance": {
            "analytic": result.analytic_variance.reshape(-1).tolist(),
            "monte_carlo": result.mc_variance.reshape(-1).tolist(),
        },
        "bias": {
            "index": list(range(lower.size)),
            "mc_mean": result.mc_mean_error.reshape(-1).tolist(),
            "nearest": result.delta_o_nearest.reshape(-1).tolist(),
            "upper": upper.reshape(-1).tolist(),
            "lower": lower.reshape(-1).tolist(),
        },
        "row_mass": {"row": list(range(q)), "mass_error": result.row_mass_error.tolist()},
    }


def delta_p_figure(src: dict[str, list[Any]], title: str = "ΔP = P̃ − P") -> Any:
    image = np.asarray(src["image"][0], dtype=np.float64)
    lim = float(np.max(np.abs(image))) if image.size else 1.0
    mapper = LinearColorMapper(palette=list(_PALETTE)[::-1], low=-lim or -1.0, high=lim or 1.0)
    fig = figure(title=title, width=380, height=360, x_axis_label="key", y_axis_label="query",
                 x_range=Range1d(start=0, end=src["dw"][0]), y_range=Range1d(start=src["dh"][0], end=0),
                 tooltips=[("key", "$x{0}"), ("query", "$y{0}"), ("ΔP", "@image{0.000e}")])
    fig.image(image="image", x="x", y="y", dw="dw", dh="dh", source=ColumnDataSource(src),
              color_mapper=mapper)  # type: ignore[call-arg]  # a glyph property the stubs omit
    return fig


def _against_identity(src: dict[str, list[Any]], title: str, x: tuple[str, str], y: tuple[str, str],
                      color: str) -> Any:
    """Scatter of column y[0] against column x[0] (axis labels x[1], y[1]) with the line y = x."""
    fig = figure(title=title, width=380, height=360, x_axis_label=x[1], y_axis_label=y[1])
    fig.scatter(x[0], y[0], source=ColumnDataSource(src), size=3, alpha=0.5, color=color)
    fig.add_layout(Slope(gradient=1, y_intercept=0, line_color=HIGHLIGHT_COLOR, line_dash="dashed"))
    return fig


def first_order_figure(src: dict[str, list[Any]]) -> Any:
    return _against_identity(src, "ΔO: exact vs first order (ΔP·V + P·ΔV)",
                             ("first_order", "first-order estimate"), ("exact", "exact ΔO"), CURRENT_COLOR)


def variance_figure(src: dict[str, list[Any]]) -> Any:
    return _against_identity(src, "Variance of ΔO: Monte-Carlo vs Σ V² Var(e)",
                             ("analytic", "analytic variance"), ("monte_carlo", "Monte-Carlo variance"),
                             DELAYED_COLOR)


def bias_figure(src: dict[str, list[Any]]) -> Any:
    fig = figure(title="Mean error per output element (band: expected ± 3 SE)", width=780,
                 height=300, x_axis_label="output element (row-major)", y_axis_label="mean ΔO")
    source = ColumnDataSource(src)
    fig.varea(x="index", y1="lower", y2="upper", source=source, fill_alpha=0.25, color=HIGHLIGHT_COLOR,
              legend_label="expected ± 3 SE")
    fig.scatter("index", "nearest", source=source, size=3, color=ERROR_COLOR, legend_label="nearest")
    fig.scatter("index", "mc_mean", source=source, size=3, color=CURRENT_COLOR,
                legend_label="trial mean")
    fig.legend.location = "top_left"
    return fig


def row_mass_figure(src: dict[str, list[Any]]) -> Any:
    fig = figure(title="Row mass error ΣP̃ − ΣP (trial 0)", width=380, height=300,
                 x_axis_label="query row", y_axis_label="mass error")
    fig.scatter("row", "mass_error", source=ColumnDataSource(src), size=4, color=ERROR_COLOR)
    return fig


def attention_layout(result: AttentionResult) -> Any:
    """Every attention figure in one grid, ready for `save_standalone`."""
    src = attention_sources(result)
    cfg = result.config
    title = f"ΔP ({cfg['format']}, {cfg['rounding']}, scale {cfg['scale']})"
    return gridplot([
        [delta_p_figure(src["delta_p"], title), first_order_figure(src["first_order"])],
        [variance_figure(src["variance"]), row_mass_figure(src["row_mass"])],
        [bias_figure(src["bias"])],
    ])
