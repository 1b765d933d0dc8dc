"""The explanation of one value in one format: what `lowprec cast` prints and the bin explorer draws.

`explain_cast(text, fmt, …)` casts one typed value and returns a `CastExplanation`: the code in
binary and hex, the field of each bit, the decoded value and its exact power-of-two text, the
decoding formula with the fields filled in, the class, the errors, the policy and the code's
rounding bin. `explain_value(text, fmt, …)` is the bin explorer's whole view (`BinView`): one
`CastExplanation` per format (main and compare), the window of neighbouring values with their
rounding bins, the log2 gap between neighbours, and the code table. Both faces call these, so they
cannot disagree. The rules, stated once:

- **Policy and its name** (`resolve_policy`): a named convention's policy (`policy_for`), or the
  format's default policy (named "default") when the convention is None or ''. Both faces default
  to one convention, `DEFAULT_CONVENTION` (`ml_dtypes`, the CPU reference every lowprec cast is
  checked against): `explain_cast`, `explain_value`, the bin explorer's `ExplainConfig` and
  `lowprec cast` (whose options are generated from that record). A rounding or overflow
  override that differs from the base policy's own mode gives a policy named `<base>+custom`
  (`torch+custom`); an override equal to the base's own mode changes nothing, name included.
  A convention that does not provide the format (the conventions table's explicit "not provided":
  ml_dtypes has no P3109 type, P3109's reading covers only P3109 formats) hands over to the first
  convention that does: its policy, under its own name (`p3109`), and the bin view's note says so
  (`handed_over`); `policy_for` itself refuses such a pair.
- **Errors**: `error = value − x` (one correctly rounded float64 subtraction), `abs_error = |error|`,
  `rel_error = abs_error / |x|`. At x = 0 (either sign) `rel_error` is 0 when the value is a zero
  and +inf otherwise (a nonzero answer for zero is infinitely wrong, relatively). Infinities: an
  infinite x kept as the same infinity is exact (all three 0); an infinite x given a finite value
  (a saturating cast), or a finite x given an infinity (an overflow), or the opposite infinity, is
  infinitely wrong: `error` is ±inf (its sign that of value − x), `abs_error` and `rel_error` +inf.
  NaN on either side is no distance at all: all three are nan.
- **Scaled grid**: with `decode_scale = amax / F` the grid is the format's values times
  `decode_scale`; `x / decode_scale` is what is encoded, and value, errors and bins are in real
  units (`exact` and `formula` describe the code itself, before scaling).
- **Stochastic rounding**: each value is rounded with its own `numpy.random.default_rng(seed)`, so
  its code does not depend on the other values cast with it. It has no rounding bin (None); the
  explorer's window then shows nearest-even's bins and a note gives the two probabilities.
- **Rounding bins** are `formats.rounding_bin`'s (nearest modes: edges at midpoints, the tie owned
  by the code the tie rule picks; directed modes: edges at the values themselves). In the
  explorer's window ±0 are one value whose bin is the union of +0's and -0's.

Formats up to 16 bits get every part; FP32 casts (`explain_cast`) get no rounding bin (its code
table is not built) and the bin view refuses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from lowprec import numtext
from lowprec.config import config_record, knob

from .codec import decode, default_policy, encode
from .conventions import CONVENTIONS, convention_row, policy_for, providers
from .parse import parse_value
from .policy import CastPolicy, Overflow, Rounding
from .specs import ALL_FORMATS, FloatFormat, Format, IntFormat, get_format
from .tables import CodeTable, RoundingBin, code_table, rounding_bin

__all__ = [
    "BIN_VIEW_FORMATS",
    "ExplainConfig",
    "BinView",
    "CastExplanation",
    "DEFAULT_CONVENTION",
    "DEFAULT_POLICY_NAME",
    "TABLE_MAX_BITS",
    "WINDOW",
    "bit_fields",
    "cast_text",
    "code_value",
    "explain_cast",
    "explain_value",
    "formula_text",
    "power_of_two_text",
    "relative_error",
    "resolve_policy",
    "window_bins",
]

#: the convention every face uses when none is named (the bin explorer, `lowprec cast`, the functions here)
DEFAULT_CONVENTION = "ml_dtypes"
#: formats the bin view covers: every registered format with a code table (FP32's 2^32 codes are not)
BIN_VIEW_FORMATS: tuple[str, ...] = tuple(f.name for f in ALL_FORMATS if f.bits <= 16)


@config_record
class ExplainConfig:
    """The bin explorer's parameters (its controls and lesson-directive parameters): one typed
    value in one format, under a named convention with optional rounding/overflow overrides."""

    format: str = knob("E4M3FN", "format to cast to (every format up to 16 bits)", choices=BIN_VIEW_FORMATS)
    value: str = knob("3.3", "value to cast: 3.3, 1e-3, -0, inf, nan or a hex float 0x1.8p3")
    convention: str = knob(DEFAULT_CONVENTION, "backend whose measured cast policy is used (they differ at "
                           "the edges: overflow, NaN, E8M0)", choices=tuple(CONVENTIONS))
    rounding: str = knob("", "rounding mode ('' keeps the convention's own)",
                         choices=("",) + tuple(r.value for r in Rounding),
                         choice_labels=("(convention's)",) + tuple(r.value for r in Rounding))
    overflow: str = knob("", "overflow rule ('' keeps the convention's own: saturate or Inf/NaN)",
                         choices=("",) + tuple(o.value for o in Overflow),
                         choice_labels=("(convention's)",) + tuple(o.value for o in Overflow))
    compare_format: str = knob("E5M2", "second format shown side by side ('' for none)",
                               choices=("",) + BIN_VIEW_FORMATS, choice_labels=("(none)",) + BIN_VIEW_FORMATS)
    decode_scale: float = knob(1.0, "grid = format values × decode_scale (= amax / F); x is encoded as "
                               "x / decode_scale", bounds=(2.0**-126, 2.0**126))


TABLE_MAX_BITS = 8  # the bin view lists the full code table for formats up to this width
WINDOW = 6  # neighbouring values in the bin view on each side of the encoded one
DEFAULT_POLICY_NAME = "default"  # the name of a format's default policy (no convention given)
_ROUNDINGS = tuple(r.value for r in Rounding)
_OVERFLOWS = tuple(o.value for o in Overflow)


# ------------------------------------------------------------------------------------------------
# exact texts, bit fields, formulas
# ------------------------------------------------------------------------------------------------


def power_of_two_text(value: float) -> str:
    """Exact value as a fraction times a power of two: 448 → '7/4 × 2^8', 0.3125 → '5/4 × 2^-2';
    '0', '-0', and 'nan', 'inf', '-inf' (`lowprec.numtext`'s words)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"value must be a real number, got {value!r}")
    value = float(value)
    word = numtext.nonfinite_text(value)  # nan, inf, -inf: the strict JSON words
    if word is not None:
        return word
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    frac = Fraction(abs(value))
    e = frac.numerator.bit_length() - frac.denominator.bit_length()
    if Fraction(2) ** e > frac:
        e -= 1
    mant = frac / Fraction(2) ** e
    sign = "-" if value < 0 else ""
    m = f"{mant.numerator}" if mant.denominator == 1 else f"{mant.numerator}/{mant.denominator}"
    return f"{sign}{m} × 2^{e}"


def bit_fields(fmt: str | Format) -> tuple[str, ...]:
    """Field of each bit, most significant first: 'sign' / 'exponent' / 'mantissa'.

    Integer grids are two's complement: the top bit is the sign (weight -2^(n-1)), the rest are
    value bits, reported as 'mantissa'."""
    f = get_format(fmt)
    if isinstance(f, IntFormat):
        return ("sign",) + ("mantissa",) * (f.bits - 1)
    return (("sign",) if f.signed else ()) + ("exponent",) * f.exponent_bits + (
        "mantissa",) * f.mantissa_bits


def _fields_of_code(f: Format, code: int) -> tuple[int, int, int]:
    """(sign, exponent field, mantissa field) of `code`; integer grids: (sign, 0, low bits)."""
    if isinstance(f, IntFormat):
        return (code >> (f.bits - 1)) & 1 if f.signed else 0, 0, code & ((1 << (f.bits - 1)) - 1)
    sign = (code >> f.sign_shift) & 1 if f.signed else 0
    return sign, (code & f.magnitude_mask) >> f.mantissa_bits, code & ((1 << f.mantissa_bits) - 1)


def _code_class(f: Format, code: int, value: float) -> str:
    """'zero' | 'subnormal' | 'normal' | 'inf' | 'nan' of one code (as `formats.classify_codes`)."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf"
    if value == 0:
        return "zero"
    if isinstance(f, FloatFormat) and f.subnormals and _fields_of_code(f, code)[1] == 0:
        return "subnormal"
    return "normal"


def formula_text(fmt: str | Format, code: int) -> str:
    """The decoding formula of `code` with its fields filled in, e.g.
    '(-1)^0 × 2^(8 - 7) × (1 + 5/8)'. NaN/Inf codes say so."""
    f = get_format(fmt)
    value = code_value(f, code)
    cls = _code_class(f, code, value)
    if cls in ("nan", "inf"):
        return f"{cls.upper()} code (special: no formula)"
    s, e, m = _fields_of_code(f, code)
    if isinstance(f, IntFormat):
        return f"-{1 << (f.bits - 1)}×{s} + {m} = {int(value)}"
    mb = f.mantissa_bits
    sign = f"(-1)^{s} × " if f.signed else ""
    frac = f"{m}/{1 << mb}" if mb else "0"
    if cls == "subnormal" or (cls == "zero" and f.subnormals):
        return f"{sign}2^(1 - {f.bias}) × (0 + {frac})  [subnormal]"
    if mb == 0:
        return f"{sign}2^({e} - {f.bias})"
    return f"{sign}2^({e} - {f.bias}) × (1 + {frac})"


def code_value(fmt: str | Format, code: int) -> float:
    """The value of `code` in `fmt` (float64; NaN/±Inf for special codes)."""
    f = get_format(fmt)
    if not 0 <= int(code) < f.n_codes:
        raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
    return float(decode(np.array([int(code)], dtype=f.code_dtype), f)[0])


# ------------------------------------------------------------------------------------------------
# policy and errors
# ------------------------------------------------------------------------------------------------


def resolve_policy(fmt: str | Format, convention: str | None = None, rounding: str | None = None,
                   overflow: str | None = None) -> CastPolicy:
    """The policy a cast uses: `convention`'s (`policy_for`), or the format's default policy named
    "default" when `convention` is None or ''; then each override ('' / None keeps the base's) that
    differs from the base's own mode, the result named `<base>+custom`. See the module docstring."""
    f = get_format(fmt)
    for name, given in (("convention", convention), ("rounding", rounding), ("overflow", overflow)):
        if given is not None and not isinstance(given, str):
            raise TypeError(f"{name} must be a name (text) or None, got {given!r}")
    if convention:
        if convention not in CONVENTIONS:
            raise ValueError(f"unknown convention {convention!r}; known: {', '.join(CONVENTIONS)}")
        if convention_row(convention, f).provided:
            base = policy_for(convention, f)
        else:
            home = providers(f)
            if not home:
                raise ValueError(f"no convention provides a cast to {f.name}")
            base = policy_for(home[0], f)
    else:
        base = default_policy(f).with_(name=DEFAULT_POLICY_NAME)
    if rounding and rounding not in _ROUNDINGS:
        raise ValueError(f"unknown rounding {rounding!r}; known: {', '.join(_ROUNDINGS)}")
    if overflow and overflow not in _OVERFLOWS:
        raise ValueError(f"unknown overflow {overflow!r}; known: {', '.join(_OVERFLOWS)}")
    changes: dict[str, Any] = {}
    if rounding and rounding != base.rounding.value:
        changes["rounding"] = rounding
    if overflow and overflow != base.overflow.value:
        changes["overflow"] = overflow
    if not changes:
        return base
    return base.with_(**changes, name=f"{base.name}+custom")


def handed_over(fmt: str | Format, convention: str | None) -> str:
    """'' when `convention` (or none) provides `fmt`; else the sentence saying which convention's
    policy `resolve_policy` uses instead."""
    f = get_format(fmt)
    if not convention or convention not in CONVENTIONS or convention_row(convention, f).provided:
        return ""
    home = providers(f)
    return (f"{convention} provides no {f.name} cast: the {home[0]} convention's policy is used"
            if home else "")


def relative_error(x: float, value: float) -> tuple[float, float, float]:
    """(error, abs_error, rel_error) of `value` as an answer for `x`; see the module docstring."""
    if math.isnan(x) or math.isnan(value):
        return math.nan, math.nan, math.nan
    if math.isinf(x) or math.isinf(value):
        if x == value:  # the same infinity: kept exactly
            return 0.0, 0.0, 0.0
        err = value - x if math.isinf(value) != math.isinf(x) else math.copysign(math.inf, value)
        return err, math.inf, math.inf
    err = value - x
    if x == 0:
        return err, abs(err), 0.0 if value == 0 else math.inf
    return err, abs(err), abs(err) / abs(x)


# ------------------------------------------------------------------------------------------------
# one value, one format
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CastExplanation:
    """One typed value cast to one format: everything `lowprec cast` prints."""

    input: str  # the text as typed
    x: float  # its value (real units)
    format: str
    code: int
    hex: str
    bits: str
    fields: tuple[str, ...]  # 'sign' / 'exponent' / 'mantissa' per bit, most significant first
    value: float  # the code's value times decode_scale (real units)
    exact: str  # power-of-two text of the code's value (before scaling)
    cls: str  # zero | subnormal | normal | inf | nan
    error: float  # value - x
    abs_error: float
    rel_error: float
    formula: str  # the decoding formula with the fields filled in
    policy: CastPolicy
    decode_scale: float = 1.0
    #: the reals that encode to this code (real units); None for NaN/Inf codes, stochastic
    #: rounding and formats wider than 16 bits
    rounding_bin: RoundingBin | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in (
            "input", "x", "format", "code", "hex", "bits", "value", "exact", "cls", "error",
            "abs_error", "rel_error", "formula", "decode_scale")}
        d["fields"] = list(self.fields)
        d["policy"] = self.policy.to_dict()
        d["rounding_bin"] = self.rounding_bin.to_dict() if self.rounding_bin is not None else None
        return d

    def policy_line(self) -> str:
        """'E4M3FN: policy torch (rounding nearest_even, overflow saturate)', with the decode scale
        when the grid is scaled."""
        p = self.policy
        scaled = f", decode_scale {self.decode_scale!r}" if self.decode_scale != 1.0 else ""
        return f"{self.format}: policy {p.name} (rounding {p.rounding.value}, overflow {p.overflow.value}{scaled})"

    def line(self, width: int = 0) -> str:
        """The value's line: '465 → 01111110 0x7E  value 448.0 = 7/4 × 2^8  abs err 17  rel err
        0.0366  bin [432, inf)'; the input is right-aligned to `width` characters."""
        return (f"{self.input:>{width}} → {self.bits} {self.hex}  value {self.value!r} = {self.exact}  "
                f"abs err {self.abs_error:.3g}  rel err {self.rel_error:.3g}  bin {self.bin_text()}")

    def bin_text(self) -> str:
        """The rounding bin as an interval, '[11.5, 12.5]' (closed/open ends as the tie rule says);
        '—' when there is none (NaN/Inf codes, stochastic rounding, FP32)."""
        b = self.rounding_bin
        if b is None:
            return "—"
        return f"{'[' if b.lo_closed else '('}{b.lo:.6g}, {b.hi:.6g}{']' if b.hi_closed else ')'}"

    def text(self) -> str:
        """What `lowprec cast` prints for this value: the policy line, then the value's line."""
        return f"{self.policy_line()}\n{self.line()}"

    def __str__(self) -> str:
        return self.text()

    def with_code(self, code: int) -> "CastExplanation":
        """The same explanation shown for another code of the same value (a NaN payload, -0 …)."""
        f = get_format(self.format)
        bin_ = _scaled_bin(f, code, self.policy, self.decode_scale)
        return replace(self, code=code, hex=_hex(f, code), bits=format(code, f"0{f.bits}b"),
                       cls=_code_class(f, code, code_value(f, code)),
                       formula=formula_text(f, code), rounding_bin=bin_)


def cast_text(explanations: "list[CastExplanation] | tuple[CastExplanation, ...]") -> str:
    """What `lowprec cast` prints for several values: each run of values cast under the same format,
    policy and scale gets one policy line, then one line per value, inputs aligned."""
    width = max((len(e.input) for e in explanations), default=0)
    lines: list[str] = []
    last: str | None = None
    for e in explanations:
        head = e.policy_line()
        if head != last:
            lines.append(head)
            last = head
        lines.append(e.line(width))
    return "\n".join(lines)


def _hex(f: Format, code: int) -> str:
    return f"0x{code:0{(f.bits + 3) // 4}X}"


def _scaled_bin(f: Format, code: int, policy: CastPolicy, decode_scale: float) -> RoundingBin | None:
    if f.bits > 16 or policy.rounding is Rounding.STOCHASTIC:
        return None
    if not math.isfinite(code_value(f, code)):
        return None
    b = rounding_bin(f, code, policy)
    if decode_scale == 1.0:
        return b
    return RoundingBin(b.code, b.value * decode_scale, b.lo * decode_scale, b.hi * decode_scale,
                       b.lo_closed, b.hi_closed)


def _check_decode_scale(decode_scale: Any) -> float:
    if (isinstance(decode_scale, bool) or not isinstance(decode_scale, (int, float))
            or not math.isfinite(decode_scale) or decode_scale <= 0):
        raise ValueError(f"decode_scale must be a positive finite number (amax / F), got {decode_scale!r}")
    return float(decode_scale)


def _cast(f: Format, text: str, x: float, decode_scale: float, policy: CastPolicy,
          seed: int) -> CastExplanation:
    x_scaled = x / decode_scale
    if math.isfinite(x) and x != 0 and not math.isfinite(x_scaled):
        raise ValueError(f"{text} / decode_scale {decode_scale} overflows float64")
    rng = np.random.default_rng(seed) if policy.rounding is Rounding.STOCHASTIC else None
    code = int(encode(np.array([x_scaled], dtype=np.float64), f, policy, rng=rng)[0])
    v_fmt = code_value(f, code)
    value = v_fmt * decode_scale if math.isfinite(v_fmt) else v_fmt
    err, abs_err, rel = relative_error(x, value)
    return CastExplanation(
        input=text, x=x, format=f.name, code=code, hex=_hex(f, code),
        bits=format(code, f"0{f.bits}b"), fields=bit_fields(f), value=value,
        exact=power_of_two_text(v_fmt), cls=_code_class(f, code, v_fmt), error=err,
        abs_error=abs_err, rel_error=rel, formula=formula_text(f, code), policy=policy,
        decode_scale=decode_scale, rounding_bin=_scaled_bin(f, code, policy, decode_scale),
    )


def explain_cast(text: str, fmt: str | Format, convention: str | None = DEFAULT_CONVENTION,
                 rounding: str | None = None, overflow: str | None = None, *, seed: int = 0,
                 decode_scale: float = 1.0) -> CastExplanation:
    """Cast the typed value `text` to `fmt` under `resolve_policy(fmt, convention, rounding,
    overflow)` (default: `DEFAULT_CONVENTION`; None or '' for the format's default policy) on the
    grid scaled by `decode_scale`; see the module docstring for every rule. `.text()` (or `str()`)
    is what `lowprec cast` prints for it.

    Raises ValueError/TypeError for unparseable text, unknown names, a bad decode_scale or a value
    the policy refuses (NaN into E2M1, zero into E8M0 …)."""
    f = get_format(fmt)
    policy = resolve_policy(f, convention, rounding, overflow)
    return _cast(f, text, parse_value(text), _check_decode_scale(decode_scale), policy, seed)


# ------------------------------------------------------------------------------------------------
# the bin view: neighbours, bins, gaps, code table
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Grid:
    values: np.ndarray  # sorted distinct finite values (±0 merged), float64
    codes: np.ndarray  # one code per value (+0 for zero)
    table: CodeTable


@lru_cache(maxsize=None)
def _grid(name: str) -> _Grid:
    table = code_table(name)
    finite = np.isfinite(table.value)
    # +0 sorts before -0 among equal values when ordered by (value, sign): keep the first of each
    order = np.lexsort((table.sign[finite], table.value[finite]))
    vals = table.value[finite][order]
    codes = table.codes[finite][order]
    keep = np.concatenate(([True], vals[1:] != vals[:-1]))
    return _Grid(vals[keep].astype(np.float64), codes[keep].astype(np.int64), table)


def window_bins(fmt: str | Format, policy: CastPolicy, index: int,
                half_width: int = WINDOW) -> dict[str, list[Any]]:
    """Rounding bins (`formats.rounding_bin`) of the distinct values `index - half_width ..
    index + half_width` of `fmt` (indices into its sorted finite values, ±0 merged into one zero
    whose bin is the union of +0's and -0's) under `policy`.

    Columns: code, value, lo, hi, lo_closed, hi_closed (floats; ±inf for unbounded ends).
    Stochastic rounding has no bins: nearest-even's are returned (the caller says so)."""
    f = get_format(fmt)
    grid = _grid(f.name)
    vals, codes = grid.values, grid.codes
    first, last = max(0, index - half_width), min(vals.size - 1, index + half_width)
    if policy.rounding is Rounding.STOCHASTIC:
        policy = policy.with_(rounding="nearest_even", name=policy.name)
    out: dict[str, list[Any]] = {k: [] for k in ("code", "value", "lo", "hi", "lo_closed", "hi_closed")}
    for i in range(first, last + 1):
        c = int(codes[i])
        b = rounding_bin(f, c, policy)
        lo, lo_c = b.lo, b.lo_closed
        if b.value == 0 and isinstance(f, FloatFormat) and f.has_negative_zero:
            neg = rounding_bin(f, c | (1 << f.sign_shift), policy)
            if neg.hi == 0 and neg.lo < 0:  # -0 takes the negative values that round to zero
                lo, lo_c = neg.lo, neg.lo_closed
        out["code"].append(c)
        out["value"].append(float(vals[i]))
        out["lo"].append(float(lo))
        out["hi"].append(float(b.hi))
        out["lo_closed"].append(bool(lo_c))
        out["hi_closed"].append(bool(b.hi_closed))
    return out


def _gaps(f: Format, decode_scale: float) -> dict[str, list[float]]:
    """log2 value → log2 gap to the next value over the positive range (real units)."""
    v = _grid(f.name).values
    idx = np.nonzero(v > 0)[0]
    idx = idx[idx + 1 < v.size]
    vals = v[idx] * decode_scale
    gap = (v[idx + 1] - v[idx]) * decode_scale
    return {"log2_value": np.log2(vals).tolist(), "log2_gap": np.log2(gap).tolist(),
            "value": vals.tolist(), "gap": gap.tolist()}


@dataclass(frozen=True)
class BinView:
    """Everything the bin explorer shows for one value (arrays as lists)."""

    input_text: str
    x: float  # the parsed input, real units
    decode_scale: float  # grid = format values × decode_scale (= amax / F)
    scaled_x: float  # x / decode_scale: what is encoded
    main: CastExplanation
    compare: CastExplanation | None
    bins: dict[str, list[Any]]  # window of rounding bins (real units), see window_bins
    compare_values: list[float]  # the compare format's values inside the window (real units)
    gaps: dict[str, list[float]]  # log2 value → log2 gap over the positive range (main format)
    compare_gaps: dict[str, list[float]]
    table: list[dict[str, Any]] = field(default_factory=list)  # code table rows (≤ 8-bit formats)
    note: str = ""  # stochastic probabilities, overflow, NaN …

    def to_dict(self) -> dict[str, Any]:
        return {"input_text": self.input_text, "x": self.x, "decode_scale": self.decode_scale,
                "scaled_x": self.scaled_x, "main": self.main.to_dict(),
                "compare": self.compare.to_dict() if self.compare is not None else None,
                "bins": self.bins, "compare_values": self.compare_values, "gaps": self.gaps,
                "compare_gaps": self.compare_gaps, "table": self.table, "note": self.note}


def _bin_view_format(fmt: str | Format, what: str) -> Format:
    f = get_format(fmt)
    if f.bits > 16:
        raise ValueError(f"the bin explorer lists formats up to 16 bits ({', '.join(BIN_VIEW_FORMATS)}); "
                         f"{what} {f.name} has {f.bits}")
    return f


def explain_value(text: str, fmt: str | Format = "E4M3FN", convention: str | None = DEFAULT_CONVENTION,
                  rounding: str | None = None, overflow: str | None = None,
                  compare_format: str | Format | None = "E5M2", decode_scale: float = 1.0,
                  code: int | None = None, seed: int = 0) -> BinView:
    """The bin explorer's view of the typed value `text` in `fmt` (and `compare_format`) under
    `resolve_policy(fmt, convention, rounding, overflow)`, on the grid scaled by `decode_scale`.

    `code` (optional) shows that code instead of the encoded one (a flipped bit: NaN payloads and
    the like that no value encodes to); it must decode to the parsed value (or both NaN).
    Raises ValueError/TypeError as `explain_cast` does, and for formats wider than 16 bits."""
    f = _bin_view_format(fmt, "format")
    cmp_fmt = _bin_view_format(compare_format, "compare_format") if compare_format else None
    scale = _check_decode_scale(decode_scale)
    x = parse_value(text)
    policy = resolve_policy(f, convention, rounding, overflow)
    main = _cast(f, text, x, scale, policy, seed)
    if code is not None:
        if isinstance(code, bool) or not isinstance(code, (int, np.integer)):
            raise TypeError(f"code must be an integer or None, got {code!r}")
        if not 0 <= code < f.n_codes:
            raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
        cv = code_value(f, code)
        if not (cv * scale == main.value or (math.isnan(cv) and math.isnan(x))):
            raise ValueError(f"code {code} decodes to {cv}, not {text}")
        main = main.with_code(code)
    cmp_cast: CastExplanation | None = None
    if cmp_fmt is not None:
        try:
            cmp_cast = _cast(cmp_fmt, text, x, scale, resolve_policy(cmp_fmt, convention, rounding,
                                                                     overflow), seed)
        except ValueError:
            cmp_cast = None  # e.g. NaN into E2M1: the main format's answer still stands
    grid = _grid(f.name)
    x_scaled = x / scale
    v_main = code_value(f, main.code)
    notes: list[str] = []
    if math.isfinite(v_main):
        centre = int(np.searchsorted(grid.values, v_main))
    elif math.isinf(x_scaled) or math.isfinite(x_scaled):
        centre = 0 if x_scaled < 0 else grid.values.size - 1
    else:
        centre = int(np.searchsorted(grid.values, 0.0))  # NaN: the window around zero
    if handed_over(f, convention):
        notes.append(handed_over(f, convention))
    if not math.isfinite(v_main):
        notes.append(f"{text} encodes to {main.cls.upper()} in {f.name}: no rounding bin")
    bins = window_bins(f, policy, centre)
    for key in ("value", "lo", "hi"):
        bins[key] = [b * scale for b in bins[key]]
    if policy.rounding is Rounding.STOCHASTIC and math.isfinite(x_scaled):
        i = int(np.searchsorted(grid.values, x_scaled))
        if 0 < i < grid.values.size and grid.values[i] != x_scaled:
            a, b = float(grid.values[i - 1]), float(grid.values[i])
            p_up = (x_scaled - a) / (b - a)
            notes.append(f"stochastic: rounds to {power_of_two_text(b)} with probability {p_up:.4g} "
                         f"and to {power_of_two_text(a)} with {1 - p_up:.4g} (seed {seed} drew "
                         f"{main.exact}); the bins drawn are nearest-even's")
    lo_w, hi_w = min(bins["value"]), max(bins["value"])
    compare_values: list[float] = []
    compare_gaps: dict[str, list[float]] = {}
    if cmp_fmt is not None:
        cmp_vals = _grid(cmp_fmt.name).values * scale
        compare_values = cmp_vals[(cmp_vals >= lo_w) & (cmp_vals <= hi_w)].tolist()
        compare_gaps = _gaps(cmp_fmt, scale)
    return BinView(
        input_text=text, x=x, decode_scale=scale, scaled_x=x_scaled, main=main, compare=cmp_cast,
        bins=bins, compare_values=compare_values, gaps=_gaps(f, scale), compare_gaps=compare_gaps,
        table=grid.table.rows() if f.bits <= TABLE_MAX_BITS else [], note="; ".join(notes),
    )
