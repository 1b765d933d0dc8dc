"""Figures of the accumulator study (`simulations.gemm.study`): the error of each accumulation against
K (log–log, one line per instruction and promotion), the bit picture of one fused step (each term's
bits lined up under the step's largest exponent, the cut between the kept and the dropped bits) and
the per-role table of real stacks. Pure builders: `gemm_sources(study, metric)` turns a result into
column data (every number comes from the result), `gemm_figures(sources)` draws it once.

Colours: the kept bits of a term in the series purple, the bits the alignment cuts off in orange
(the three bit colours of `style` stay reserved for sign, exponent and mantissa); a 1 is dark, a 0
light, and every cell carries its digit, so the picture reads without colour.
"""

from __future__ import annotations

import math
from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import Span
from bokeh.models.widgets.tables import DataTable, StringEditor, StringFormatter, TableColumn
from bokeh.plotting import figure

from lowprec import numtext

from .style import INK, SERIES_PALETTE

__all__ = ["CELL_COLORS", "gemm_figures", "gemm_layout", "gemm_sources", "place_cut"]

#: (kept?, bit) → fill colour of a cell of the bit picture
CELL_COLORS = {(True, "1"): "#CC79A7", (True, "0"): "#F3DCE9", (False, "1"): "#E69F00", (False, "0"): "#FBEBC9"}
METRIC_TITLES = {"max_rel": "max |d − exact| / |exact|", "median_rel": "median |d − exact| / |exact|",
                 "max_norm": "max |d − exact| / Σ|a·b|"}


def _positive(values: list[float]) -> list[float]:
    """Errors for a log axis: 0 and non-finite become NaN (a gap), drawn nowhere."""
    return [v if (isinstance(v, float) and math.isfinite(v) and v > 0) else math.nan for v in values]


def gemm_sources(study: Any, metric: str | None = None) -> dict[str, dict[str, list[Any]]]:
    """Column data of a GemmStudy: `curves` (one row per curve: xs, ys), `points` (every point, for
    hover), `cells` (the bit picture's cells), `labels` (its row labels), `heads` (column exponents),
    `stacks` (the per-role table)."""
    metric = metric or study.config.metric
    curves: dict[str, list[Any]] = {"xs": [], "ys": [], "label": [], "color": [], "dash": []}
    points: dict[str, list[Any]] = {"k": [], "err": [], "label": [], "color": [], "max_rel": [], "median_rel": [],
                                    "max_norm": []}
    for i, c in enumerate(study.curves):
        color = SERIES_PALETTE[i % len(SERIES_PALETTE)]
        ys = _positive(c.values(metric))
        curves["xs"].append([float(k) for k in c.k])
        curves["ys"].append(ys)
        curves["label"].append(c.label)
        curves["color"].append(color)
        curves["dash"].append("solid" if c.promote_every is None else "dashed")
        for j, k in enumerate(c.k):
            points["k"].append(float(k))
            points["err"].append(ys[j])
            points["label"].append(c.label)
            points["color"].append(color)
            points["max_rel"].append(numtext.percent(c.max_rel[j]))
            points["median_rel"].append(numtext.percent(c.median_rel[j]))
            points["max_norm"].append(numtext.percent(c.max_norm[j]))
    p = study.picture
    cells: dict[str, list[Any]] = {"x": [], "y": [], "bit": [], "color": [], "term": [],
                                   "exponent": [], "part": []}
    labels: dict[str, list[Any]] = {"x": [], "y": [], "label": [], "value": [], "shift": [], "kept": [],
                                    "dropped": []}
    n = len(p.rows)
    for r_i, row in enumerate(p.rows):
        y = float(n - 1 - r_i)
        labels["x"].append(-0.7)
        labels["y"].append(y)
        sign = "−" if row.negative else "+"
        labels["label"].append(f"{sign} {row.label}" + (" …" if row.beyond else ""))
        labels["value"].append(repr(row.value))
        labels["shift"].append(str(row.shift))
        labels["kept"].append(repr(row.kept))
        labels["dropped"].append(repr(row.dropped))
        for j, ch in enumerate(row.bits):
            if ch == " ":
                continue
            kept = j < p.cut
            cells["x"].append(float(j))
            cells["y"].append(y)
            cells["bit"].append(ch)
            cells["color"].append(CELL_COLORS[(kept, ch)])
            cells["term"].append(row.label)
            cells["exponent"].append(f"2^{p.top - j}")
            cells["part"].append("kept" if kept else "cut off")
    heads: dict[str, list[Any]] = {"x": [], "y": [], "text": []}
    for j in range(p.columns):
        e = p.top - j
        if j == 0 or e == p.e_max or j == p.cut - 1 or j == p.cut or j == p.columns - 1 or e % 4 == 0:
            heads["x"].append(float(j))
            heads["y"].append(float(n) + 0.2)
            heads["text"].append(str(e))
    stacks: dict[str, list[Any]] = {"stack": [], "recipe": [], "role": [], "setting": [], "accumulation": [],
                                    "operands": [], "error": []}
    for s in study.stacks:
        stacks["stack"].append(s.row.stack)
        stacks["recipe"].append(s.row.recipe)
        stacks["role"].append(s.row.role)
        stacks["setting"].append(s.row.setting)
        every = "no promotion" if s.row.promote_every is None else f"every {s.row.promote_every}"
        stacks["accumulation"].append(f"{s.row.accumulation} ({every})")
        stacks["operands"].append(f"{s.row.a_format}×{s.row.b_format}")
        stacks["error"].append(numtext.percent(getattr(s, metric)))
    return {"curves": curves, "points": points, "cells": cells, "labels": labels, "heads": heads,
            "stacks": stacks}


