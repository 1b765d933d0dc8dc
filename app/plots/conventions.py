"""The backend-conventions table: what each named convention (ml_dtypes, torch, triton_nvidia,
ocp, p3109) does at the edges of a format — the largest value, overflow, ±Inf, NaN, and for unsigned E8M0
zero, negatives and the tie at 3 — computed by `formats.conventions_table` (the measured policies of
`formats.conventions`), plus the cross-check reports that cover the format, as `gpu.crosscheck`
(the one reader of reports) summarises them. Pure functions: rows → column dicts → Bokeh DataTables.

The block-format section draws `simulations.blocks.comparison`: the table of probes where the
`ocp`, `torchao` and `transformer_engine` block conventions differ (each cell: the block's scale code
and what the probed elements are stored and decoded as, all computed there), and one worked block
(`simulations.examples_blocks`) element by element under each convention, with the error of each.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from bokeh.models import ColumnDataSource, HoverTool
from bokeh.models.widgets.tables import DataTable, NumberFormatter, TableColumn
from bokeh.plotting import figure

from lowprec import formats, numtext
from lowprec.gpu import crosscheck
from lowprec.simulations.blocks.comparison import ConventionComparison, ConventionOutcome, ConventionProbe
from lowprec.simulations.quant.conventions import BLOCK_CONVENTIONS
from .style import CURRENT_COLOR, DELAYED_COLOR, HIGHLIGHT_COLOR, power_of_two_text

#: the block conventions, in table order, and the colour each is drawn in
BLOCK_CONVENTION_COLORS: dict[str, str] = dict(zip(BLOCK_CONVENTIONS, (CURRENT_COLOR, DELAYED_COLOR,
                                                                       HIGHLIGHT_COLOR)))

#: probe columns, in order; unsigned formats add the last three
PROBES: tuple[str, ...] = ("max", "overflow (2·max)", "+Inf", "-Inf", "NaN", "0", "-1", "3 (tie)")


def cell_text(cell: Any, bits: int) -> str:
    """One probe's outcome as text: '0x7E = 448 (7/4 × 2^8)', 'NaN (0x7F)' or 'error: …'."""
    if cell is None:
        return "—"
    if "not_provided" in cell:
        return "not provided"
    if "error" in cell:
        return f"error: {cell['error']}"
    code, value = int(cell["code"]), float(cell["value"])
    hx = f"0x{code:0{(bits + 3) // 4}X}"
    short = numtext.general(value, 6)  # nan, inf, -inf as the strict JSON words
    return f"{hx} = {short if len(short) <= 8 else power_of_two_text(value)}"


def conventions_rows(fmt: str | formats.Format) -> list[dict[str, Any]]:
    """`formats.conventions_table` rows for one float format."""
    f = formats.get_format(fmt)
    if not isinstance(f, formats.FloatFormat):
        raise ValueError(f"the conventions table covers float formats; {f.name} is an integer grid "  # noqa: TRY004
                         f"(every convention rounds to nearest even and saturates)")
    return formats.conventions_table((f,))


def conventions_sources(fmt: str | formats.Format) -> dict[str, dict[str, list[Any]]]:
    """Column dicts: 'table' (one row per convention; a column per probe) and 'reports'."""
    f = formats.get_format(fmt)
    rows = conventions_rows(f)
    table: dict[str, list[Any]] = {"convention": [], "rounding": [], "overflow": []}
    for key in PROBES:
        table[key] = []
    for row in rows:
        table["convention"].append(row["convention"])
        policy = row["policy"] or {}  # None: the convention does not provide this format
        table["rounding"].append(policy.get("rounding", "—"))
        table["overflow"].append(policy.get("overflow", "—"))
        for key in PROBES:
            table[key].append(cell_text(row.get(key), f.bits))
    return {"table": table, "reports": reports_source(f.name)}


def reports_source(format_name: str | None = None) -> dict[str, list[Any]]:
    """`gpu.crosscheck.report_rows` as text columns: one row per committed cross-check report that
    covers `format_name` (values tried and mismatches for that format)."""
    rows = crosscheck.report_rows(format_name)
    return {k: [str(row[k]) for row in rows] for k in crosscheck.REPORT_ROW_KEYS}


def conventions_table_figure(source: Any) -> DataTable:
    """One row per convention, one column per edge probe."""
    cols = [TableColumn(field="convention", title="convention", width=95),
            TableColumn(field="rounding", title="rounding", width=95),
            TableColumn(field="overflow", title="overflow", width=75)]
    cols += [TableColumn(field=k, title=k, width=125) for k in PROBES]
    return DataTable(source=source, columns=cols, height=30 + 28 * len(formats.CONVENTIONS), width=1270,
                     index_position=None)


def reports_table_figure(source: Any) -> DataTable:
    """Cross-check reports found under gpu/reports."""
    cols = [TableColumn(field=k, title=k, width=w) for k, w in (
        ("file", 150), ("backend", 90), ("convention", 100), ("version", 130), ("device", 120),
        ("date", 150), ("tried", 90), ("mismatches", 90))]
    return DataTable(source=source, columns=cols, height=120, width=930, index_position=None)


# ------------------------------------------------------------------------------------------------
# block formats: where the three block conventions differ
# ------------------------------------------------------------------------------------------------


