"""Bin explorer figures: the drawing of a `formats.explain.BinView`, nothing computed here.

`bins_sources(view)` turns the view that `formats.explain_value` computed (code, bit fields,
value, errors, the window of neighbouring values with their rounding bins, log2 gaps, code table)
into plain column dicts for `ColumnDataSource`s — placing marks, choosing colours, writing texts —
and the `*_figure` builders draw them. Colours and the exact `7/4 × 2^8` texts are those of
`app.plots.style`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import LabelSet
from bokeh.models.widgets.tables import DataTable, StringEditor, StringFormatter, TableColumn
from bokeh.plotting import figure

from lowprec import numtext
from lowprec.app.theme import refresh_on_data_change
from lowprec.formats import BinView

from .style import (
    CURRENT_COLOR,
    DELAYED_COLOR,
    ERROR_COLOR,
    EXPONENT_COLOR,
    INK,
    MANTISSA_COLOR,
    SIGN_COLOR,
    power_of_two_text,
)

FIELD_COLORS = {"sign": SIGN_COLOR, "exponent": EXPONENT_COLOR, "mantissa": MANTISSA_COLOR}
#: alternating shades of neighbouring rounding bins (drawn half transparent: readable on both themes)
BIN_SHADES = ("#9fb3c8", "#d8c49a")
BIN_ALPHA = 0.45
POINT_FILL = "#a3adb8"  # a representable value
POINT_FILL_SELECTED = CURRENT_COLOR  # the value x encodes to


def _interval_text(lo: float, hi: float, lo_c: bool, hi_c: bool) -> str:
    return f"{'[' if lo_c else '('}{lo:.6g}, {hi:.6g}{']' if hi_c else ')'}"


def _finite_or(v: float, default: float) -> float:
    return v if math.isfinite(v) else default


def bins_sources(view: BinView) -> dict[str, dict[str, list[Any]]]:
    """Column dicts for every figure of the bin explorer (keys: bits, summary, bins, points,
    ties, marker, compare_points, gaps, compare_gaps, gap_marker, table)."""
    b = view.bins
    values = b["value"]
    span = (max(values) - min(values)) if len(values) > 1 else 1.0
    pad = span / max(len(values), 1)
    left_lim, right_lim = min(values) - pad, max(values) + pad
    lo = [_finite_or(v, left_lim) for v in b["lo"]]
    hi = [_finite_or(v, right_lim) for v in b["hi"]]
    shade = [BIN_SHADES[i % 2] for i in range(len(values))]
    selected = [v == view.main.value for v in values]
    fill = [POINT_FILL_SELECTED if s else POINT_FILL for s in selected]
    # tie markers: at each finite edge, a triangle pointing into the bin that owns the edge
    tie_x: list[float] = []
    tie_angle: list[float] = []
    for i in range(len(values)):
        if math.isfinite(b["lo"][i]) and b["lo_closed"][i]:
            tie_x.append(b["lo"][i])
            tie_angle.append(-math.pi / 2)  # points right, into this bin
        if math.isfinite(b["hi"][i]) and b["hi_closed"][i]:
            tie_x.append(b["hi"][i])
            tie_angle.append(math.pi / 2)  # points left
    codes_hex = [f"0x{c:02X}" for c in b["code"]]
    scale = view.decode_scale
    exact = [power_of_two_text(v / scale) + ("" if scale == 1 else f" × {scale:g}") for v in values]
    interval = [_interval_text(l_, h_, lc, hc) for l_, h_, lc, hc in
                zip(b["lo"], b["hi"], b["lo_closed"], b["hi_closed"])]
    x = view.x
    x_plot = min(max(x, left_lim), right_lim) if not math.isnan(x) else (left_lim + right_lim) / 2
    casts = [c for c in (view.main, view.compare) if c is not None]

    def dec(v: float) -> str:
        return f"{v:.8g}"

    summary = {
        "format": [c.format for c in casts],
        "code": [c.hex for c in casts],
        "bits": [c.bits for c in casts],
        "value": [dec(c.value) for c in casts],
        "exact": [c.exact + ("" if scale == 1 else f" × {scale:g}") for c in casts],
        "cls": [c.cls for c in casts],
        "error": [dec(c.error) for c in casts],
        "rel_error": [f"{c.rel_error:.3g}" for c in casts],
    }
    fields = view.main.fields
    nb = len(fields)
    bits: dict[str, list[Any]] = {
        "x": list(range(nb)),
        "bit": list(view.main.bits),
        "field": list(fields),
        "color": [FIELD_COLORS[fl] for fl in fields],
        "weight": [f"bit {nb - 1 - i}" for i in range(nb)],
    }
    gm_x: list[float] = []
    gm_y: list[float] = []
    if math.isfinite(view.main.value) and view.main.value > 0:
        lv = math.log2(view.main.value)
        gx = view.gaps["log2_value"]
        if gx:
            j = int(np.argmin(np.abs(np.array(gx) - lv)))
            gm_x, gm_y = [gx[j]], [view.gaps["log2_gap"][j]]
    table: dict[str, list[Any]] = {k: [] for k in ("code", "hex", "bits", "cls", "value", "exact", "gap")}
    for row in view.table:
        table["code"].append(row["code"])
        table["hex"].append(row["hex"])
        table["bits"].append(row["bits"])
        table["cls"].append(row["class"])
        fv = float(row["value"])
        table["value"].append(numtext.general(fv * scale, 8))
        table["exact"].append(power_of_two_text(fv))
        g = float(row["gap_next"])
        table["gap"].append(f"{g * scale:.6g}" if math.isfinite(g) else "—")
    return {
        "bits": bits,
        "summary": summary,
        "bins": {"left": lo, "right": hi, "value": values, "code": codes_hex, "fill": shade,
                 "exact": exact, "interval": interval},
        "points": {"x": values, "y": [0.5] * len(values), "code": codes_hex, "exact": exact,
                   "interval": interval, "color": fill},
        "ties": {"x": tie_x, "y": [0.12] * len(tie_x), "angle": tie_angle},
        # the label sits on the side of the line with room for it: right of x in the left half of
        # the window, left of it in the right half (`x = 465` at the right edge was cut off)
        "marker": {"x0": [x_plot], "x1": [x_plot], "y0": [-0.05], "y1": [1.05],
                   "label": [f"x = {view.input_text}"],
                   "align": ["right" if x_plot > (left_lim + right_lim) / 2 else "left"],
                   "dx": [-4 if x_plot > (left_lim + right_lim) / 2 else 4]},
        "compare_points": {"x": view.compare_values, "y": [-0.3] * len(view.compare_values),
                           "exact": [power_of_two_text(v / scale) + ("" if scale == 1 else f" × {scale:g}")
                                     for v in view.compare_values]},
        "gaps": dict(view.gaps),
        "compare_gaps": dict(view.compare_gaps) if view.compare_gaps else
        {"log2_value": [], "log2_gap": [], "value": [], "gap": []},
        "gap_marker": {"x": gm_x, "y": gm_y},
        "table": table,
    }


def swatch(field: str) -> str:
    """A field's colour key for HTML text: a coloured square (no text, so no contrast to fail) and
    the field's name in the text colour."""
    return (f"<span style='display:inline-block;width:0.8em;height:0.8em;vertical-align:-0.05em;"
            f"background:{FIELD_COLORS[field]}'></span> {field}")


