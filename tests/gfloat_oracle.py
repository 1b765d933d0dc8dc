"""gfloat (PyPI, the test extra) as an oracle: its format records and its reference rounding.

`gfloat_info(fmt)` builds gfloat's own record of a lowprec format from the format's *name* only
(P3109 names through `format_info_p3109`, the OCP/IEEE formats through gfloat's constants), so a
wrong lowprec layout disagrees with it. `gfloat_codes(...)` rounds each input with gfloat's
`round_float` (the scalar reference, exact for float32 and float64 inputs) and encodes the result
with `encode_float`: codes to compare with lowprec's as unsigned integers.

The modes gfloat 0.5.2 lacks are composed from the ones it has, as stated where they are built:
- P3109's SatPropagate (`overflow='saturate_propagate'`): finite inputs under `sat=True`, ±Inf and
  NaN under `sat=False`.
- Round to odd (gfloat ≥ 0.6 `RoundMode.ToOdd`, not on PyPI yet): in a copy of the format with one
  more exponent bit (the same bias and precision, so the same codes' parities and no overflow
  below twice the range), the magnitude truncated by `TowardZero` stays when it is exact or its
  code is odd, else the neighbour away from zero (`TowardPositive`/`TowardNegative`) is taken;
  a result beyond the format's max then overflows as P3109 says (±max under SatFinite and
  SatPropagate, else ±Inf, or NaN in a finite format), as gfloat's ToOdd does.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
from gfloat import RoundMode, decode_float, encode_float, round_float
from gfloat import formats as gf
from gfloat.types import Domain, FormatInfo, Signedness

from lowprec import formats as F

#: lowprec rounding → gfloat RoundMode (round to odd: composed, see the module docstring)
ROUND_MODES: dict[str, RoundMode] = {
    "nearest_even": RoundMode.TiesToEven, "nearest_away": RoundMode.TiesToAway,
    "toward_zero": RoundMode.TowardZero, "up": RoundMode.TowardPositive, "down": RoundMode.TowardNegative,
}
#: lowprec stochastic fraction rule → gfloat's stochastic RoundMode with srnumbits
SR_MODES: dict[str, RoundMode] = {
    "truncate": RoundMode.StochasticFastest, "nearest_even": RoundMode.Stochastic,
    "nearest_odd": RoundMode.StochasticOdd, "half": RoundMode.StochasticFast,
}
_NAMED = {"E4M3FN": gf.format_info_ocp_e4m3, "E5M2": gf.format_info_ocp_e5m2, "E2M1": gf.format_info_ocp_e2m1,
          "E3M2": gf.format_info_ocp_e3m2, "E2M3": gf.format_info_ocp_e2m3, "BF16": gf.format_info_bfloat16,
          "FP16": gf.format_info_binary16, "E8M0": gf.format_info_ocp_e8m0}


def gfloat_info(fmt: str | F.Format) -> FormatInfo:
    """gfloat's record of the format, from its name."""
    name = F.get_format(fmt).name
    if name in _NAMED:
        return _NAMED[name]
    m = re.fullmatch(r"p3109_k(\d+)p(\d+)([su])([ef])", name)
    assert m is not None, f"no gfloat record for {name}"
    return gf.format_info_p3109(int(m.group(1)), int(m.group(2)),
                                Signedness.Signed if m.group(3) == "s" else Signedness.Unsigned,
                                Domain.Extended if m.group(4) == "e" else Domain.Finite)


def gfloat_values(fi: FormatInfo) -> np.ndarray:
    """The value of every code (float64; NaN for NaN codes), by gfloat's `decode_float`."""
    return np.array([decode_float(fi, c).fval for c in range(2**fi.k)], np.float64)


def _wider(fi: FormatInfo) -> FormatInfo:
    """fi with one more exponent bit: same precision, bias and subnormals; finite."""
    return FormatInfo(fi.name + "_wide", fi.k + 1, fi.precision, bias=fi.bias, is_signed=fi.is_signed,
                      domain=Domain.Finite, has_nz=fi.has_nz, num_high_nans=0,
                      has_subnormals=fi.has_subnormals, is_twos_complement=False)


def _overflowed(fi: FormatInfo, negative: bool, saturate_finite: bool) -> float:
    if saturate_finite:
        return -fi.max if negative else fi.max
    if fi.domain == Domain.Extended:
        return -math.inf if negative else math.inf
    return math.nan


