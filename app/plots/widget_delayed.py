"""Figures of the delayed-scale spike widget: over training steps, the tensor's amax next to the amax
each scaler derived its scale from, the clipped (saturated) fraction and the RMS relative error, for
delayed scaling (amax history, Transformer Engine semantics) against current scaling. Pure Bokeh
builders over one `ColumnDataSource` whose columns `delayed_spike_columns` fills; the spike step is a
`Span` the widget moves. Scales follow `simulations.delayed`: `encode_scale = F / amax_used / 2**margin`,
so the amax a scaler used is `F / encode_scale / 2**margin`.
"""

from __future__ import annotations

from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Span
from bokeh.plotting import figure

from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR

#: columns of the one source the figures read
DELAYED_COLUMNS = (
    "step",
    "amax",
    "delayed_amax_used",
    "current_amax_used",
    "delayed_clipped",
    "current_clipped",
    "delayed_error",
    "current_error",
)


def delayed_spike_figures(
    source: ColumnDataSource, spike_step: int, width: int = 640, height: int = 210
) -> tuple[Any, list[Span]]:
    """Three stacked figures sharing the step axis; returns (layout, spike spans, one per figure) so a
    widget can move the highlighted step without rebuilding anything."""

    amax_fig = figure(
        title="amax per step vs the amax each scale was derived from",
        y_axis_type="log", width=width, height=height, x_axis_label="step", y_axis_label="amax",
        tools="pan,wheel_zoom,box_zoom,reset",
    )
    amax_fig.line("step", "amax", source=source, color="black", legend_label="tensor amax", line_width=2)
    amax_fig.line("step", "delayed_amax_used", source=source, color=DELAYED_COLOR,
                  legend_label="used by delayed scale", line_width=2)
    amax_fig.line("step", "current_amax_used", source=source, color=CURRENT_COLOR, line_dash="dotted",
                  legend_label="used by current scale", line_width=2)

    clip_fig = figure(
        title="fraction of elements clipped (saturated)", width=width, height=height,
        x_range=amax_fig.x_range, x_axis_label="step", y_axis_label="clipped fraction",
        tools="pan,wheel_zoom,box_zoom,reset",
    )
    clip_fig.line("step", "delayed_clipped", source=source, color=DELAYED_COLOR, legend_label="delayed",
                  line_width=2)
    clip_fig.line("step", "current_clipped", source=source, color=CURRENT_COLOR, legend_label="current",
                  line_width=2, line_dash="dotted")

    err_fig = figure(
        title="RMS relative error", y_axis_type="log", width=width, height=height,
        x_range=amax_fig.x_range, x_axis_label="step", y_axis_label="RMS rel. error",
        tools="pan,wheel_zoom,box_zoom,reset",
    )
    err_fig.line("step", "delayed_error", source=source, color=DELAYED_COLOR, legend_label="delayed",
                 line_width=2)
    err_fig.line("step", "current_error", source=source, color=CURRENT_COLOR, legend_label="current",
                 line_width=2, line_dash="dotted")

    tooltips = ([("step", "@step"), ("amax", "@amax{0.000e}"), ("delayed used", "@delayed_amax_used{0.000e}"),
                  ("clipped (delayed)", "@delayed_clipped{0.0000}"), ("error (delayed)", "@delayed_error{0.000e}"),
                  ("error (current)", "@current_error{0.000e}")]
    )
    spans = []
    for fig in (amax_fig, clip_fig, err_fig):
        span = Span(location=spike_step, dimension="height", line_color=HIGHLIGHT_COLOR, line_dash="dashed",
                    line_width=2)
        fig.add_layout(span)
        spans.append(span)
        fig.legend.location = "top_left"
        fig.legend.click_policy = "hide"
        fig.add_tools(HoverTool(tooltips=tooltips, mode="vline"))
    return column(amax_fig, clip_fig, err_fig, sizing_mode="stretch_width"), spans
