"""Cell heatmaps shared by the simulation widgets (scale grouping: scales and error per element;
recompute divergence: forward-vs-recompute difference per layer and step). Pure Bokeh builders over a
`ColumnDataSource` with one row per cell (`x`, `y`, a value column and an explicit `color` column
computed by `heat_colors`), so the colour of every cell is data a test can read, and values that
must stand out (an exact zero error, "bitwise identical") get a fixed colour outside the palette.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from bokeh.models import ColumnDataSource, DataRange1d, HoverTool
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

#: colour of cells whose value is exactly zero (e.g. bitwise-identical recompute)
ZERO_COLOR = "#e8e8e8"


def heat_colors(values: Sequence[float], palette: Sequence[str] = Viridis256,
                special_color: str = ZERO_COLOR) -> list[str]:
    """Map finite values linearly onto `palette` between their min and max (all equal: the first
    colour); non-finite values (e.g. log10 of an exact zero) get `special_color`."""
    finite = [v for v in values if math.isfinite(v)]
    lo = min(finite) if finite else 0.0
    hi = max(finite) if finite else 1.0
    span = hi - lo
    n = len(palette)
    out = []
    for v in values:
        if not math.isfinite(v):
            out.append(special_color)
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
    color_column: str = "color",
) -> Any:
    """A figure of unit `rect` cells at (`x`, `y`) coloured by the source's `color_column`. With
    `flip_y` row 0 is drawn at the top, as a matrix is printed."""
    fig = figure(title=title, width=width, height=height, x_axis_label=x_label, y_axis_label=y_label,
                 tools="pan,wheel_zoom,box_zoom,reset", y_range=DataRange1d(flipped=flip_y))
    fig.rect("x", "y", width=1, height=1, source=source, fill_color=color_column, line_color=None)
    fig.grid.visible = False
    fig.add_tools(HoverTool(tooltips=tooltips))
    return fig