def round_to_odd(fi: FormatInfo, v: float, overflow: str) -> float:
    """Round to odd, composed from gfloat's directed roundings (see the module docstring)."""
    if math.isnan(v):
        return math.nan
    negative = math.copysign(1.0, v) < 0 and fi.is_signed
    if math.isinf(v):
        return _overflowed(fi, negative, overflow == "saturate")
    wide = _wider(fi)
    t = round_float(wide, v, RoundMode.TowardZero)
    if t != v and encode_float(wide, t) % 2 == 0:
        t = round_float(wide, v, RoundMode.TowardNegative if negative else RoundMode.TowardPositive)
    if abs(t) > fi.max:
        return _overflowed(fi, negative, overflow != "nonfinite")
    return t


def gfloat_round(fi: FormatInfo, v: float, rounding: str, overflow: str, srbits: int = -1,
                 srnumbits: int = 0, sr_fraction: str = "truncate") -> float:
    """One value rounded by gfloat under lowprec's rounding and overflow names."""
    if rounding == "to_odd":
        return round_to_odd(fi, v, overflow)
    mode = SR_MODES[sr_fraction] if rounding == "stochastic" else ROUND_MODES[rounding]
    sat = overflow == "saturate" or (overflow == "saturate_propagate" and math.isfinite(v))
    return float(round_float(fi, v, mode, sat, srbits, srnumbits))


def gfloat_codes(fmt: str | F.Format, xs: np.ndarray, rounding: str = "nearest_even",
                 overflow: str = "nonfinite", srbits: np.ndarray | None = None, srnumbits: int = 0,
                 sr_fraction: str = "truncate") -> np.ndarray:
    """gfloat's code of every input (int64), under lowprec's mode names."""
    fi = gfloat_info(fmt)
    out = np.empty(xs.size, np.int64)
    for i, x in enumerate(xs.reshape(-1).tolist()):
        bits = int(srbits[i]) if srbits is not None else -1
        out[i] = encode_float(fi, gfloat_round(fi, x, rounding, overflow, bits, srnumbits, sr_fraction))
    return out


def format_inputs(fmt: str | F.Format, n_random: int = 1500, seed: int = 0) -> np.ndarray:
    """float32 inputs built from gfloat's values of the format (not lowprec's): every finite value,
    every midpoint between neighbours and the float32 values one step either side of each, values
    beyond max, ±0, ±Inf, NaN, and log-uniform random values over the range (both signs for signed
    formats; unsigned formats get non-negative inputs only: gfloat does not model negatives there)."""
    fi = gfloat_info(fmt)
    vals = gfloat_values(fi)
    finite = np.unique(vals[np.isfinite(vals)]) + 0.0
    mids = (finite[:-1] + finite[1:]) / 2
    mx = float(finite[-1])
    gap = float(finite[-1] - finite[-2])
    edges = np.array([mx + gap / 2, mx + gap, 2 * mx, 0.0, -0.0, np.inf, np.nan], np.float64)
    tiny = float(finite[finite > 0][0])
    rng = np.random.default_rng(seed)
    rand = np.exp2(rng.uniform(math.log2(tiny) - 2, math.log2(mx) + 1, n_random))
    with np.errstate(over="ignore"):
        base = np.concatenate([finite, mids, edges, rand]).astype(np.float32)
        up = np.nextafter(base, np.float32(np.inf))
        down = np.nextafter(base, np.float32(-np.inf))
    x = np.concatenate([base, up, down])
    x = x[np.isnan(x) | (x >= 0) | np.isinf(x)] if not fi.is_signed else np.concatenate([x, -x])
    if not fi.is_signed:
        x = x[np.isnan(x) | ~np.signbit(x)]
    return x.astype(np.float32)


def comparable(codes: np.ndarray, fmt: str | F.Format) -> np.ndarray:
    """Codes as int64, with every NaN code written -1 where the format has more than one (gfloat
    encodes every NaN as its one `code_of_nan`, all bits set: which NaN code a cast writes — sign,
    payload — is the conventions' business, checked against ml_dtypes and torch elsewhere)."""
    f = F.get_format(fmt)
    out = np.asarray(codes).astype(np.int64)
    nan = F.classify_codes(f) == "nan"
    if int(nan.sum()) > 1:
        out = np.where(nan[out], -1, out)
    return out


def codes_report(x: np.ndarray, want: np.ndarray, got: np.ndarray, what: Any = "") -> str:
    bad = np.flatnonzero(want.astype(np.int64) != got.astype(np.int64))
    rows = [f"x={float(x[i])!r} ({x.astype(np.float32).view(np.uint32)[i]:#010x}) gfloat={int(want[i]):#04x} "
            f"lowprec={int(got[i]):#04x}" for i in bad[:8]]
    return f"{what}: {bad.size} of {x.size} differ\n" + "\n".join(rows)
