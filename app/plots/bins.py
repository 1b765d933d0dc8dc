"""Bin explorer views: where one value falls among a format's representable values, and the figures.

`explain_value` casts one typed value with a `formats` policy (real units: the grid is the
format's values times `decode_scale = amax / F`, so the encoded number is `x / decode_scale`) and
returns a `BinView` dataclass: the code and its bit fields, the decoded value and error, a window of
neighbouring codes with their rounding bins, the log2 gap between neighbours over the positive
range, and (for formats up to 8 bits) the full code table. Rounding bins follow the policy's rule:
nearest modes put the edges at midpoints between neighbours, a midpoint belonging to the code the
tie rule picks (`nearest_even`: the code whose last bit is 0 — for E8M0 the exponent's;
`nearest_away`: the value farther from zero); directed modes put the edges at the values
themselves (IEEE 754-2019 §4.3). The bins are `formats.rounding_bin`'s.
`bins_sources` turns a view into plain column dicts for `ColumnDataSource`s and the `*_figure`
builders draw them; colours and exact `7/4 × 2^8` texts come from `app.plots.style`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from functools import cache
from typing import Any

import numpy as np
from bokeh.layouts import column
from bokeh.models import ColumnDataSource, HoverTool, Range1d
from bokeh.models.annotations import LabelSet
from bokeh.models.widgets.tables import DataTable, TableColumn
from bokeh.plotting import figure

from lowprec import formats
from lowprec.formats import CastPolicy, FloatFormat, Format, IntFormat

from .style import (
    CURRENT_COLOR,
    DELAYED_COLOR,
    ERROR_COLOR,
    EXPONENT_COLOR,
    HIGHLIGHT_COLOR,
    MANTISSA_COLOR,
    SIGN_COLOR,
    power_of_two_text,
)

CONVENTION_NAMES: tuple[str, ...] = tuple(formats.CONVENTIONS)
ROUNDINGS: tuple[str, ...] = tuple(r.value for r in formats.Rounding)
OVERFLOWS: tuple[str, ...] = tuple(o.value for o in formats.Overflow)
#: formats the explorer offers: every registered one with a code table (FP32's 2^32 codes are not)
EXPLORER_FORMATS: tuple[str, ...] = tuple(f.name for f in formats.ALL_FORMATS if f.bits <= 16)
TABLE_MAX_BITS = 8  # the full code table is listed for formats up to this width
WINDOW = 6  # neighbouring values drawn on each side of the encoded one
STOCHASTIC_SEED = 0


# ------------------------------------------------------------------------------------------------
# parsing and policy
# ------------------------------------------------------------------------------------------------


def resolve_policy(fmt: str | Format, convention: str, rounding: str = "",
                   overflow: str = "") -> CastPolicy:
    """The named convention's policy for `fmt`, with rounding/overflow replaced where given
    ('' keeps the convention's choice)."""
    policy = formats.policy_for(convention, fmt)
    changes: dict[str, Any] = {}
    if rounding and rounding != policy.rounding.value:
        changes["rounding"] = rounding
    if overflow and overflow != policy.overflow.value:
        changes["overflow"] = overflow
    if changes:
        policy = policy.with_(**changes, name=f"{convention}+custom")
    return policy


# ------------------------------------------------------------------------------------------------
# per-format data (cached: a 16-bit code table takes ~10 ms)
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grid:
    values: np.ndarray  # sorted distinct finite values (±0 merged), float64
    codes: np.ndarray  # one code per value (+0 for zero)
    table: formats.CodeTable


@cache
def _grid(name: str) -> _Grid:
    table = formats.code_table(name)
    finite = np.isfinite(table.value)
    # +0 sorts before -0 among equal values when ordered by (value, sign): keep the first of each
    order = np.lexsort((table.sign[finite], table.value[finite]))
    vals = table.value[finite][order]
    codes = table.codes[finite][order]
    keep = np.concatenate(([True], vals[1:] != vals[:-1]))
    return _Grid(vals[keep].astype(np.float64), codes[keep].astype(np.int64), table)


def code_value(fmt: str | Format, code: int) -> float:
    """The value of `code` in `fmt` (float64; NaN/±Inf for special codes)."""
    f = formats.get_format(fmt)
    if not 0 <= int(code) < f.n_codes:
        raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
    return float(_grid(f.name).table.value[int(code)])


def bit_fields(fmt: Format) -> list[str]:
    """Field of each bit, most significant first: 'sign' / 'exponent' / 'mantissa'.

    Integer grids are two's complement: the top bit is the sign (weight -2^(n-1)), the rest are
    value bits, drawn in the mantissa colour."""
    if isinstance(fmt, IntFormat):
        return ["sign"] + ["mantissa"] * (fmt.bits - 1)
    return (["sign"] if fmt.signed else []) + ["exponent"] * fmt.exponent_bits + [
        "mantissa"] * fmt.mantissa_bits


FIELD_COLORS = {"sign": SIGN_COLOR, "exponent": EXPONENT_COLOR, "mantissa": MANTISSA_COLOR}


def formula_text(fmt: Format, code: int) -> str:
    """The decoding formula of `code` with its fields filled in, e.g.
    '(-1)^0 × 2^(8 - 7) × (1 + 5/8)'. NaN/Inf codes say so."""
    table = _grid(fmt.name).table
    cls = str(table.cls[code])
    if cls in ("nan", "inf"):
        return f"{cls.upper()} code (special: no formula)"
    if isinstance(fmt, IntFormat):
        s = int(table.sign[code])
        mag = int(table.mantissa[code])
        return f"-{1 << (fmt.bits - 1)}×{s} + {mag} = {int(table.value[code])}"
    s, e, m = int(table.sign[code]), int(table.exponent[code]), int(table.mantissa[code])
    mb = fmt.mantissa_bits
    sign = f"(-1)^{s} × " if fmt.signed else ""
    frac = f"{m}/{1 << mb}" if mb else "0"
    if cls == "subnormal" or (cls == "zero" and fmt.subnormals):
        return f"{sign}2^(1 - {fmt.bias}) × (0 + {frac})  [subnormal]"
    if mb == 0:
        return f"{sign}2^({e} - {fmt.bias})"
    return f"{sign}2^({e} - {fmt.bias}) × (1 + {frac})"


# ------------------------------------------------------------------------------------------------
# rounding bins
# ------------------------------------------------------------------------------------------------


def window_bins(fmt: Format, policy: CastPolicy, index: int,
                half_width: int = WINDOW) -> dict[str, list[Any]]:
    """Rounding bins (from `formats.rounding_bin`) of the distinct values
    `index - half_width .. index + half_width` of `fmt` (indices into the sorted finite values,
    ±0 merged into one zero whose bin is the union of +0's and -0's) under `policy`.

    Columns: code, value, lo, hi, lo_closed, hi_closed (floats; ±inf for unbounded ends).
    Stochastic rounding has no bins: the nearest-even bins are returned (the caller says so)."""
    grid = _grid(fmt.name)
    vals, codes = grid.values, grid.codes
    n = vals.size
    first, last = max(0, index - half_width), min(n - 1, index + half_width)
    if policy.rounding.value == "stochastic":
        policy = policy.with_(rounding="nearest_even", name=policy.name)
    out: dict[str, list[Any]] = {k: [] for k in ("code", "value", "lo", "hi", "lo_closed", "hi_closed")}
    for i in range(first, last + 1):
        c = int(codes[i])
        b = formats.rounding_bin(fmt, c, policy)
        lo, lo_c = b.lo, b.lo_closed
        if b.value == 0 and isinstance(fmt, FloatFormat) and fmt.has_negative_zero:
            neg = formats.rounding_bin(fmt, c | (1 << fmt.sign_shift), policy)
            if neg.hi == 0 and neg.lo < 0:  # -0 takes the negative values that round to zero
                lo, lo_c = neg.lo, neg.lo_closed
        out["code"].append(c)
        out["value"].append(float(vals[i]))
        out["lo"].append(float(lo))
        out["hi"].append(float(b.hi))
        out["lo_closed"].append(bool(lo_c))
        out["hi_closed"].append(bool(b.hi_closed))
    return out


# ------------------------------------------------------------------------------------------------
# the view
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FormatCast:
    """One format's answer for the typed value."""

    format: str
    code: int
    hex: str
    bits: str
    fields: list[str]
    value: float  # decoded value times decode_scale (real units)
    exact: str  # power-of-two text of the decoded format value (before scaling)
    cls: str
    error: float  # value - x (nan when either is not finite)
    rel_error: float
    formula: str
    policy: dict[str, Any]


@dataclass(frozen=True)
class BinView:
    """Everything the bin explorer shows for one value; all arrays as lists (JSON-ready)."""

    input_text: str
    x: float  # the parsed input, real units
    decode_scale: float  # grid = format values × decode_scale (= amax / F)
    scaled_x: float  # x / decode_scale: what is encoded
    main: FormatCast
    compare: FormatCast | None
    bins: dict[str, list[Any]]  # window of rounding bins (real units), see window_bins
    bin_of_code: dict[str, Any]  # the encoded code's own bin (empty for NaN/Inf codes)
    compare_values: list[float]  # the compare format's values inside the window (real units)
    gaps: dict[str, list[float]]  # log2 value → log2 gap over the positive range (main format)
    compare_gaps: dict[str, list[float]]
    table: list[dict[str, Any]] = field(default_factory=list)  # code table rows (≤ 8-bit formats)
    note: str = ""  # stochastic probabilities, overflow, NaN …

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return _jsonable(d)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float):
        if math.isnan(obj):
            return "nan"
        if math.isinf(obj):
            return "inf" if obj > 0 else "-inf"
        return obj
    if isinstance(obj, (np.floating, np.integer, np.bool_)):
        return _jsonable(obj.item())
    return obj


