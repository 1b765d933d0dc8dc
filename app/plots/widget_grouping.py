"""Figures of the scale-grouping widget: two matrix heatmaps over the same elements, the decode scale
each element is multiplied by (`decode_scale = 1 / encode_scale`, `encode_scale = F / amax_group`, as
`simulations.scaling` names them; coloured by log2) and the relative error |x̂ − x| / |x| of each
element after the scaled cast (coloured by log10; grey = exact), with the outlier's cell outlined.
Tooltips give scales exactly as powers of two. Pure Bokeh over the `cells` and `outlier` sources
that the widget fills.
"""

from __future__ import annotations

from typing import Any

from bokeh.layouts import row
from bokeh.models import ColumnDataSource
from bokeh.palettes import Cividis256, Viridis256

from .style import HIGHLIGHT_COLOR
from .widget_heatmap import heat_colors, heatmap_figure

GROUPING_CELL_COLUMNS = (
    "x", "y", "row", "col", "value", "dequantized", "decode_scale", "log2_decode_scale", "scale_text",
    "group", "abs_error", "rel_error", "log10_rel_error", "scale_color", "error_color",
)

_TOOLTIPS = [
    ("row, col", "@row, @col"), ("x", "@value{0.0000e}"), ("x̂", "@dequantized{0.0000e}"),
    ("decode scale", "@scale_text"), ("group", "@group"), ("|x̂ − x| / |x|", "@rel_error{0.000e}"),
]


def grouping_colors(log2_decode_scale: list[float], log10_rel_error: list[float]) -> tuple[list[str], list[str]]:
    """Cell colours of the scale map (Cividis over log2 scale) and the error map (Viridis over
    log10 relative error; exact elements, whose log is -inf, grey)."""
    return heat_colors(log2_decode_scale, Cividis256), heat_colors(log10_rel_error, Viridis256)


def grouping_figures(sources: dict[str, ColumnDataSource], width: int = 460, height: int = 280) -> Any:
    """Scale heatmap and error heatmap side by side, sharing ranges, the outlier outlined."""
    scale_fig = heatmap_figure(sources["cells"], "decode scale per element (colour: log2)", "column", "row",
                               _TOOLTIPS, width=width, height=height, color_column="scale_color")
    error_fig = heatmap_figure(sources["cells"], "relative error per element (colour: log10; grey = exact)",
                               "column", "row", _TOOLTIPS, width=width, height=height,
                               color_column="error_color")
    error_fig.x_range = scale_fig.x_range
    error_fig.y_range = scale_fig.y_range
    for fig in (scale_fig, error_fig):
        fig.rect("x", "y", width=1, height=1, source=sources["outlier"], fill_color=None,
                 line_color=HIGHLIGHT_COLOR, line_width=3)
    return row(scale_fig, error_fig, sizing_mode="stretch_width")
