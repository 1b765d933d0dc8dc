"""Figures of the recipe lab (`simulations.lab`): the sortable table of tensors × recipes with their
metrics, each tensor's RMS relative error against bits per element, and for one tensor under one
recipe the histogram of magnitudes on a log2 axis — the tensor's own |x| and |x| as the cast sees it
(divided by its group's decode scale) — with the element format's grid, the flush region (rounds to
0) and the clip region (saturates) shaded, and the per-block error map. Every number comes from the
lab's report (`LabReport`, `RecipeDetail`); these builders only lay out columns and draw them.
"""

from __future__ import annotations

import math
from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, LinearColorMapper
from bokeh.models.annotations import BoxAnnotation, ColorBar
from bokeh.palettes import Viridis256
from bokeh.models.widgets.tables import DataTable, NumberFormatter, ScientificFormatter, TableColumn
from bokeh.plotting import figure

from lowprec.simulations.lab.measure import RecipeDetail
from lowprec.simulations.lab.runner import LabReport

from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR, INK, SERIES_PALETTE
from .widget_heatmap import heat_colors, heatmap_figure

#: one colour per tensor in the scatter: the series palette without its ink and dark grey, which the
#: dark theme cannot recolour inside a data column (a near-black series on a dark plot)
TENSOR_PALETTE = tuple(c for c in SERIES_PALETTE if c not in (INK, "#5F5F5F"))

__all__ = ["TABLE_COLUMNS", "TENSOR_PALETTE", "detail_sources", "error_bits_figure", "error_map_figure",
           "error_map_range", "fit_text_columns", "histogram_figure", "report_layout", "results_table",
           "set_error_map_range", "table_data"]

#: table columns: (field, title, number format or None for text, width in px). "sci" is scientific
#: notation with 4 significant digits (`ScientificFormatter`: Bokeh's numbro has no exponent format
#: and printed "0.000e+0" as "+0.02622"); the table keeps these widths (`autosize_mode="none"`): at
#: phone width it scrolls sideways inside its box instead of cutting names ("mlp.u")
TABLE_COLUMNS: tuple[tuple[str, str, str | None, int], ...] = (
    ("tensor", "tensor", None, 190),
    ("layout", "stored as", None, 120),
    ("recipe", "recipe", None, 140),
    ("rank", "rank", "0", 50),
    ("rms_rel_err", "RMS rel. error", "sci", 110),
    ("sqnr_db", "SQNR (dB)", "0.00", 85),
    ("max_abs_err", "max |error|", "sci", 100),
    ("clipped_frac", "clipped", "0.000%", 80),
    ("zero_frac", "flushed to 0", "0.000%", 95),
    ("bits_per_element", "bits / element", "0.000", 100),
    ("note", "note", None, 420),
)
_NUMBERS = [f for f, _, fmt, _ in TABLE_COLUMNS if fmt is not None]


def _number(v: Any) -> float:
    return math.nan if v is None else float(v)


def table_data(report: LabReport) -> dict[str, list[Any]]:
    """One row per tensor × recipe (absent numbers are NaN, the reason in `note`)."""
    data: dict[str, list[Any]] = {f: [] for f, _, _, _ in TABLE_COLUMNS}
    for t in report.tensors:
        ranks = {name: i + 1 for i, name in enumerate(t.ranking)}
        for r in t.results:
            data["tensor"].append(t.name)
            data["layout"].append(t.layout or "float")
            data["recipe"].append(r.recipe)
            data["rank"].append(ranks.get(r.recipe, math.nan))
            for f in _NUMBERS[1:]:
                data[f].append(_number(getattr(r, f)))
            data["note"].append(r.skipped or ("Pareto front" if r.recipe in t.pareto else ""))
    return data