def _cast_one(fmt: Format, x_scaled: float, x: float, decode_scale: float,
              policy: CastPolicy) -> FormatCast:
    rng = np.random.default_rng(STOCHASTIC_SEED) if policy.rounding.value == "stochastic" else None
    code = int(formats.encode(np.array([x_scaled], dtype=np.float64), fmt, policy, rng=rng)[0])
    table = _grid(fmt.name).table
    v_fmt = float(table.value[code])
    value = v_fmt * decode_scale if math.isfinite(v_fmt) else v_fmt
    if math.isfinite(value) and math.isfinite(x):
        err = value - x
        rel = abs(err) / abs(x) if x != 0 else (0.0 if err == 0 else math.inf)
    else:
        err = rel = math.nan
    return FormatCast(
        format=fmt.name, code=code, hex=f"0x{code:0{(fmt.bits + 3) // 4}X}",
        bits=format(code, f"0{fmt.bits}b"), fields=bit_fields(fmt), value=value,
        exact=power_of_two_text(v_fmt), cls=str(table.cls[code]), error=err, rel_error=rel,
        formula=formula_text(fmt, code), policy=policy.to_dict(),
    )


def _gaps(fmt: Format, decode_scale: float) -> dict[str, list[float]]:
    grid = _grid(fmt.name)
    v = grid.values
    pos = v > 0
    idx = np.nonzero(pos)[0]
    idx = idx[idx + 1 < v.size]
    vals = v[idx] * decode_scale
    gap = (v[idx + 1] - v[idx]) * decode_scale
    return {"log2_value": np.log2(vals).tolist(), "log2_gap": np.log2(gap).tolist(),
            "value": vals.tolist(), "gap": gap.tolist()}


