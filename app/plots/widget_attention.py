"""Figures of the attention-rounding widget over `simulations.studies.attention.AttentionResult`: every entry
of P against its rounded P̃ (trial 0; the staircase is the format's grid, times the row's decode scale
when P is scaled), exact ΔO against the first-order estimate ΔP·V + P·ΔV, the Monte-Carlo variance of
ΔO against the analytic Σ_j V_j² Var(e_j), and the per-element mean error (bias) with its expected
± 3 standard-error band, nearest rounding's deterministic error and, with renormalisation, the
renormalised rows' mean error next to its second-order prediction. Columns come from
`app.plots.attention.attention_sources` (reused; its ΔP image and row-mass columns are dropped) plus the `probs` and `renorm` columns built here;
figures are built once over `ColumnDataSource`s so a widget only replaces their data.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from bokeh.layouts import gridplot
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.annotations import Label, Slope
from bokeh.plotting import figure

from .attention import attention_sources
from .style import CURRENT_COLOR, DELAYED_COLOR, ERROR_COLOR, HIGHLIGHT_COLOR, INK

#: renderers and notes shown only under stochastic / only under nearest rounding (`show_rounding`)
STOCHASTIC_ONLY = "stochastic-only"
NEAREST_ONLY = "nearest-only"


def rounding_marks(layout: Any) -> tuple[list[Any], list[Any]]:
    """The models shown only under stochastic rounding and those shown only under nearest rounding.
    Found once per layout: a walk of every model of the figures costs ~0.1 s, too much to repeat on
    the server's event loop at every update."""
    return list(layout.select({"name": STOCHASTIC_ONLY})), list(layout.select({"name": NEAREST_ONLY}))


def show_rounding(marks: tuple[list[Any], list[Any]], stochastic: bool) -> None:
    """Show the Monte-Carlo marks of the figures (`rounding_marks`) under stochastic rounding, and
    the note that replaces them under nearest rounding (every trial is the same there)."""
    stochastic_only, nearest_only = marks
    for model in stochastic_only:
        if model.visible != stochastic:
            model.visible = stochastic
    for model in nearest_only:
        if model.visible == stochastic:
            model.visible = not stochastic


#: a scatter of more than THIN_ABOVE points draws every k-th entry (row-major), about THIN_TO of
#: them: the page stays light (an exported lesson carries two widgets and their states) and the
#: plot readable; `drawn_every` says which k, and the caption says so
THIN_ABOVE = 4096
THIN_TO = 2048


def drawn_every(n: int) -> int:
    """The stride k of the entries drawn out of `n` (1: all of them)."""
    return 1 if n <= THIN_ABOVE else math.ceil(n / THIN_TO)


def attention_widget_columns(result: Any) -> dict[str, dict[str, list[Any]]]:
    """`attention_sources(result)` plus `probs` (P, P̃ of trial 0 per entry) and `renorm` (mean error
    of renormalised rows and its first-order prediction per output element; empty when off), each
    thinned to every `drawn_every(n)`-th entry when there are more than MAX_POINTS."""
    data = attention_sources(result)
    del data["delta_p"], data["row_mass"]  # not drawn here (the P̃-vs-P scatter shows ΔP)
    n = result.out_exact.size
    k = drawn_every(n)
    if k > 1:
        for name in ("first_order", "variance", "bias"):
            data[name] = {col: values[::k] for col, values in data[name].items()}
    p = result.probs.reshape(-1)
    q, keys = result.probs.shape
    kp = drawn_every(p.size)
    data["probs"] = {
        "p": p[::kp].tolist(),
        "p_rounded": result.probs_rounded.reshape(-1)[::kp].tolist(),
        "query": np.repeat(np.arange(q), keys)[::kp].tolist(),
        "key": np.tile(np.arange(keys), q)[::kp].tolist(),
    }
    if result.mc_mean_error_renorm is not None and result.renorm_bias_first_order is not None:
        renorm = {"index": list(range(0, n, k)), "mc_mean": result.mc_mean_error_renorm.reshape(-1)[::k].tolist(),
                  "predicted": result.renorm_bias_first_order.reshape(-1)[::k].tolist()}
    else:
        renorm = {"index": [], "mc_mean": [], "predicted": []}  # renormalisation off: nothing to draw
    data["renorm"] = renorm
    return data


