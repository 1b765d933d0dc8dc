"""The backend-conventions table: what each named convention (ml_dtypes, torch, triton_nvidia,
ocp) does at the edges of a format — the largest value, overflow, ±Inf, NaN, and for unsigned E8M0
zero, negatives and the tie at 3 — computed by `formats.conventions_table` (the measured policies of
`formats.conventions`), plus the cross-check reports that cover the format, as `gpu.crosscheck`
(the one reader of reports) summarises them. Pure functions: rows → column dicts → Bokeh DataTables.
"""

from __future__ import annotations

import math
from typing import Any

from bokeh.models.widgets.tables import DataTable, TableColumn

from lowprec import formats
from lowprec.gpu import crosscheck
from .style import power_of_two_text

#: probe columns, in order; unsigned formats add the last three
PROBES: tuple[str, ...] = ("max", "overflow (2·max)", "+Inf", "-Inf", "NaN", "0", "-1", "3 (tie)")


def cell_text(cell: Any, bits: int) -> str:
    """One probe's outcome as text: '0x7E = 448 (7/4 × 2^8)', 'NaN (0x7F)' or 'error: …'."""
    if cell is None:
        return "—"
    if "error" in cell:
        return f"error: {cell['error']}"
    code, value = int(cell["code"]), float(cell["value"])
    hx = f"0x{code:0{(bits + 3) // 4}X}"
    if math.isnan(value):
        return f"{hx} = NaN"
    if math.isinf(value):
        return f"{hx} = {'+' if value > 0 else '-'}Inf"
    short = f"{value:.6g}"
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
        table["rounding"].append(row["policy"]["rounding"])
        table["overflow"].append(row["policy"]["overflow"])
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
    return DataTable(source=source, columns=cols, height=150, width=1270, index_position=None)


def reports_table_figure(source: Any) -> DataTable:
    """Cross-check reports found under gpu/reports."""
    cols = [TableColumn(field=k, title=k, width=w) for k, w in (
        ("file", 150), ("backend", 90), ("convention", 100), ("version", 130), ("device", 120),
        ("date", 150), ("tried", 90), ("mismatches", 90))]
    return DataTable(source=source, columns=cols, height=120, width=930, index_position=None)