def _value_text(v: float) -> str:
    """A value in a narrow cell: its decimal when short and exact, else 2^k for a power of two, else
    four significant digits (NaN, ±Inf, 0 spelled)."""
    if not math.isfinite(v) or v == 0:
        return power_of_two_text(v)
    short = numtext.general(v, 6)
    if len(short) <= 8 and float(short) == v:
        return short
    m, e = math.frexp(abs(v))
    if m == 0.5:
        return f"{'-' if v < 0 else ''}2^{e - 1}"
    return numtext.general(v, 4)


def outcome_text(probe: ConventionProbe, outcome: ConventionOutcome) -> str:
    """One cell: the block's scale code and value (NVFP4: with the tensor scale ts), then each probed
    element's code and decoded value: '0x05 = 0.009766, ts 1 · x[0]: 0x7 → 0.05859'."""
    if outcome.tensor_scale is not None:
        block = float(formats.decode(np.array([outcome.scale_code], np.uint8), formats.E4M3FN)[0])
        scale = f"0x{outcome.scale_code:02X} = {_value_text(block)}, ts {_value_text(float(outcome.tensor_scale))}"
        width = 1
    else:
        value = numtext.NAN if outcome.scale_code == 0xFF else f"2^{outcome.scale_code - 127}"
        scale = f"0x{outcome.scale_code:02X} = {value}"
        width = 2
    elems = "; ".join(f"x[{i}]: 0x{int(outcome.codes[i]):0{width}X} → {_value_text(float(outcome.decoded[i]))}"
                      for i in probe.elements)
    return f"{scale} · {elems}"


def block_conventions_sources(probes: list[ConventionProbe]) -> dict[str, list[Any]]:
    """Columns of the table of differences: probe, input, one text column per convention."""
    table: dict[str, list[Any]] = {"probe": [], "input": []}
    for name in BLOCK_CONVENTIONS:
        table[name] = []
    for p in probes:
        table["probe"].append(p.name)
        table["input"].append(p.description)
        for name in BLOCK_CONVENTIONS:
            table[name].append(outcome_text(p, p.comparison.outcome(name)))
    return table


def worked_block_sources(comparison: ConventionComparison) -> dict[str, list[Any]]:
    """Columns of the worked block: element, input, and per convention its code, decoded value and
    error (decoded − input)."""
    n = comparison.input.size
    cols: dict[str, list[Any]] = {"element": list(range(n)), "input": comparison.input.tolist()}
    for o in comparison.outcomes:
        cols[f"{o.convention}_code"] = [f"0x{int(c):X}" for c in o.codes]
        cols[f"{o.convention}_decoded"] = o.decoded.tolist()
        cols[f"{o.convention}_error"] = (o.decoded - comparison.input).tolist()
    return cols


def worked_block_summary(comparison: ConventionComparison) -> str:
    """One line per convention: block scale code and value, RMS relative error of the block."""
    lines = []
    for o in comparison.outcomes:
        ts = "" if o.tensor_scale is None else f", tensor scale {_value_text(o.tensor_scale)}"
        lines.append(f"- **{o.convention}**: scale code 0x{o.scale_code:02X}, decode scale "
                     f"{_value_text(o.decode_scale)}{ts}; RMS relative error {o.rms_rel_error:.3g}")
    return "\n".join(lines)


def block_conventions_table_figure(source: Any) -> DataTable:
    """One row per probe, one column per block convention (scale code = value · element: code → value)."""
    cols = [TableColumn(field="probe", title="probe", width=160), TableColumn(field="input", title="input", width=360)]
    cols += [TableColumn(field=name, title=f"{name}: scale · element → decoded", width=320) for name in BLOCK_CONVENTIONS]
    return DataTable(source=source, columns=cols, height=320, width=1480, index_position=None)


def worked_block_table_figure(source: Any) -> DataTable:
    """The worked block element by element: input, then code, decoded value and error per convention."""
    number = NumberFormatter(format="0.0000000")
    cols = [TableColumn(field="element", title="element", width=60),
            TableColumn(field="input", title="input", width=95, formatter=number)]
    for name in BLOCK_CONVENTIONS:
        cols += [TableColumn(field=f"{name}_code", title=f"{name} code", width=90),
                 TableColumn(field=f"{name}_decoded", title=f"{name} decoded", width=105, formatter=number),
                 TableColumn(field=f"{name}_error", title=f"{name} error", width=105, formatter=number)]
    return DataTable(source=source, columns=cols, height=440, width=1100, index_position=None)


def worked_block_figure(source: ColumnDataSource, width: int = 720) -> Any:
    """Input as grey bars, each convention's decoded value as a marker, per element."""
    fig = figure(title="worked block: decoded value per convention", width=width, height=280,
                 x_axis_label="element", y_axis_label="value", tools="pan,wheel_zoom,box_zoom,reset")
    fig.vbar(x="element", top="input", width=0.8, source=source, fill_color="#cccccc", line_color=None,
             legend_label="input")
    markers = ("circle", "triangle", "x")
    for (name, color), marker in zip(BLOCK_CONVENTION_COLORS.items(), markers):
        fig.scatter("element", f"{name}_decoded", source=source, size=9, marker=marker, color=color,
                    line_width=2, legend_label=name)
    fig.add_tools(HoverTool(tooltips=[("element", "@element"), ("input", "@input{0.00000e}")]
                            + [(name, f"@{name}_decoded{{0.00000e}} (@{name}_code)") for name in BLOCK_CONVENTIONS]))
    legend = fig.legend[0]
    fig.center.remove(legend)
    legend.click_policy = "hide"
    fig.add_layout(legend, "right")
    return fig
