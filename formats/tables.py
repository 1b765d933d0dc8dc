"""Code tables and rounding bins: every code of a format with its fields, value, class and gaps.

`rounding_bin` gives the interval of reals that a policy encodes to a code; its edges are the
midpoints between neighbours for the nearest modes (which edge is closed is the tie rule), and the
codes' own values for directed modes.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from .codec import _decode_table, classify_codes, default_policy
from .policy import CastPolicy, Overflow, Rounding
from .specs import Format, FloatFormat, IntFormat, get_format


@dataclass(frozen=True)
class CodeTable:
    """Every code of a format, as parallel arrays (row i is code i)."""

    format: str
    bits: int
    codes: np.ndarray  # int64
    sign: np.ndarray  # sign field (0 for unsigned formats)
    exponent: np.ndarray  # exponent field E (0 for integer grids)
    mantissa: np.ndarray  # mantissa field M (the integer's magnitude bits for integer grids)
    value: np.ndarray  # float64 value (NaN/±Inf for specials)
    cls: np.ndarray  # 'zero' | 'subnormal' | 'normal' | 'inf' | 'nan'
    gap_next: np.ndarray  # distance to the next larger finite value (NaN at the top and specials)
    rel_gap: np.ndarray  # gap_next / |value| (NaN where the value is 0 or special)

    def bit_string(self, code: int) -> str:
        return format(int(code), f"0{self.bits}b")

    def rows(self) -> list[dict[str, Any]]:
        """One dict per code (floats as floats: NaN/±Inf included; `lowprec.strictjson` writes
        them as "nan"/"inf"/"-inf")."""
        out = []
        for i in range(self.codes.size):
            out.append({
                "code": int(self.codes[i]),
                "hex": f"0x{int(self.codes[i]):0{(self.bits + 3) // 4}X}",
                "bits": self.bit_string(self.codes[i]),
                "sign": int(self.sign[i]),
                "exponent": int(self.exponent[i]),
                "mantissa": int(self.mantissa[i]),
                "value": float(self.value[i]),
                "class": str(self.cls[i]),
                "gap_next": float(self.gap_next[i]),
                "rel_gap": float(self.rel_gap[i]),
            })
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "bits": self.bits, "rows": self.rows()}


def code_table(fmt: str | Format) -> CodeTable:
    """The full code table of a format (up to 16 bits; FP32 is refused as too large).

    Cached per format; its arrays are read-only."""
    return _code_table(get_format(fmt))


@lru_cache(maxsize=None)
def _sorted_values(f: Format) -> np.ndarray:
    """Distinct finite values of a format, ascending (±0 merged), float64, read-only."""
    t = _code_table(f)
    vals = np.unique(t.value[np.isfinite(t.value)]) + 0.0  # the zero kept is +0 on every CPU
    vals.setflags(write=False)
    return vals


@lru_cache(maxsize=None)
def _code_table(f: Format) -> CodeTable:
    if f.bits > 16:
        raise ValueError(f"code_table lists formats up to 16 bits; {f.name} has {f.bits}")
    codes = np.arange(f.n_codes, dtype=np.int64)
    value = _decode_table(f, "canonical").astype(np.float64)
    cls = classify_codes(f)
    if isinstance(f, FloatFormat):
        m = f.mantissa_bits
        sign = (codes >> f.sign_shift) & 1 if f.signed else np.zeros_like(codes)
        exponent = (codes & f.magnitude_mask) >> m
        mantissa = codes & ((1 << m) - 1)
    else:
        sign = (codes >> (f.bits - 1)) & 1 if f.signed else np.zeros_like(codes)
        exponent = np.zeros_like(codes)
        mantissa = codes & ((1 << (f.bits - 1)) - 1)
    finite = np.isfinite(value)
    uniq = np.unique(value[finite]) + 0.0  # sorted distinct finite values (-0 and +0 merge into +0)
    gap = np.full(codes.shape, np.nan)
    pos = np.searchsorted(uniq, value[finite])
    nxt = np.where(pos + 1 < uniq.size, uniq[np.minimum(pos + 1, uniq.size - 1)], np.nan)
    gap[finite] = nxt - value[finite]
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where((value != 0) & finite, gap / np.abs(value), np.nan)
    for arr in (codes, sign, exponent, mantissa, value, cls, gap, rel):
        arr.setflags(write=False)
    return CodeTable(f.name, f.bits, codes, sign, exponent, mantissa, value, cls, gap, rel)


@dataclass(frozen=True)
class RoundingBin:
    """The reals that encode to `code`: from lo to hi, each edge open or closed."""

    code: int
    value: float
    lo: float
    hi: float
    lo_closed: bool
    hi_closed: bool

    def contains(self, x: float) -> bool:
        above = x > self.lo or (self.lo_closed and x == self.lo)
        below = x < self.hi or (self.hi_closed and x == self.hi)
        return above and below

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "value": self.value, "lo": self.lo, "hi": self.hi,
                "lo_closed": self.lo_closed, "hi_closed": self.hi_closed}


def rounding_bin(fmt: str | Format, code: int, policy: CastPolicy | None = None) -> RoundingBin:
    """Interval of reals that `policy` encodes to `code` (finite codes, signed zeros included).

    Nearest modes: edges at the midpoints to the neighbouring values; a midpoint belongs to this
    code when the tie rule sends it here (nearest_even: this code's last bit is 0; nearest_away:
    the neighbour nearer zero loses the tie). Directed modes: [v, next) when rounding goes down in
    value (down; toward_zero for positives), (prev, v] when it goes up. At the top, values beyond
    the overflow threshold belong to the largest finite code when it absorbs overflow (saturate,
    saturate_propagate, or rounding toward zero), else to ±Inf/NaN. Zero: +0 takes 0 itself; -0
    takes the negative values that round to zero. Round to odd: an odd code takes the open interval
    between its neighbours, an even code only its own value (plus, saturating, what overflows onto
    it). Stochastic rounding has no bin (ValueError).
    """
    f = get_format(fmt)
    pol = policy or default_policy(f)
    if isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, np.integer)):
        raise TypeError(f"code must be an integer, got {code!r} ({type(code).__name__})")
    code = int(code)
    if not 0 <= code < f.n_codes:
        raise ValueError(f"code {code} is out of range for {f.name} (0..{f.n_codes - 1})")
    if pol.rounding is Rounding.STOCHASTIC:
        raise ValueError("stochastic rounding maps a value to two codes at random; it has no bin")
    table = code_table(f)
    v = float(table.value[code])
    if not np.isfinite(v):
        raise ValueError(f"code {code} of {f.name} is {v}; only finite codes have rounding bins")
    grid = _sorted_values(f)
    fv = Fraction(v)
    i = int(np.searchsorted(grid, v))
    prev = Fraction(float(grid[i - 1])) if i > 0 else None
    nxt = Fraction(float(grid[i + 1])) if i + 1 < grid.size else None
    top = Fraction(float(grid[-1]))
    # one quantum above max: where the next value would be (2·max when there are no mantissa bits)
    top_gap = Fraction(2) ** (f.emax - f.mantissa_bits) if isinstance(f, FloatFormat) else Fraction(1)
    neg_zero = v == 0 and bool(np.signbit(v))
    has_neg_zero = isinstance(f, FloatFormat) and f.has_negative_zero
    r = pol.rounding
    sat = pol.overflow is not Overflow.NONFINITE  # finite values beyond max: saturated
    # an unsigned format's lowest code: its zero (0 itself included), or E8M0's 2^-127 (above 0)
    unsigned_floor = None if f.signed else (Fraction(0), f.has_zero)
    lo: Fraction | None
    hi: Fraction | None
    if r is Rounding.TO_ODD:
        return _odd_bin(f, int(code), v, prev, nxt, top_gap, sat, neg_zero, has_neg_zero, unsigned_floor)
    if r in (Rounding.NEAREST_EVEN, Rounding.NEAREST_AWAY):
        lo = (prev + fv) / 2 if prev is not None else None
        hi = (fv + nxt) / 2 if nxt is not None else None
        if r is Rounding.NEAREST_EVEN:
            even = (int(code) & 1) == 0 if isinstance(f, FloatFormat) else int(v) % 2 == 0
            lo_c = hi_c = even
        else:
            lo_c, hi_c = fv > 0, fv < 0
        if nxt is None and not sat:  # overflow threshold: half a top gap above max
            hi = top + top_gap / 2
            hi_c = r is Rounding.NEAREST_EVEN and (int(code) & 1) == 0
        if prev is None and not sat and f.signed:
            lo = -(top + top_gap / 2)
            lo_c = r is Rounding.NEAREST_EVEN and (int(code) & 1) == 0
        if prev is None and unsigned_floor is not None:  # E8M0: no zero, all above 0 up to here
            lo, lo_c = unsigned_floor
        if v == 0 and has_neg_zero:
            if neg_zero:
                hi, hi_c = Fraction(0), False
            else:
                lo, lo_c = Fraction(0), True
    else:
        goes_down = r is Rounding.DOWN or (r is Rounding.TOWARD_ZERO and (fv > 0 or (fv == 0 and not neg_zero)))
        if v == 0 and has_neg_zero:
            if r is Rounding.TOWARD_ZERO:
                lo, lo_c, hi, hi_c = ((prev, False, Fraction(0), False) if neg_zero
                                      else (Fraction(0), True, nxt, False))
            elif r is Rounding.UP:
                lo, lo_c, hi, hi_c = ((prev, False, Fraction(0), False) if neg_zero
                                      else (Fraction(0), True, Fraction(0), True))
            else:  # DOWN
                lo, lo_c, hi, hi_c = ((Fraction(0), False, Fraction(0), False) if neg_zero
                                      else (Fraction(0), True, nxt, False))
            if neg_zero and r is Rounding.DOWN:
                return RoundingBin(int(code), v, 0.0, 0.0, False, False)  # only -0 itself
        elif goes_down:
            lo, lo_c, hi, hi_c = fv, True, nxt, False
        else:
            lo, lo_c, hi, hi_c = prev, False, fv, True
        if nxt is None and (sat or goes_down):
            hi, hi_c = None, False
        if prev is None and f.signed and (sat or not goes_down):
            lo, lo_c = None, False
        if prev is None and unsigned_floor is not None:
            lo, lo_c = unsigned_floor
    lo_f = float(lo) if lo is not None else -np.inf
    hi_f = float(hi) if hi is not None else np.inf
    return RoundingBin(int(code), v, lo_f, hi_f, bool(lo_c and lo is not None),
                       bool(hi_c and hi is not None))


def _odd_bin(f: Format, code: int, v: float, prev: Fraction | None, nxt: Fraction | None,
             top_gap: Fraction, sat: bool, neg_zero: bool, has_neg_zero: bool,
             unsigned_floor: tuple[Fraction, bool] | None) -> RoundingBin:
    """`rounding_bin` under round-to-odd: truncate the magnitude, then an inexact result takes the
    odd one of its two neighbours. Neighbouring finite values have neighbouring codes, so an odd
    code takes (prev, next), an even one only itself; at the top, values beyond max truncate to max
    (or beyond): an odd max keeps those below max + gap, an even max none — saturation gives it
    every value above. E8M0's lowest code (2^-127, even) also takes what lies below it."""
    fv = Fraction(v)
    odd = (code & 1) == 1 if isinstance(f, FloatFormat) else int(v) % 2 != 0
    if v == 0:
        if neg_zero:  # only -0 itself: a negative value that truncates to -0 goes to the odd -min
            return RoundingBin(code, v, 0.0, 0.0, False, False)
        return RoundingBin(code, v, 0.0, 0.0, True, True)
    lo: Fraction | None
    hi: Fraction | None
    if odd:
        lo, lo_c, hi, hi_c = prev, False, nxt, False
    else:
        lo, lo_c, hi, hi_c = fv, True, fv, True
    top = nxt is None if fv > 0 else prev is None
    if top:  # the largest magnitude
        beyond = (None if sat else fv + top_gap if fv > 0 else fv - top_gap) if odd else (
            None if sat else fv)
        if fv > 0:
            hi, hi_c = beyond, bool(beyond == fv)
        else:
            lo, lo_c = beyond, bool(beyond == fv)
    if prev is None and unsigned_floor is not None and not unsigned_floor[1]:  # E8M0's 2^-127
        lo, lo_c = Fraction(0), False
    lo_f = float(lo) if lo is not None else -np.inf
    hi_f = float(hi) if hi is not None else np.inf
    return RoundingBin(code, v, lo_f, hi_f, bool(lo_c and lo is not None), bool(hi_c and hi is not None))