def toggle_css(field: str) -> str:
    """Stylesheet of a bit toggle in its field's colour (filled when the bit is 1), with a visible
    keyboard focus ring. The 0/1 on the button is drawn from its pressed state (`::after`), not from
    its label: the label (`bit_toggle_labels`, visually hidden, read by screen readers) changes only
    with the format, so flipping a bit or typing a value never makes BokehJS rebuild the button and
    lay the page out again (a label change cost the browser about 40 ms per bit)."""
    colour = FIELD_COLORS[field]
    return (f".bk-btn.bk-btn-default {{ background: var(--lp-bg, #fff) !important; color: {colour} !important;"
            f" border: 2px solid {colour} !important; font-weight: bold; padding: 2px 0; font-size: 0 !important; }}"
            f" .bk-btn.bk-btn-default::after {{ content: \"0\"; font-size: 14px; }}"
            f" .bk-btn.bk-btn-default.bk-active::after {{ content: \"1\"; }}"
            f" .bk-btn.bk-btn-default.bk-active {{ background: {colour} !important; color: #fff !important; }}"
            f" .bk-btn:focus-visible {{ outline: 3px solid var(--lp-focus, #1a66d6) !important;"
            f" outline-offset: 2px; }}")


def bit_toggle_labels(fields: Sequence[str]) -> list[str]:
    """The bit toggles' (screen-reader) labels for a format whose bits, most significant first,
    belong to `fields`: "sign bit 7: ", "exponent bit 6: ", … (the pressed state, drawn as 0/1,
    completes the name)."""
    n = len(fields)
    return [f"{field} bit {n - 1 - i}: " for i, field in enumerate(fields)]


