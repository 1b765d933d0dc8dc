"""Figures of the audit of a pre-quantized tensor (`simulations.lab.audit.TensorAudit`): the facts as a
two-column table, the histogram of log2(block scale), the code-usage histogram, and the table of the
blocks whose scale a UE8M0 kernel would truncate. Every number comes from the audit; these builders
only lay out columns and draw them (the RecipeLab page and `lowprec analyze --html`)."""

from __future__ import annotations

import math
from typing import Any

from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.widgets.markups import Div
from bokeh.models.widgets.tables import DataTable, NumberFormatter, ScientificFormatter, TableColumn
from bokeh.plotting import figure

from lowprec import numtext
from lowprec.simulations.lab.audit import TensorAudit
from lowprec.simulations.lab.runner import LabReport

from .style import CURRENT_COLOR, DELAYED_COLOR

__all__ = ["AFFECTED_COLUMNS", "affected_table", "audit_facts", "audit_layout", "audit_sources", "code_figure",
           "empty_audit_sources", "scale_figure", "table_height"]

#: the affected-blocks table: (field, title, number format or None for text)
AFFECTED_COLUMNS: tuple[tuple[str, str, str | None], ...] = (
    ("block", "block", None),
    ("scale", "stored scale", "sci"),
    ("kept", "UE8M0 keeps", "sci"),
    ("factor", "× factor", "0.0000"),
)


def audit_facts(audit: TensorAudit) -> dict[str, list[str]]:
    """The audit's facts as rows of (what, value) text."""
    rows: list[tuple[str, str]] = [
        ("layout", f"{audit.layout} ({audit.producer})"),
        ("lowprec recipe with the same codes and scales", audit.recipe),
        ("element codes", audit.element),
        ("block scales", f"{audit.scale_storage}, {audit.blocks} block(s) of {audit.tile[0]}×{audit.tile[1]}"),
    ]
    if audit.second_level is not None:
        rows.append(("second-level scale (FP32)", numtext.general(audit.second_level, 6)))
    rows += [
        ("scale range", f"{numtext.general(audit.scale_min, 4, none=numtext.ABSENT)} … "
                        f"{numtext.general(audit.scale_max, 4, none=numtext.ABSENT)}"),
        ("zero scales / all-zero blocks / non-finite scales",
         f"{audit.zero_scale_blocks} / {audit.zero_code_blocks} / {audit.nonfinite_blocks}"),
        ("blocks at the scale format's ends", "; ".join(f"{k}: {v}" for k, v in audit.ends.items()) or "none"),
        ("codes used / effective bits", f"{audit.codes_used} / {audit.effective_bits:.3f} bits"),
        ("elements at ±max of the element format", f"{audit.at_max} of {audit.numel}"),
    ]
    if audit.non_pow2_blocks is not None:
        rows.append(("scales that are not powers of two", f"{audit.non_pow2_blocks} of {audit.blocks}"))
        t = audit.truncation or {}
        if audit.non_pow2_blocks:
            rows.append(("a UE8M0 kernel keeping only their exponent",
                         f"shrinks those blocks by {t['factor_min']:.3f}–{t['factor_max']:.3f}: weight error "
                         f"{numtext.general(t['weight_rel_err'], 3, none=numtext.ABSENT)}, error of y = x Wᵀ "
                         f"{numtext.general(t['product_rel_err'], 3, none=numtext.ABSENT)} "
                         f"({t['tokens']} tokens of {t['activation']})"))
    rows.append(("elements where the producer's arithmetic differs from the recipe's exact dequantization",
                 str(audit.producer_vs_recipe)))
    return {"what": [r[0] for r in rows], "value": [r[1] for r in rows]}


def empty_audit_sources() -> dict[str, dict[str, list[Any]]]:
    return {"facts": {"what": [], "value": []}, "scales": {"left": [], "right": [], "count": []},
            "codes": {"code": [], "value": [], "count": [], "hex": [], "color": []},
            "affected": {f: [] for f, _, _ in AFFECTED_COLUMNS}}


