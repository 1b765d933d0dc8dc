"""Scale conventions: the decode scale and its inverse, the encode scale, named so the direction is
never ambiguous.

`decode_scale = amax · 2^margin / F` multiplies decoded codes back to real values; `encode_scale =
F / amax / 2^margin` multiplies the input before the cast (Transformer Engine stores the latter as
`scale` and its reciprocal as `scale_inv`), with F the largest finite value of the element format and
`margin` a number of binades of head-room. A zero, negative-zero or non-finite amax has no
information to size a scale from, so it gets the *safe scale* 1.0 (the identity) for both: a zero
group casts to zeros under any scale, and a NaN/Inf group goes through the element cast policy
unchanged. Source: NVIDIA Transformer Engine FP8 primer (delayed/current scaling, margin).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import Format

__all__ = ["check_margin", "amax_array", "decode_scale", "encode_scale", "usable_amax"]


def check_margin(margin: Any) -> int:
    """`margin` as a non-negative int (binades of head-room); TypeError/ValueError otherwise."""
    if isinstance(margin, bool) or not isinstance(margin, (int, np.integer)):
        raise TypeError(f"margin must be an integer number of binades, got {margin!r}")
    if margin < 0:
        raise ValueError(f"margin={margin} is negative; allowed: 0, 1, 2, …")
    return int(margin)


def amax_array(amax: Any) -> np.ndarray:
    """`amax` as a float64 array; a negative entry raises ValueError (an amax is a magnitude)."""
    a = formats.as_float_array(amax, "amax").astype(np.float64)  # object/text arrays: TypeError naming amax
    if np.any(a < 0):
        bad = a[a < 0].reshape(-1)[0]
        raise ValueError(f"amax={bad!r} is negative; an amax is a maximum magnitude (≥ 0)")
    return a


def usable_amax(amax: Any) -> np.ndarray:
    """True where an amax can size a scale (finite and > 0); elsewhere the safe scale 1.0 applies."""
    a = amax_array(amax)
    return np.isfinite(a) & (a > 0)


def encode_scale(amax: Any, fmt: str | Format, margin: int = 0) -> Any:
    """`F / amax / 2^margin` (float64), the factor applied before the cast; 1.0 where amax is 0 or
    not finite. Scalar in, float out; array in, array out."""
    f = formats.get_format(fmt)
    m = check_margin(margin)
    a = amax_array(amax)
    ok = np.isfinite(a) & (a > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        s = np.where(ok, f.max / np.where(ok, a, 1.0) / 2.0**m, 1.0)
    return float(s) if s.ndim == 0 else s


def decode_scale(amax: Any, fmt: str | Format, margin: int = 0) -> Any:
    """`amax · 2^margin / F` (float64), the factor applied to decoded codes; 1.0 where amax is 0 or
    not finite. The reciprocal of `encode_scale`."""
    f = formats.get_format(fmt)
    m = check_margin(margin)
    a = amax_array(amax)
    ok = np.isfinite(a) & (a > 0)
    s = np.where(ok, a * 2.0**m / f.max, 1.0)
    return float(s) if s.ndim == 0 else s

