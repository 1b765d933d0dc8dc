"""Independent oracles for the scaling / block-format / delayed-scaling tests: exact rational
rounding onto a format's grid, with the grid read from ml_dtypes (never from `formats`)."""

from __future__ import annotations

import bisect
from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np

# ml_dtypes type and code width of each element format
DTYPES = {
    "E4M3FN": (ml_dtypes.float8_e4m3fn, 8),
    "E5M2": (ml_dtypes.float8_e5m2, 8),
    "E3M2": (ml_dtypes.float6_e3m2fn, 6),
    "E2M3": (ml_dtypes.float6_e2m3fn, 6),
    "E2M1": (ml_dtypes.float4_e2m1fn, 4),
}


@lru_cache(maxsize=None)
def positive_grid(name: str) -> tuple[list[Fraction], list[int]]:
    """Finite non-negative values of the format (ascending) and their codes, decoded by ml_dtypes."""
    dt, bits = DTYPES[name]
    codes = np.arange(1 << (bits - 1), dtype=np.uint8)  # sign bit clear
    vals = codes.view(dt).astype(np.float64)
    pairs = sorted((Fraction(float(v)), int(c)) for v, c in zip(vals, codes) if np.isfinite(v))
    return [p[0] for p in pairs], [p[1] for p in pairs]


def fmt_max(name: str) -> Fraction:
    return positive_grid(name)[0][-1]


def rne_code(q: Fraction, name: str, negative: bool | None = None) -> int:
    """Code of the exact rational q under round-to-nearest-even with saturation at ±max.
    `negative` gives the sign of a zero q (default: q < 0)."""
    vals, codes = positive_grid(name)
    bits = DTYPES[name][1]
    neg = (q < 0) if negative is None else negative
    mag = abs(q)
    if mag >= vals[-1]:
        c = codes[-1]
    else:
        i = bisect.bisect_right(vals, mag) - 1  # vals[i] <= mag < vals[i + 1]
        lo, hi = vals[i], vals[i + 1]
        if mag - lo < hi - mag:
            c = codes[i]
        elif mag - lo > hi - mag:
            c = codes[i + 1]
        else:  # a tie goes to the code whose last bit is 0
            c = codes[i] if codes[i] % 2 == 0 else codes[i + 1]
    return c | ((1 << (bits - 1)) if neg else 0)


def code_value(code: int, name: str) -> float:
    dt, _ = DTYPES[name]
    return float(np.array([code], np.uint8).view(dt).astype(np.float64)[0])


def half_gap_at(mag: Fraction, name: str) -> Fraction:
    """Half the gap between the grid neighbours around |value| (the worst nearest-rounding error)."""
    vals, _ = positive_grid(name)
    i = min(bisect.bisect_right(vals, mag) - 1, len(vals) - 2)
    return (vals[i + 1] - vals[i]) / 2
