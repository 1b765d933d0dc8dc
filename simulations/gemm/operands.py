"""Operands of the tensor-core model: checking that values are exact in their PTX type, and the two
arrays the kernels read (values, and 2^e(x) — see `_kernels`), in one compiled pass.

A value is representable in a `FloatFormat` when it is zero (and the format has a zero), ±Inf (and
the format has infinities), NaN (and the format has a NaN), or finite with |x| ≤ max and x an
integer multiple of its quantum 2^(max(e, emin) - m) (e = floor(log2 |x|), m the mantissa bits);
unsigned formats take no negative value (−0 counts as 0). The check is exact on float64 input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from lowprec.formats import FloatFormat

from . import _kernels as K

__all__ = ["alignment_powers", "as_values", "checked_powers", "first_unrepresentable", "require_representable",
           "scan"]


def as_values(x: Any, what: str) -> np.ndarray:
    """`x` as a new float64 array (numpy, ml_dtypes or float16 arrays, nested lists, scalars);
    TypeError naming `what` for anything else."""
    if isinstance(x, (str, bytes)):
        raise TypeError(f"{what} must be an array of numbers, got a {type(x).__name__}")
    try:
        return np.array(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an array of numbers, got {type(x).__name__}") from None


def scan(v: np.ndarray, fmt: FloatFormat) -> tuple[int, np.ndarray, tuple[int, int] | None]:
    """One compiled pass over `v`: (flat index of the first value `fmt` cannot hold exactly, or -1;
    2^e(x) for every x — 0 for a zero, 1 for Inf/NaN; (largest leading exponent, smallest quantum
    exponent) of the finite non-zero values, or None when there are none)."""
    flat = np.ascontiguousarray(v, dtype=np.float64).reshape(-1)
    powers = np.empty(flat.shape)
    bad, top, low = K.scan_operand(flat, powers, fmt.emin, fmt.mantissa_bits, fmt.max, fmt.has_zero,
                                   fmt.has_nan, fmt.has_inf, fmt.signed, fmt.subnormals)
    span = (int(top), int(low)) if top > -(1 << 30) else None
    return int(bad), powers.reshape(np.shape(v)), span


def first_unrepresentable(v: np.ndarray, fmt: FloatFormat) -> int:
    """Flat index of the first value of `v` (float64) that `fmt` cannot hold exactly, or -1."""
    return scan(v, fmt)[0]


def _refuse(v: np.ndarray, i: int, fmt: FloatFormat, what: str, context: str) -> None:
    idx = np.unravel_index(i, v.shape) if v.ndim else ()
    where = f"{what}[{', '.join(str(int(t)) for t in idx)}]" if v.ndim else what
    raise ValueError(f"{where} = {float(np.reshape(v, -1)[i])!r} is not exactly representable in "
                     f"{fmt.name}, {context}")


def require_representable(v: np.ndarray, fmt: FloatFormat, what: str, context: str) -> None:
    """ValueError naming the first element of `v` that is not exactly a `fmt` value."""
    i = first_unrepresentable(v, fmt)
    if i >= 0:
        _refuse(v, i, fmt, what, context)


def checked_powers(v: np.ndarray, fmt: FloatFormat, what: str, context: str) -> tuple[np.ndarray, tuple[int, int] | None]:
    """`require_representable`, and the 2^e(x) array and exponent span of `scan`, in one pass."""
    i, powers, span = scan(v, fmt)
    if i >= 0:
        _refuse(v, i, fmt, what, context)
    return powers, span


def alignment_powers(v: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """2^e(x) for every x of `v`: e(x) = max(floor(log2 |x|), fmt.emin); 0.0 for a zero (it never
    sets the largest exponent), 1.0 for Inf/NaN (their results are non-finite whatever it is)."""
    return scan(v, fmt)[1]