def results_table(source: ColumnDataSource, width: int = 1000, height: int = 320) -> DataTable:
    """The sortable table over `source` (columns of TABLE_COLUMNS); click a header to sort."""
    cols = []
    for f, title, fmt, px in TABLE_COLUMNS:
        kw: dict[str, Any] = {"field": f, "title": title, "width": px}
        if fmt == "sci":
            kw["formatter"] = ScientificFormatter(precision=3, power_limit_high=0, power_limit_low=0, nan_format="–")
        elif fmt is not None:
            kw["formatter"] = NumberFormatter(format=fmt, nan_format="–")
        cols.append(TableColumn(**kw))
    table = DataTable(source=source, columns=cols, sortable=True, index_position=None, width=width, height=height,
                      sizing_mode="stretch_width", autosize_mode="none")
    fit_text_columns(table, source.data)
    return table


#: roughly the width of one character of the table's text, px (13 px sans-serif)
CHAR_PX = 7.2


def fit_text_columns(table: DataTable, data: Any) -> None:
    """Widen the table's text columns (tensor, recipe, note) to their longest entry, between the
    column's declared width and 640 px: the columns keep their widths (no squeezing), so a long
    tensor name ("model.layers.0.self_attn.q_proj.weight") would otherwise be cut."""
    declared = {f: px for f, _, fmt, px in TABLE_COLUMNS if fmt is None}
    for col in table.columns:
        if col.field in declared:
            longest = max((len(str(v)) for v in data.get(col.field, [])), default=0)
            col.width = int(min(640, max(declared[col.field], CHAR_PX * longest + 16)))


def error_bits_figure(source: ColumnDataSource, width: int = 760) -> Any:
    """Each tensor × recipe as a point: bits per element against RMS relative error (log); the
    legend names each tensor's colour (`show_tensor_legend` hides it when colours repeat)."""
    fig = figure(title="RMS relative error against bits per element (each tensor × recipe)", width=width,
                 height=320, y_axis_type="log", x_axis_label="bits per element", y_axis_label="RMS relative error",
                 tools="pan,wheel_zoom,box_zoom,reset")
    fig.scatter("bits_per_element", "plot_err", source=source, size=9, color="color", alpha=0.8,
                legend_field="tensor")
    fig.legend.title = "tensor"
    fig.legend.location = "top_right"
    fig.add_tools(HoverTool(tooltips=[("tensor", "@tensor"), ("recipe", "@recipe"),
                                      ("bits / element", "@bits_per_element{0.000}"),
                                      ("RMS rel. error", "@rms_rel_err{0.000e}"), ("SQNR", "@sqnr_db{0.00} dB")]))
    return fig


