"""Figures of the block-formats widget: one 32-element block shown element by element — the value
that enters the cast (after the random Hadamard transform when it is on), what the block recipe
decodes it as under its shared scale, and what per-tensor scaling in the same element format decodes
it as — and the RMS relative error of every 32-element block of the tensor under the block recipe
against per-tensor scaling, the shown block highlighted. Faint horizontal lines are the values the
shown block can decode to (the element format's grid times the block's scale; for 8-bit
elements only the top three binades, as the grid crowds near zero). A third, small bar chart (hidden
by the widget unless its transposed view is on) shows the tensor-wide RMS relative error of the
row-blocked view, of the column-blocked view quantized from the source, and of the column-blocked
view re-quantized from the row-blocked decoded data. Pure Bokeh over the `block`, `grid`, `errors`,
`shown` and `transpose` sources the widget fills; scale tooltips are exact (`power_of_two_text`).
"""

from __future__ import annotations

from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, DataRange1d, FactorRange, HoverTool
from bokeh.plotting import figure

from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR

#: bars of the transposed-view chart, in order: (label, colour)
TRANSPOSE_VIEWS: tuple[tuple[str, str], ...] = (
    ("row blocks", CURRENT_COLOR),
    ("columns from source", "#888888"),
    ("columns re-quantized", HIGHLIGHT_COLOR),
)


def _legend_outside(fig: Any) -> None:
    """Move the figure's legend to the right of the plot area, so it never hides data."""
    legend = fig.legend[0]
    fig.center.remove(legend)
    legend.click_policy = "hide"
    legend.label_text_font_size = "9pt"
    fig.add_layout(legend, "right")


def block_figures(sources: dict[str, ColumnDataSource], width: int = 720) -> Any:
    """Element view of the shown block over `block`, per-block error over `errors` and `shown`."""
    elems = figure(title="one block, element by element", width=width, height=300,
                   x_axis_label="element in block", y_axis_label="value", tools="pan,wheel_zoom,box_zoom,reset")
    elems.hspan(y="value", source=sources["grid"], line_color="#888888", line_alpha=0.25, line_width=1)
    elems.vbar(x="element", top="input", width=0.8, source=sources["block"], fill_color="#cccccc",
               line_color=None, legend_label="input to the cast")
    elems.scatter("element", "decoded", source=sources["block"], size=9, color=CURRENT_COLOR,
                  legend_label="block recipe (shared scale)")
    elems.scatter("element", "per_tensor", source=sources["block"], size=9, marker="x", line_width=2,
                  color=DELAYED_COLOR, legend_label="per-tensor scale")
    elems.add_tools(HoverTool(tooltips=[
        ("element", "@element"), ("input", "@input{0.00000e}"), ("decoded", "@decoded{0.00000e}"),
        ("code", "@code"), ("shared scale", "@scale_text"), ("per-tensor", "@per_tensor{0.00000e}")]))
    _legend_outside(elems)

    errs = figure(title="RMS relative error per 32-element block (the shown block highlighted)", width=width,
                  height=240, x_axis_label="block (row-major)", y_axis_label="RMS rel. error", y_axis_type="log",
                  tools="pan,wheel_zoom,box_zoom,reset")
    errs.line("block", "recipe", source=sources["errors"], color=CURRENT_COLOR, legend_label="block recipe")
    errs.line("block", "per_tensor", source=sources["errors"], color=DELAYED_COLOR, line_dash="dashed",
              legend_label="per-tensor scale")
    errs.scatter("block", "recipe", source=sources["shown"], size=12, color=HIGHLIGHT_COLOR)
    errs.add_tools(HoverTool(tooltips=[("block", "@block"), ("block recipe", "@recipe{0.000e}"),
                                       ("per-tensor", "@per_tensor{0.000e}")]))
    _legend_outside(errs)
    return column(elems, errs, transpose_figure(sources["transpose"], width=width), sizing_mode="stretch_width")


def transpose_figure(source: ColumnDataSource, width: int = 720) -> Any:
    """Bars over `transpose` (`view`, `error`, `color`): tensor-wide RMS relative error of the row
    view and of the column view made from the source or from the row-rounded data."""
    fig = figure(title="transposed view: column blocks from the source vs re-quantized from row blocks",
                 x_range=FactorRange(factors=[label for label, _ in TRANSPOSE_VIEWS]),
                 y_range=DataRange1d(start=0), width=width, height=220,
                 y_axis_label="RMS rel. error (tensor)", tools="reset")
    fig.vbar(x="view", top="error", width=0.6, source=source, fill_color="color", line_color=None)
    fig.add_tools(HoverTool(tooltips=[("view", "@view"), ("RMS rel. error", "@error{0.0000e}")]))
    return fig
