"""Cell heatmaps shared by the simulation widgets (scale grouping: scales and error per element;
recompute divergence: forward-vs-recompute difference per layer and step). Pure Bokeh builders over a
`ColumnDataSource` with one row per cell (`x`, `y`, a value column and an explicit `color` column
computed by `heat_colors`), so the colour of every cell is data a test can read, and values that
must stand out (exact zero, "bitwise identical") get a fixed colour instead of the palette's end.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from bokeh.models import ColumnDataSource, HoverTool
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

#: colour of cells whose value is exactly zero (e.g. bitwise-identical recompute)
ZERO_COLOR = "#e8e8e8"


def heat_colors(
    values: Sequence[float], palette: Sequence[str] = Viridis256, zero_color: str | None = ZERO_COLOR
) -> list[str]:
    """Map values linearly onto `palette` between their finite min and max; exact zeros (when
    `zero_color` is given) and non-finite values get `zero_color` / the palette's last colour."""
    finite = [v for v in values if math.isfinite(v) and not (zero_color is not None and v == 0)]
    lo = min(finite) if finite else 0.0
    hi = max(finite) if finite else 1.0
    span = hi - lo
    n = len(palette)
    out = []
    for v in values:
        if zero_color is not None and v == 0:
            out.append(zero_color)
        elif not math.isfinite(v):
            out.append(palette[-1])
        else:
            idx = 0 if span == 0 else int((v - lo) / span * (n - 1))
            out.append(palette[max(0, min(n - 1, idx))])
    return out


def heatmap_figure(
    source: ColumnDataSource,
    title: str,
    x_label: str,
    y_label: str,
    tooltips: list[tuple[str, str]],
    width: int = 420,
    height: int = 300,
    flip_y: bool = True,
) -> Any:
    """A figure of unit `rect` cells at (`x`, `y`) coloured by the source's `color` column. With
    `flip_y` row 0 is drawn at the top, as a matrix is printed."""
    fig = figure(title=title, width=width, height=height, x_axis_label=x_label, y_axis_label=y_label,
                 tools="hover,pan,wheel_zoom,box_zoom,reset", match_aspect=False)
    fig.rect("x", "y", width=1, height=1, source=source, fill_color="color", line_color=None)
    if flip_y:
        fig.y_range.flipped = True
    fig.grid.visible = False
    hover = fig.select_one(HoverTool)
    hover.tooltips = tooltips
    return fig