def colored(data: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """`data` with a `color` column (one series colour per tensor) and `plot_err`, the error the log
    plot draws: exact results (error 0) and absent ones are left off its scale by a NaN there (the
    table keeps showing `rms_rel_err` itself)."""
    tensors = list(dict.fromkeys(data["tensor"]))
    out = dict(data)
    out["color"] = [TENSOR_PALETTE[tensors.index(t) % len(TENSOR_PALETTE)] for t in data["tensor"]]
    out["plot_err"] = [v if v > 0 else math.nan for v in data["rms_rel_err"]]
    return out


def report_layout(report: LabReport) -> Any:
    """What `lowprec analyze --html` writes: the table (with the layout each tensor came in), the
    error-against-bits plot and, for each pre-quantized tensor, its audit (`plots.audit`)."""
    from .audit import audit_layout

    data = colored(table_data(report))
    source = ColumnDataSource(data)
    parts = [results_table(source), error_bits_figure(source)]
    audits = audit_layout(report)
    if audits is not None:
        parts.append(audits)
    return column(*parts, sizing_mode="stretch_width")


# ------------------------------------------------------------------------------------------------
# one tensor under one recipe
# ------------------------------------------------------------------------------------------------


def detail_sources(detail: RecipeDetail) -> dict[str, dict[str, list[Any]]]:
    """Columns of the histogram (`hist`: bin edges and both counts), the grid lines (`grid`) and the
    error map (`map`: one row per cell, its colour from log10 of its error)."""
    lo = detail.bin_lo
    hist: dict[str, list[Any]] = {"left": lo, "right": [v + detail.bin_width for v in lo], "input": detail.counts_input,
            "scaled": detail.counts_scaled}
    cells: dict[str, list[Any]] = {"x": [], "y": [], "rel_err": [], "log10": []}
    for i, row in enumerate(detail.map_rel_err):
        for j, v in enumerate(row):
            cells["x"].append(j)
            cells["y"].append(i)
            cells["rel_err"].append(v)
            cells["log10"].append(math.log10(v) if v > 0 and math.isfinite(v) else -math.inf)
    cells["color"] = heat_colors(cells["log10"])
    return {"hist": hist, "grid": {"x": detail.grid_log2}, "map": cells}


def histogram_figure(sources: dict[str, ColumnDataSource], width: int = 760) -> tuple[Any, BoxAnnotation,
                                                                                       BoxAnnotation]:
    """The histogram over `hist` with grid lines over `grid`; returns (figure, flush box, clip box):
    the caller moves the boxes' edges (`right` of flush, `left` of clip) for each recipe."""
    fig = figure(title="magnitudes on a log2 axis: the tensor (grey) and as the cast sees them (|x| / scale)",
                 width=width, height=300, x_axis_label="log2 |value|", y_axis_label="elements",
                 tools="pan,wheel_zoom,box_zoom,reset")
    fig.quad(left="left", right="right", bottom=0, top="input", source=sources["hist"], fill_color="#bbbbbb",
             fill_alpha=0.6, line_color=None, legend_label="tensor |x|")
    fig.quad(left="left", right="right", bottom=0, top="scaled", source=sources["hist"], fill_color=CURRENT_COLOR,
             fill_alpha=0.5, line_color=None, legend_label="|x| / decode scale")
    fig.vspan(x="x", source=sources["grid"], line_color="#555555", line_alpha=0.35, line_width=1)
    flush = BoxAnnotation(right=0, fill_color=HIGHLIGHT_COLOR, fill_alpha=0.12)
    clip = BoxAnnotation(left=0, fill_color=DELAYED_COLOR, fill_alpha=0.15)
    fig.add_layout(flush)
    fig.add_layout(clip)
    fig.add_tools(HoverTool(tooltips=[("log2 |value|", "@left{0.000} … @right{0.000}"), ("tensor", "@input"),
                                      ("as cast", "@scaled")]))
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    return fig, flush, clip


def error_map_range(cells: Any) -> tuple[float, float]:
    """(low, high) of the finite log10 errors the map's colours spread over (`heat_colors`); a single
    value gets (value, value + 1), as it is painted with the palette's first colour."""
    finite = [v for v in cells.get("log10", []) if math.isfinite(v)]
    if not finite:
        return (0.0, 1.0)
    lo, hi = min(finite), max(finite)
    return (lo, lo + 1.0) if lo == hi else (lo, hi)


def error_map_figure(source: ColumnDataSource, width: int = 420) -> Any:
    """The per-block RMS relative error of the matrix view, one cell per tile (log colour), with a
    colour bar in log10 of the error (`set_error_map_range` follows the data)."""
    fig = heatmap_figure(source, "RMS relative error per block (log colour; grey: exact)", "column block",
                         "row block", [("block", "(@y, @x)"), ("RMS rel. error", "@rel_err{0.000e}")],
                         width=width, height=320)
    lo, hi = error_map_range(source.data)
    mapper = LinearColorMapper(palette=Viridis256, low=lo, high=hi)
    fig.add_layout(ColorBar(color_mapper=mapper, title="log10 RMS rel. error", width=10, name="error_map_bar",
                            title_text_font_size="9pt", major_label_text_font_size="8pt"), "right")
    return fig


def set_error_map_range(fig: Any, cells: Any) -> None:
    """Point the map's colour bar at the range of `cells`' colours."""
    lo, hi = error_map_range(cells)
    for bar in fig.select({"type": ColorBar}):
        bar.color_mapper.update(low=lo, high=hi)