def _src(data: Any) -> ColumnDataSource:
    return data if isinstance(data, ColumnDataSource) else ColumnDataSource(data)


def gemm_figures(sources: dict[str, Any], metric: str = "median_rel", width: int = 760) -> tuple[Any, Any, Any]:
    """(error against K, bit picture, per-role table) over the sources (column dicts or
    ColumnDataSources; a widget passes its own). The picture's cut line is a `Span` of the returned
    figure (`place_cut` moves it)."""
    curves, points = _src(sources["curves"]), _src(sources["points"])
    err = figure(title=f"error against K ({METRIC_TITLES.get(metric, metric)})", width=width, height=320,
                 x_axis_type="log", y_axis_type="log", x_axis_label="K (elements summed)",
                 y_axis_label="error of the output", tools="pan,wheel_zoom,box_zoom,reset")
    err.multi_line("xs", "ys", source=curves, line_color="color", line_dash="dash", line_width=2,
                   legend_field="label")
    err.scatter("k", "err", source=points, color="color", size=6)
    err.add_tools(HoverTool(tooltips=[("", "@label"), ("K", "@k{0}"), ("max rel", "@max_rel"),
                                      ("median rel", "@median_rel"), ("max vs Σ|a·b|", "@max_norm")]))
    err.legend.location = "top_left"
    err.legend.label_text_font_size = "9pt"

    cells, labels, heads = _src(sources["cells"]), _src(sources["labels"]), _src(sources["heads"])
    pic = figure(title="one step of one dot product, bit by bit (orange: cut off)", width=width, height=620,
                 tools="pan,wheel_zoom,reset", x_range=Range1d(start=-12.0, end=45.0), toolbar_location="above")
    pic.rect("x", "y", width=0.92, height=0.86, source=cells, fill_color="color", line_color=None)
    pic.text("x", "y", text="bit", source=cells, text_align="center", text_baseline="middle",
             text_font_size="8pt", text_color="#000000")
    pic.text("x", "y", text="label", source=labels, text_align="right", text_baseline="middle",
             text_font_size="8pt", text_color=INK)
    pic.text("x", "y", text="text", source=heads, text_align="center", text_baseline="bottom",
             text_font_size="7pt", text_color=INK)
    pic.add_tools(HoverTool(tooltips=[("term", "@term"), ("bit of", "@exponent"), ("", "@part")]))
    cut = Span(location=0.0, dimension="height", line_color=INK, line_width=2, line_dash="dashed")
    pic.add_layout(cut)
    pic.xaxis.visible = False
    pic.yaxis.visible = False
    pic.xgrid.visible = False
    pic.ygrid.visible = False

    formatter, editor = StringFormatter(), StringEditor()
    table = DataTable(source=_src(sources["stacks"]), width=width, height=260, index_position=None,
                      columns=[TableColumn(field=f, title=t, width=w, formatter=formatter, editor=editor)
                               for f, t, w in (
                          ("stack", "stack", 120), ("recipe", "recipe", 170), ("role", "GEMM", 45),
                          ("setting", "what it sets", 200), ("accumulation", "accumulation (modelled)", 130),
                          ("operands", "operands", 95), ("error", "model error", 75))])
    return err, pic, table


def place_cut(pic: Any, picture: Any) -> None:
    """Move the picture's cut line and x range to a BitPicture's columns."""
    for span in pic.select({"type": Span}):
        span.location = picture.cut - 0.5
    pic.x_range.start = -12.0
    pic.x_range.end = float(picture.columns) + 0.5


def gemm_layout(study: Any) -> Any:
    """All three, as one standalone Bokeh column (for --html and tests)."""
    data = gemm_sources(study)
    err, pic, table = gemm_figures({k: ColumnDataSource(v) for k, v in data.items()}, study.config.metric)
    place_cut(pic, study.picture)
    return column(err, pic, table)