def explain_value(text: str, fmt: str | Format = "E4M3FN", convention: str = "ml_dtypes",
                  rounding: str = "", overflow: str = "", compare_format: str | Format | None = "E5M2",
                  decode_scale: float = 1.0, code: int | None = None) -> BinView:
    """Cast the typed value `text` to `fmt` (and `compare_format`) under `convention` with the
    rounding/overflow overrides, on the grid scaled by `decode_scale`; see the module docstring.

    `code` (optional) shows that code instead of the encoded one (a flipped bit: NaN payloads
    and the like that no value encodes to); it must decode to the parsed value (or both NaN).
    Raises ValueError/TypeError for unparseable text, unknown names, a non-positive or
    non-finite decode_scale, or a value the policy refuses (NaN into E2M1 under torch …)."""
    f = formats.get_format(fmt)
    if f.bits > 16:
        raise ValueError(f"the bin explorer lists formats up to 16 bits ({', '.join(EXPLORER_FORMATS)}); "
                         f"{f.name} has {f.bits}")
    if convention not in CONVENTION_NAMES:
        raise ValueError(f"unknown convention {convention!r}; known: {', '.join(CONVENTION_NAMES)}")
    if rounding and rounding not in ROUNDINGS:
        raise ValueError(f"unknown rounding {rounding!r}; known: {', '.join(ROUNDINGS)}")
    if overflow and overflow not in OVERFLOWS:
        raise ValueError(f"unknown overflow {overflow!r}; known: {', '.join(OVERFLOWS)}")
    if not isinstance(decode_scale, (int, float)) or not math.isfinite(decode_scale) or decode_scale <= 0:
        raise ValueError(f"decode_scale must be a positive finite number (amax / F), got {decode_scale!r}")
    decode_scale = float(decode_scale)
    x = formats.parse_value(text)
    x_scaled = x / decode_scale
    if math.isfinite(x) and x != 0 and not math.isfinite(x_scaled):
        raise ValueError(f"{text} / decode_scale {decode_scale} overflows float64")
    policy = resolve_policy(f, convention, rounding, overflow)
    main = _cast_one(f, x_scaled, x, decode_scale, policy)
    if code is not None:
        table = _grid(f.name).table
        if not 0 <= code < f.n_codes:
            raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
        cv = float(table.value[code])
        if not (cv == main.value / decode_scale or (math.isnan(cv) and math.isnan(x))):
            raise ValueError(f"code {code} decodes to {cv}, not {text}")
        main = FormatCast(**{**asdict(main), "code": code, "hex": f"0x{code:0{(f.bits + 3) // 4}X}",
                             "bits": format(code, f"0{f.bits}b"), "cls": str(table.cls[code]),
                             "formula": formula_text(f, code)})
    cmp_cast: FormatCast | None = None
    cmp_fmt: Format | None = None
    if compare_format:
        cmp_fmt = formats.get_format(compare_format)
        if cmp_fmt.bits > 16:
            raise ValueError(f"compare_format must have at most 16 bits; {cmp_fmt.name} has {cmp_fmt.bits}")
        cmp_policy = resolve_policy(cmp_fmt, convention, rounding, overflow)
        try:
            cmp_cast = _cast_one(cmp_fmt, x_scaled, x, decode_scale, cmp_policy)
        except ValueError:
            cmp_cast = None  # e.g. NaN into E2M1: the main format's answer still stands
    # window of bins around the encoded value
    grid = _grid(f.name)
    v_main = float(grid.table.value[main.code])
    notes: list[str] = []
    if math.isfinite(v_main):
        centre = int(np.searchsorted(grid.values, v_main))
    elif math.isfinite(x_scaled) or math.isinf(x_scaled):
        centre = grid.values.size - 1 if not (x_scaled < 0) else 0
    else:
        centre = int(np.searchsorted(grid.values, 0.0))
    if not math.isfinite(v_main):
        notes.append(f"{text} encodes to {main.cls.upper()} in {f.name}: no rounding bin")
    bins = window_bins(f, policy, centre)
    own: dict[str, Any] = {}
    if math.isfinite(v_main):
        k = bins["value"].index(v_main)
        own = {key: col[k] for key, col in bins.items()}
    for key in ("value", "lo", "hi"):
        bins[key] = [b * decode_scale for b in bins[key]]
    if own:
        own = {**own, "value": own["value"] * decode_scale, "lo": own["lo"] * decode_scale,
               "hi": own["hi"] * decode_scale}
    if policy.rounding.value == "stochastic" and math.isfinite(x_scaled):
        i = int(np.searchsorted(grid.values, x_scaled))
        if 0 < i < grid.values.size and grid.values[i] != x_scaled:
            a, b = float(grid.values[i - 1]), float(grid.values[i])
            p_up = (x_scaled - a) / (b - a)
            notes.append(f"stochastic: rounds to {power_of_two_text(b)} with probability {p_up:.4g} "
                         f"and to {power_of_two_text(a)} with {1 - p_up:.4g} (seed {STOCHASTIC_SEED} "
                         f"drew {main.exact}); the bins drawn are nearest-even's")
    lo_w = min(b for b in bins["value"])
    hi_w = max(b for b in bins["value"])
    compare_values: list[float] = []
    compare_gaps: dict[str, list[float]] = {}
    if cmp_fmt is not None:
        cmp_vals = _grid(cmp_fmt.name).values * decode_scale
        compare_values = cmp_vals[(cmp_vals >= lo_w) & (cmp_vals <= hi_w)].tolist()
        compare_gaps = _gaps(cmp_fmt, decode_scale)
    table_rows: list[dict[str, Any]] = []
    if f.bits <= TABLE_MAX_BITS:
        table_rows = grid.table.rows()
    return BinView(
        input_text=text, x=x, decode_scale=decode_scale, scaled_x=x_scaled, main=main,
        compare=cmp_cast, bins=bins, bin_of_code=own, compare_values=compare_values,
        gaps=_gaps(f, decode_scale), compare_gaps=compare_gaps, table=table_rows,
        note="; ".join(notes),
    )


