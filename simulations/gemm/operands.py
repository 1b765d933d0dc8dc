"""Operands of the tensor-core model: checking that values are exact in their PTX type, and the two
arrays the kernels read (values, and 2^e(x) — see `_kernels`).

A value is representable in a `FloatFormat` when it is zero (and the format has a zero), ±Inf (and
the format has infinities), NaN (and the format has a NaN), or finite with |x| ≤ max and x an
integer multiple of its quantum 2^(max(e, emin) - m) (e = floor(log2 |x|), m the mantissa bits);
unsigned formats take no negative value (−0 counts as 0). The check is exact on float64 input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lowprec.formats import FloatFormat

__all__ = ["alignment_powers", "as_values", "first_unrepresentable", "require_representable"]


def as_values(x: Any, what: str) -> np.ndarray:
    """`x` as a new float64 array (numpy, ml_dtypes or float16 arrays, nested lists, scalars);
    TypeError naming `what` for anything else."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{what} must be an array of numbers, got a {type(x).__name__}")
    try:
        return np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array of numbers, got {type(x).__name__}") from None


def first_unrepresentable(v: np.ndarray, fmt: FloatFormat) -> int:
    """Flat index of the first value of `v` (float64) that `fmt` cannot hold exactly, or -1."""
    flat = v.reshape(-1)
    ok = np.zeros(flat.shape, bool)
    nan = np.isnan(flat)
    inf = np.isinf(flat)
    ok |= nan & fmt.has_nan
    ok |= inf & fmt.has_inf & (fmt.signed | (flat > 0))
    fin = np.isfinite(flat)
    zero = flat == 0
    ok |= zero & fmt.has_zero
    nz = fin & ~zero
    if nz.any():
        x = flat[nz]
        lead = np.frexp(x)[1] - 1
        q = np.maximum(lead, fmt.emin) - fmt.mantissa_bits
        scaled = np.ldexp(x, -q)
        good = (scaled == np.round(scaled)) & (np.abs(x) <= fmt.max) & (lead >= fmt.emin - fmt.mantissa_bits)
        if not fmt.signed:
            good &= x > 0
        if not fmt.subnormals:
            good &= lead >= fmt.emin
        ok[np.flatnonzero(nz)] = good
    bad = np.flatnonzero(~ok)
    return int(bad[0]) if bad.size else -1


def require_representable(v: np.ndarray, fmt: FloatFormat, what: str, context: str) -> None:
    """ValueError naming the first element of `v` that is not exactly a `fmt` value."""
    i = first_unrepresentable(v, fmt)
    if i >= 0:
        idx = np.unravel_index(i, v.shape) if v.ndim else ()
        where = f"{what}[{', '.join(str(int(t)) for t in idx)}]" if v.ndim else what
        raise ValueError(f"{where} = {float(v.reshape(-1)[i])!r} is not exactly representable in "
                         f"{fmt.name}, {context}")


def alignment_powers(v: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """2^e(x) for every x of `v`: e(x) = max(floor(log2 |x|), fmt.emin); 0.0 for a zero (it never
    sets the largest exponent), 1.0 for Inf/NaN (their results are non-finite whatever it is)."""
    out = np.ones(v.shape)
    fin = np.isfinite(v)
    lead = np.maximum(np.frexp(np.where(fin, v, 1.0))[1] - 1, fmt.emin)
    out[fin] = np.ldexp(1.0, lead[fin])
    out[v == 0] = 0.0
    return out