def bits_figure(source: ColumnDataSource, title: str = "bits") -> Any:
    """One coloured cell per bit (sign red, exponent blue, mantissa green) with its 0/1."""
    p = figure(height=70, width=520, title=title, toolbar_location=None, tools="",
               x_range=Range1d(start=-0.5, end=15.5), y_range=Range1d(start=-0.5, end=0.5))
    p.rect(x="x", y=0, width=0.92, height=0.9, source=source, fill_color="color", line_color=None)
    p.add_layout(LabelSet(x="x", y=0, text="bit", source=source, text_color="white",
                          text_align="center", text_baseline="middle", text_font_size="14px"))
    p.add_tools(HoverTool(tooltips=[("field", "@field"), ("", "@weight")]))
    p.axis.visible = False
    p.grid.visible = False
    return p


def number_line_figure(bins: ColumnDataSource, points: ColumnDataSource, ties: ColumnDataSource,
                       marker: ColumnDataSource, compare_points: ColumnDataSource) -> Any:
    """The representable values near x with their rounding bins (shaded), the tie markers
    (a triangle at an edge points into the bin that owns the midpoint), x as a dark line and the
    compare format's values below."""
    p = figure(height=240, width=720, title="number line: values, rounding bins and x",
               x_axis_label="value (format grid × decode_scale)",
               tools="xpan,xwheel_zoom,reset", toolbar_location="right", y_range=Range1d(start=-0.55, end=1.15))
    quads = p.quad(left="left", right="right", bottom=0, top=1, source=bins, fill_color="fill",
                   fill_alpha=BIN_ALPHA, line_color="#8899aa", line_alpha=0.6)
    pts = p.scatter(x="x", y="y", source=points, size=11, fill_color="color", line_color=INK)
    p.scatter(x="x", y="y", source=ties, marker="triangle", angle="angle", size=9,
              fill_color=INK, line_color=None)
    p.segment(x0="x0", x1="x1", y0="y0", y1="y1", source=marker, line_color=ERROR_COLOR, line_width=3)
    p.add_layout(LabelSet(x="x0", y="y1", text="label", source=marker, text_color=ERROR_COLOR,
                          text_font_size="12px", y_offset=-16, x_offset="dx", text_align="align"))
    cmp = p.scatter(x="x", y="y", source=compare_points, marker="diamond", size=9,
                    fill_color=DELAYED_COLOR, line_color=None, legend_label="compare format")
    p.add_tools(HoverTool(renderers=[pts, quads], tooltips=[
        ("code", "@code"), ("value", "@exact"), ("bin", "@interval")]))
    p.add_tools(HoverTool(renderers=[cmp], tooltips=[("compare value", "@exact")]))
    p.yaxis.visible = False
    p.ygrid.visible = False
    p.legend.location = "bottom_right"
    p.legend.label_text_font_size = "10px"
    return p