# ------------------------------------------------------------------------------------------------
# sources (plain dicts) and figures
# ------------------------------------------------------------------------------------------------


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
    shade = ["#e8eef7" if i % 2 == 0 else "#f7f1e3" for i in range(len(values))]
    selected = [v == view.main.value for v in values]
    fill = [HIGHLIGHT_COLOR if s else "#cfd8e3" for s in selected]
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
        "field": fields,
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
        val = row["value"]
        fv = float(val)  # rows() writes specials as 'nan' / 'inf' / '-inf', which float() reads
        table["value"].append(f"{fv * scale:.8g}" if math.isfinite(fv) else str(val))
        table["exact"].append(power_of_two_text(fv))
        g = row["gap_next"]
        table["gap"].append(f"{float(g) * scale:.6g}" if not isinstance(g, str) else g)
    return {
        "bits": bits,
        "summary": summary,
        "bins": {"left": lo, "right": hi, "value": values, "code": codes_hex, "fill": shade,
                 "exact": exact, "interval": interval},
        "points": {"x": values, "y": [0.5] * len(values), "code": codes_hex, "exact": exact,
                   "interval": interval, "color": fill},
        "ties": {"x": tie_x, "y": [0.12] * len(tie_x), "angle": tie_angle},
        "marker": {"x0": [x_plot], "x1": [x_plot], "y0": [-0.05], "y1": [1.05],
                   "label": [f"x = {view.input_text}"]},
        "compare_points": {"x": view.compare_values, "y": [-0.3] * len(view.compare_values),
                           "exact": [power_of_two_text(v / scale) + ("" if scale == 1 else f" × {scale:g}")
                                     for v in view.compare_values]},
        "gaps": dict(view.gaps),
        "compare_gaps": dict(view.compare_gaps) if view.compare_gaps else
        {"log2_value": [], "log2_gap": [], "value": [], "gap": []},
        "gap_marker": {"x": gm_x, "y": gm_y},
        "table": table,
    }


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
                   line_color="#8899aa", line_alpha=0.6)
    pts = p.scatter(x="x", y="y", source=points, size=11, fill_color="color", line_color="black")
    p.scatter(x="x", y="y", source=ties, marker="triangle", angle="angle", size=9,
              fill_color="black", line_color=None)
    p.segment(x0="x0", x1="x1", y0="y0", y1="y1", source=marker, line_color=ERROR_COLOR, line_width=3)
    p.add_layout(LabelSet(x="x0", y="y1", text="label", source=marker, text_color=ERROR_COLOR,
                          text_font_size="12px", y_offset=-16, x_offset=4))
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
    p.scatter(x="x", y="y", source=gap_marker, size=10, fill_color=ERROR_COLOR, line_color="black")
    p.add_tools(HoverTool(renderers=[main], tooltips=[("value", "@value"), ("gap", "@gap = 2^@log2_gap")]))
    p.legend.location = "top_left"
    return p


def label_legends(fig: Any, labels: list[str]) -> None:
    """Rename the legend entries of a figure built here, in order (format names follow the view)."""
    items = fig.legend[0].items if fig.legend else []
    for item, text in zip(items, labels):
        item.label = {"value": text}


def summary_table(source: ColumnDataSource) -> DataTable:
    """The encoded answer per format (main, compare): code, bits, value, exact value, error."""
    cols = [TableColumn(field=k, title=t, width=w) for k, t, w in (
        ("format", "format", 70), ("code", "code", 60), ("bits", "bits", 130),
        ("value", "value", 100), ("exact", "exact", 120), ("cls", "class", 70),
        ("error", "error", 100), ("rel_error", "rel. error", 80))]
    return DataTable(source=source, columns=cols, height=90, width=760, index_position=None)


def code_table_figure(source: ColumnDataSource) -> DataTable:
    """Every code of a ≤ 8-bit format."""
    cols = [TableColumn(field=k, title=t, width=w) for k, t, w in (
        ("hex", "code", 60), ("bits", "bits", 90), ("cls", "class", 80), ("value", "value", 100),
        ("exact", "exact", 120), ("gap", "gap to next", 90))]
    return DataTable(source=source, columns=cols, height=300, width=600, index_position=None)


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