def audit_sources(audit: TensorAudit) -> dict[str, dict[str, list[Any]]]:
    """Columns of the facts table, the scale histogram (one bin per binade of log2 scale), the code
    histogram (one bar per code; codes at ±max in another colour) and the affected blocks."""
    max_mag = max((abs(v) for v in audit.code_values if math.isfinite(v)), default=0.0)
    codes: dict[str, list[Any]] = {"code": list(range(len(audit.code_counts))),
             "value": [numtext.general(v, 6) for v in audit.code_values],
             "count": list(audit.code_counts), "hex": [f"0x{c:02X}" for c in range(len(audit.code_counts))],
             "color": [DELAYED_COLOR if math.isfinite(v) and abs(v) == max_mag else CURRENT_COLOR
                       for v in audit.code_values]}
    scales: dict[str, list[Any]] = {"left": [float(b) for b in audit.scale_log2_bins], "right": [b + 1.0 for b in audit.scale_log2_bins],
              "count": list(audit.scale_log2_counts)}
    affected: dict[str, list[Any]] = {f: [] for f, _, _ in AFFECTED_COLUMNS}
    for a in audit.affected:
        affected["block"].append(f"({a['block'][0]}, {a['block'][1]})")
        for f in ("scale", "kept", "factor"):
            affected[f].append(float(a[f]))
    return {"facts": audit_facts(audit), "scales": scales, "codes": codes, "affected": affected}


def facts_table(source: ColumnDataSource, height: int = 300) -> DataTable:
    return DataTable(source=source, columns=[TableColumn(field="what", title="audit", width=330),
                                             TableColumn(field="value", title="value", width=600)],
                     index_position=None, sortable=False, height=height, sizing_mode="stretch_width")


def scale_figure(source: ColumnDataSource, width: int = 460) -> Any:
    """Blocks per binade of their decode scale."""
    fig = figure(title="block scales: blocks per binade of log2(scale)", width=width, height=260,
                 x_axis_label="log2 scale", y_axis_label="blocks", tools="pan,wheel_zoom,reset")
    fig.quad(left="left", right="right", bottom=0, top="count", source=source, fill_color=CURRENT_COLOR,
             fill_alpha=0.7, line_color="white")
    fig.add_tools(HoverTool(tooltips=[("log2 scale", "@left{0} … @right{0}"), ("blocks", "@count")]))
    return fig


def code_figure(source: ColumnDataSource, width: int = 460) -> Any:
    """Elements per element code (the codes at ±max of the format in the second colour)."""
    fig = figure(title="element codes: how often each is used (±max in orange)", width=width, height=260,
                 x_axis_label="code", y_axis_label="elements", tools="pan,wheel_zoom,reset")
    fig.vbar(x="code", top="count", width=0.9, source=source, color="color")
    fig.add_tools(HoverTool(tooltips=[("code", "@hex"), ("value", "@value"), ("elements", "@count")]))
    return fig


#: the affected-blocks table's row and header heights (Bokeh's DataTable defaults) and the most rows
#: it shows before it scrolls
ROW_PX, HEADER_PX, ROWS_SHOWN = 25, 30, 10


def table_height(rows: int) -> int:
    """The height that shows `rows` rows whole (a cut last row read as a missing block), at most
    ROWS_SHOWN of them; more scroll inside the table."""
    return HEADER_PX + ROW_PX * max(1, min(rows, ROWS_SHOWN))


def affected_table(source: ColumnDataSource, height: int | None = None) -> DataTable:
    """The blocks a UE8M0 kernel would truncate most (the worst first), as high as its rows."""
    if height is None:
        height = table_height(len(source.data.get("block", [])))
    cols = []
    for f, title, fmt in AFFECTED_COLUMNS:
        kw: dict[str, Any] = {"field": f, "title": title}
        if fmt == "sci":  # numbro has no exponent format: Bokeh's scientific formatter, 7 digits
            kw["formatter"] = ScientificFormatter(precision=6, power_limit_high=0, power_limit_low=0, nan_format="–")
        elif fmt is not None:
            kw["formatter"] = NumberFormatter(format=fmt, nan_format="–")
        cols.append(TableColumn(**kw))
    return DataTable(source=source, columns=cols, index_position=None, sortable=True, height=height,
                     sizing_mode="stretch_width")


def audit_layout(report: LabReport) -> Any:
    """What `lowprec analyze --html` adds for each pre-quantized tensor: a heading, the facts, the scale
    and code histograms and the affected blocks; None when no tensor is pre-quantized."""
    parts: list[Any] = []
    for t in report.tensors:
        audit = t.audit
        if audit is None:
            continue
        src = {k: ColumnDataSource(v) for k, v in audit_sources(audit).items()}
        parts.append(Div(text=f"<h2 style='font-size:1.15em'>Audit of {_escape(t.name)}</h2>"
                              f"<p>{_escape(audit.caveat)}</p>", sizing_mode="stretch_width"))
        parts.append(facts_table(src["facts"]))
        parts.append(scale_figure(src["scales"]))
        parts.append(code_figure(src["codes"]))
        if audit.affected:
            parts.append(affected_table(src["affected"]))
    return column(*parts, sizing_mode="stretch_width") if parts else None


def _escape(text: str) -> str:
    import html

    return html.escape(str(text), quote=True)