def gap_figure(gaps: ColumnDataSource, compare_gaps: ColumnDataSource,
               gap_marker: ColumnDataSource) -> Any:
    """log2 of the gap to the next value against log2 of the value (positive range): a plateau
    over the subnormals, then one step up per binade."""
    p = figure(height=260, width=520, title="gap between neighbours (log2)",
               x_axis_label="log2 value", y_axis_label="log2 gap to next",
               tools="pan,wheel_zoom,reset")
    main = p.step(x="log2_value", y="log2_gap", source=gaps, mode="after", line_color=CURRENT_COLOR,
                  line_width=2, legend_label="format")
    p.step(x="log2_value", y="log2_gap", source=compare_gaps, mode="after", line_color=DELAYED_COLOR,
           line_width=2, line_dash="dashed", legend_label="compare")
    p.scatter(x="x", y="y", source=gap_marker, size=10, fill_color=ERROR_COLOR, line_color=INK)
    p.add_tools(HoverTool(renderers=[main], tooltips=[("value", "@value"), ("gap", "@gap = 2^@log2_gap")]))
    p.legend.location = "top_left"
    return p


def label_legends(fig: Any, labels: list[str | None]) -> None:
    """Rename the legend entries of a figure built here, in order (format names follow the view);
    None hides an entry (no compare format)."""
    items = fig.legend[0].items if fig.legend else []
    for item, text in zip(items, labels):
        item.visible = text is not None
        item.label = {"value": text if text is not None else ""}


def _plain_cells() -> dict[str, Any]:
    """One text formatter and one editor for every column of a table (a column's own pair is two
    more models to build, send and render per column: 26 per bin-explorer page). Per table: a
    Bokeh model belongs to one document."""
    return {"formatter": StringFormatter(), "editor": StringEditor()}


def summary_table(source: ColumnDataSource) -> DataTable:
    """The encoded answer per format (main, compare): code, bits, value, exact value, error."""
    cells = _plain_cells()
    cols = [TableColumn(field=k, title=t, width=w, **cells) for k, t, w in (
        ("format", "format", 70), ("code", "code", 60), ("bits", "bits", 130),
        ("value", "value", 100), ("exact", "exact", 120), ("cls", "class", 70),
        ("error", "error", 100), ("rel_error", "rel. error", 80))]
    # columns keep their widths (no squeezing to the window): at phone width the table scrolls
    # sideways inside its box instead of cutting its cells ("0100010" became "01000")
    return refresh_on_data_change(DataTable(source=source, columns=cols, height=90, width=760,
                                            index_position=None, autosize_mode="none"))


def code_table_figure(source: ColumnDataSource) -> DataTable:
    """Every code of a ≤ 8-bit format."""
    cells = _plain_cells()
    cols = [TableColumn(field=k, title=t, width=w, **cells) for k, t, w in (
        ("hex", "code", 60), ("bits", "bits", 90), ("cls", "class", 80), ("value", "value", 100),
        ("exact", "exact", 120), ("gap", "gap to next", 90))]
    return refresh_on_data_change(DataTable(source=source, columns=cols, height=300, width=600,
                                            index_position=None, autosize_mode="none"))


def bins_layout(view: BinView) -> Any:
    """All bin-explorer figures for one view, as a standalone Bokeh column (for --html and tests)."""
    data = bins_sources(view)
    src = {k: ColumnDataSource(data=v) for k, v in data.items()}
    return column(
        bits_figure(src["bits"]), summary_table(src["summary"]),
        number_line_figure(src["bins"], src["points"], src["ties"], src["marker"], src["compare_points"]),
        gap_figure(src["gaps"], src["compare_gaps"], src["gap_marker"]),
        code_table_figure(src["table"]),
    )
