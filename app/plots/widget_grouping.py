"""Figures of the scale-grouping widget: two matrix heatmaps over the same elements, the decode scale
each element is multiplied by (`decode_scale = 1 / encode_scale`, `encode_scale = F / amax_group`, as
`simulations.scaling` names them; coloured by log2) and the relative error |x̂ − x| / |x| of each
element after the scaled cast (coloured by log10; grey = exact), with the outlier's cell outlined.
Tooltips give scales exactly as powers of two; a colour bar beside each map gives the range of its
colours (`colorbar_ranges` computes it from the same columns, `set_colorbar_ranges` applies it
after an update). Pure Bokeh over the `cells` and `outlier` sources that the widget fills.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bokeh.layouts import row

from bokeh.models import ColumnDataSource, LinearColorMapper
from bokeh.models.annotations import ColorBar
from bokeh.palettes import Cividis256, Viridis256

from .style import HIGHLIGHT_COLOR
from .widget_heatmap import heat_colors, heatmap_figure

GROUPING_CELL_COLUMNS = (
    "x", "y", "row", "col", "value", "dequantized", "decode_scale", "log2_decode_scale", "scale_text",
    "group", "rel_error", "log10_rel_error", "scale_color", "error_color",
)

_TOOLTIPS = [
    ("row, col", "@row, @col"), ("x", "@value{0.0000e}"), ("x̂", "@dequantized{0.0000e}"),
    ("decode scale", "@scale_text"), ("group", "@group"), ("|x̂ − x| / |x|", "@rel_error{0.000e}"),
]


def grouping_colors(log2_decode_scale: list[float], log10_rel_error: list[float]) -> tuple[list[str], list[str]]:
    """Cell colours of the scale map (Cividis over log2 scale) and the error map (Viridis over
    log10 relative error; exact elements, whose log is -inf, grey)."""
    return heat_colors(log2_decode_scale, Cividis256), heat_colors(log10_rel_error, Viridis256)


def colorbar_ranges(cells: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """(low, high) of the finite values behind each map's colours, as `heat_colors` spreads them:
    'scale' over log2 decode scale, 'error' over log10 relative error. A single value gets
    (value, value + 1): `heat_colors` paints it with the first colour, the bar's low end."""
    def span(values: Sequence[float]) -> tuple[float, float]:
        finite = [v for v in values if math.isfinite(v)]
        if not finite:
            return (0.0, 1.0)
        lo, hi = min(finite), max(finite)
        return (lo, lo + 1.0) if lo == hi else (lo, hi)

    return {"scale": span(cells["log2_decode_scale"]), "error": span(cells["log10_rel_error"])}


def set_colorbar_ranges(layout: Any, cells: Mapping[str, Any]) -> None:
    """Point the colour bars of a `grouping_figures` layout at the ranges of `cells`."""
    ranges = colorbar_ranges(cells)
    for bar in layout.select({"type": ColorBar}):
        lo, hi = ranges[bar.name]
        bar.color_mapper.update(low=lo, high=hi)


def grouping_figures(sources: dict[str, ColumnDataSource], width: int = 460, height: int = 280) -> Any:
    """Scale heatmap and error heatmap side by side, sharing ranges, the outlier outlined."""
    scale_fig = heatmap_figure(sources["cells"], "decode scale per element (colour: log2)", "column", "row",
                               _TOOLTIPS, width=width, height=height, color_column="scale_color")
    error_fig = heatmap_figure(sources["cells"], "relative error per element (colour: log10; grey = exact)",
                               "column", "row", _TOOLTIPS, width=width, height=height,
                               color_column="error_color")
    error_fig.x_range = scale_fig.x_range
    error_fig.y_range = scale_fig.y_range
    ranges = colorbar_ranges(sources["cells"].data)
    for fig, name, palette, title in ((scale_fig, "scale", Cividis256, "log2 decode scale"),
                                      (error_fig, "error", Viridis256, "log10 rel. error")):
        fig.rect("x", "y", width=1, height=1, source=sources["outlier"], fill_color=None,
                 line_color=HIGHLIGHT_COLOR, line_width=3)
        lo, hi = ranges[name]
        mapper = LinearColorMapper(palette=palette, low=lo, high=hi)
        fig.add_layout(ColorBar(color_mapper=mapper, name=name, title=title, width=10,
                                title_text_font_size="9pt", major_label_text_font_size="8pt"), "right")
    return row(scale_fig, error_fig, sizing_mode="stretch_width")