def attention_widget_figures(sources: dict[str, ColumnDataSource], width: int = 400) -> Any:
    """Four figures in a grid over the sources named as in `attention_widget_columns`."""
    tools = "pan,wheel_zoom,box_zoom,reset"
    probs = figure(title="P̃ against P (every entry, trial 0)", width=width, height=340, tools=tools,
                   x_axis_label="P (exact softmax)", y_axis_label="P̃ (rounded)")
    probs.scatter("p", "p_rounded", source=sources["probs"], size=4, alpha=0.5, color=CURRENT_COLOR)
    probs.add_layout(Slope(gradient=1, y_intercept=0, line_color=HIGHLIGHT_COLOR, line_dash="dashed"))
    probs.add_tools(HoverTool(tooltips=[("query, key", "@query, @key"), ("P", "@p{0.00000e}"),
                                        ("P̃", "@p_rounded{0.00000e}")]))

    first = figure(title="ΔO: exact vs first order (ΔP·V + P·ΔV)", width=width, height=340, tools=tools,
                   x_axis_label="first-order estimate", y_axis_label="exact ΔO")
    first.scatter("first_order", "exact", source=sources["first_order"], size=3, alpha=0.5, color=CURRENT_COLOR)
    first.add_layout(Slope(gradient=1, y_intercept=0, line_color=HIGHLIGHT_COLOR, line_dash="dashed"))

    var = figure(title="variance of ΔO: Monte-Carlo vs Σ V² Var(e)", width=width, height=340,
                 tools=tools,
                 x_axis_label="analytic variance", y_axis_label="Monte-Carlo variance")
    var.scatter("analytic", "monte_carlo", source=sources["variance"], size=3, alpha=0.5, color=DELAYED_COLOR,
                name=STOCHASTIC_ONLY)
    var.add_layout(Slope(gradient=1, y_intercept=0, line_color=HIGHLIGHT_COLOR, line_dash="dashed",
                         name=STOCHASTIC_ONLY))
    # nearest rounding has no variance: say so instead of drawing an empty box
    var.add_layout(Label(x=12, y=12, x_units="screen", y_units="screen", name=NEAREST_ONLY, visible=False,
                         text="nearest rounding is deterministic:\nevery trial gives the same P̃,\nso there "
                              "is no variance to draw", text_font_size="12px", text_color=INK))

    bias = figure(title="mean error per output element (band: expected ± 3 SE)", width=width, height=420,
                  tools=tools, x_axis_label="output element (row-major)", y_axis_label="mean ΔO")
    bias.varea(x="index", y1="lower", y2="upper", source=sources["bias"], fill_alpha=0.25, color=HIGHLIGHT_COLOR,
               legend_label="expected ± 3 SE", name=STOCHASTIC_ONLY)
    bias.scatter("index", "mc_mean", source=sources["bias"], size=3, color=CURRENT_COLOR,
                 legend_label="stochastic: trial mean", name=STOCHASTIC_ONLY)
    # drawn after the trial means, so the deterministic error stays visible on top
    bias.scatter("index", "nearest", source=sources["bias"], size=3, color=ERROR_COLOR, legend_label="nearest")
    bias.scatter("index", "mc_mean", source=sources["renorm"], size=3, color=DELAYED_COLOR, marker="triangle",
                 legend_label="renormalised: trial mean")
    bias.line("index", "predicted", source=sources["renorm"], color=DELAYED_COLOR, line_dash="dotted",
              legend_label="renormalised: predicted bias")
    legend = bias.legend[0]  # below the plot area: over the data it would hide points
    bias.center.remove(legend)
    legend.click_policy = "hide"
    legend.label_text_font_size = "8pt"
    legend.ncols = 2
    legend.update(margin=4, padding=4)
    bias.add_layout(legend, "below")
    return gridplot([[probs, first], [var, bias]])
