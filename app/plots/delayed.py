"""Plots of the delayed-scale spike (`simulations.scaling.delayed.simulate_stream`): per step, the tensor amax
against the amax each scaler sized its encode scale for (F / encode_scale / 2^margin, log scale), the
clipped fraction and the RMS relative error, delayed and current scaling side by side. Pure builders:
`spike_sources(result)` gives the column data, `spike_figure(sources)` draws it."""

from __future__ import annotations

from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.annotations import Span
from bokeh.plotting import figure

from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR


def as_source(data: Any) -> ColumnDataSource:
    """A ColumnDataSource as given, or one made from a column dict."""
    return data if isinstance(data, ColumnDataSource) else ColumnDataSource(data)


def spike_sources(result: Any) -> dict[str, dict[str, list[Any]]]:
    """{'steps': columns} from a StreamResult: step, amax, delayed_/current_ encode_scale,
    amax_used, clipped_fraction, flushed_fraction, rms_rel_error."""
    return {"steps": result.columns()}


def spike_figure(sources: dict[str, Any], spike_step: int | None = None,
                 title: str = "Delayed vs current scaling", width: int = 760) -> Any:
    """Three stacked plots sharing the step axis; a vertical line marks the spike step.
    `sources["steps"]` is a column dict or a ColumnDataSource (a widget passes its own)."""
    src = as_source(sources["steps"])
    top = figure(title=title, height=260, width=width, y_axis_type="log", x_axis_label="step",
                 y_axis_label="amax")
    top.line("step", "amax", source=src, color="black", legend_label="tensor amax")
    top.line("step", "delayed_amax_used", source=src, color=DELAYED_COLOR, line_width=2,
             legend_label="amax the delayed scale assumes")
    top.line("step", "current_amax_used", source=src, color=CURRENT_COLOR, line_dash="dashed",
             legend_label="amax the current scale assumes")
    top.add_tools(HoverTool(tooltips=[("step", "@step"), ("amax", "@amax{0.000e}"),
                                      ("delayed scale", "@delayed_encode_scale{0.000e}"),
                                      ("current scale", "@current_encode_scale{0.000e}")]))
    mid = figure(height=180, width=width, x_range=top.x_range, x_axis_label="step", y_axis_label="clipped fraction")
    mid.line("step", "delayed_clipped_fraction", source=src, color=DELAYED_COLOR, line_width=2, legend_label="delayed")
    mid.line("step", "current_clipped_fraction", source=src, color=CURRENT_COLOR, line_dash="dashed",
             legend_label="current")
    bot = figure(height=200, width=width, x_range=top.x_range, y_axis_type="log", x_axis_label="step",
                 y_axis_label="RMS relative error")
    bot.line("step", "delayed_rms_rel_error", source=src, color=DELAYED_COLOR, line_width=2, legend_label="delayed")
    bot.line("step", "current_rms_rel_error", source=src, color=CURRENT_COLOR, line_dash="dashed",
             legend_label="current")
    for fig in (top, mid, bot):
        fig.legend.location = "top_left"
        fig.legend.click_policy = "hide"
        if spike_step is not None:
            fig.add_layout(Span(location=spike_step, dimension="height", line_color=HIGHLIGHT_COLOR,
                                line_dash="dotted"))
    return column(top, mid, bot)
