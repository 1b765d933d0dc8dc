"""Plots of a recompute-divergence run (`simulations.recompute.RecomputeResult`) for
`lowprec simulate recompute --html` and for notebooks: the widget's heatmap / commits / gradient
figures (`app.plots.widget_recompute`, reused, not copied) plus the scale trace of each layer —
the encode scale the true forward used against the one its recompute used (a gap is a recompute
that did not reproduce the forward's metadata) — under the run's verdict line. Layers whose scales
are equal would hide one another, so each layer's markers are drawn shifted in x by
`layer_offset(layer, n_layers)`: evenly spaced offsets within ±`LAYER_JITTER_SPAN`/2 of a step
(0.5 step in all), centred on the true step; the hover shows the unshifted step.
`recompute_sources` returns plain column dicts; `recompute_figure` builds the layout from them.
"""

from __future__ import annotations

import html
from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models import Div  # type: ignore[attr-defined]
from bokeh.plotting import figure

from .style import SERIES_PALETTE, gap_float
from .widget_recompute import recompute_columns, recompute_figures


#: total x spread, in steps, of one step's markers over all layers (each layer keeps a fixed offset)
LAYER_JITTER_SPAN = 0.5


def layer_offset(layer: int, n_layers: int) -> float:
    """x offset of `layer`'s markers: 0 for a single layer, else evenly spaced from
    −LAYER_JITTER_SPAN/2 (layer 0) to +LAYER_JITTER_SPAN/2 (the last layer)."""
    if n_layers <= 1:
        return 0.0
    return LAYER_JITTER_SPAN * (layer / (n_layers - 1) - 0.5)


def recompute_sources(result: Any) -> dict[str, dict[str, list[Any]]]:
    """Columns: the widget's `cells`, `steps`, `skipped`, plus `scales` with one row per
    (step, layer): encode scale in forward and in recompute, amax, the layer whose amax set
    the scale (-1: the initial scale), and `x` = step + `layer_offset(layer, n_layers)` where the
    markers are drawn."""
    data = recompute_columns(result)
    n_steps, n_layers = result.recomputed.shape
    scales: dict[str, list[Any]] = {k: [] for k in (
        "step", "x", "layer", "encode_scale_forward", "encode_scale_recompute", "amax_forward",
        "scale_source_forward", "scale_source_recompute", "color", "layer_label")}
    for layer in range(n_layers):
        for t in range(n_steps):
            scales["step"].append(t)
            scales["x"].append(t + layer_offset(layer, n_layers))
            scales["layer"].append(layer)
            scales["encode_scale_forward"].append(gap_float(result.encode_scale_forward[t, layer]))
            scales["encode_scale_recompute"].append(
                gap_float(result.encode_scale_recompute[t, layer]))
            scales["amax_forward"].append(gap_float(result.amax_forward[t, layer]))
            scales["scale_source_forward"].append(int(result.scale_source_forward[t, layer]))
            scales["scale_source_recompute"].append(int(result.scale_source_recompute[t, layer]))
            scales["color"].append(SERIES_PALETTE[layer % len(SERIES_PALETTE)])
            scales["layer_label"].append(f"layer {layer}")
    data["scales"] = scales
    return data


def scale_figure(source: ColumnDataSource, width: int = 640) -> Any:
    """Encode scale per step: circles = true forward, crosses = recompute, one colour per layer,
    each layer shifted in x by its `layer_offset` so equal scales stay visible."""
    fig = figure(title="encode scale: forward (o) vs recompute (+); layers offset in x", width=width, height=220,
                 x_axis_label="step", y_axis_label="encode scale", y_axis_type="log",
                 tools="pan,wheel_zoom,reset")
    fig.scatter("x", "encode_scale_forward", source=source, color="color", size=7,
                fill_alpha=0.3, legend_field="layer_label")
    fig.scatter("x", "encode_scale_recompute", source=source, color="color", marker="cross",
                size=11, line_width=2)
    fig.add_tools(HoverTool(tooltips=[
        ("step, layer", "@step, @layer"), ("forward", "@encode_scale_forward{0.000e}"),
        ("recompute", "@encode_scale_recompute{0.000e}"), ("amax", "@amax_forward{0.000e}"),
        ("scale from layer (fwd / rec)", "@scale_source_forward / @scale_source_recompute")]))
    fig.legend.location = "bottom_right"
    fig.legend.orientation = "horizontal"
    return fig


def recompute_figure(result: Any, width: int = 640) -> Any:
    """The whole page: verdict, heatmap, commits and gradient norm, scale trace."""
    sources = {name: ColumnDataSource(data=cols) for name, cols in recompute_sources(result).items()}
    body, _ = recompute_figures(sources, result.expected_state_commits, width=width)
    p = result.parameters
    head = Div(text=(
        f"<b>{html.escape(str(p.get('variant')))}</b> · {p.get('layers')} layers × width "
        f"{p.get('width')} · {p.get('steps')} steps · {html.escape(str(p.get('format')))} · "
        f"checkpointing {'on' if p.get('checkpointing') else 'off'}<br>"
        f"<b>Verdict:</b> {html.escape(result.verdict())}"), width=width)
    return column(head, body, scale_figure(sources["scales"], width=width))
