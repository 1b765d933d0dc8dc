"""The rule that sizes an MX block's shared power-of-two scale (`ScaleRule`, `mx_scale_exponent`) and
the small checks every block quantizer shares (element format allowed, block size).

An MX block (OCP Microscaling Formats v1.0 §5–6) stores elements of one of `MX_ELEMENT_FORMATS` under
one E8M0 scale 2^X. The exponent X follows from the block amax by a named `ScaleRule` (formulas on the
enum), clamped to E8M0's range [-127, 127]; its code is X + 127, and 0xFF is the NaN scale. MXINT8
(INT8 elements with an implicit 2^-6) uses the floor rule with the element's emax 0
(`simulations.quant.mxint`).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import E8M0, FloatFormat

__all__ = [
    "E8M0_BIAS",
    "E8M0_NAN_CODE",
    "MX_ELEMENT_FORMATS",
    "ScaleRule",
    "check_block_size",
    "element_format",
    "mx_scale_exponent",
    "scale_rule_of",
]

#: element formats an MX block may hold (OCP MX v1.0 §5: MXFP8, MXFP6, MXFP4)
MX_ELEMENT_FORMATS: tuple[str, ...] = ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")
E8M0_BIAS = E8M0.bias  # 127
E8M0_NAN_CODE = E8M0.magnitude_mask  # 0xFF


class ScaleRule(str, Enum):
    """How an MX block's shared exponent X (scale 2^X) follows from its amax; emax_elem is the
    exponent of the element format's largest value, max_elem that value.

    FLOOR: X = floor(log2(amax)) − emax_elem (OCP MX v1.0 §6.3). Values above max_elem · 2^X
        saturate: an E4M3 block with amax 957 gets X = 1 and 957 decodes as 896.
    CEIL:  X = ceil(log2(amax)) − emax_elem (never saturates; may waste a binade).
    RCEIL: X = ceil(log2(amax / max_elem)): the ratio rounded up to a power of two (cuBLAS's UE8M0
        rule; computed exactly). 957 / 448 = 2.14 → X = 2, and 957 decodes as 960.
    EVEN:  X = floor(log2(round(amax))) − emax_elem, where round keeps the element format's mantissa
        width, ties away from zero (torchao's EVEN mode): FLOOR, except that an amax which rounds up
        to the next power of two moves to that binade.
    """

    FLOOR = "floor"
    CEIL = "ceil"
    RCEIL = "rceil"
    EVEN = "even"


def scale_rule_of(scale_rule: Any) -> ScaleRule:
    """`scale_rule` as a ScaleRule; ValueError listing the rules otherwise."""
    try:
        return ScaleRule(scale_rule)
    except ValueError:
        allowed = ", ".join(repr(r.value) for r in ScaleRule)
        raise ValueError(f"scale_rule={scale_rule!r} is not one of {allowed}") from None


def element_format(elem_format: Any, allowed: Sequence[str]) -> FloatFormat:
    """The element format named `elem_format`, if it is one of `allowed`; ValueError otherwise."""
    f = formats.get_format(elem_format)
    if f.name not in allowed or not isinstance(f, FloatFormat):
        raise ValueError(f"element format {f.name} is not allowed here; allowed: {', '.join(allowed)}")
    return f


def check_block_size(block_size: Any) -> int:
    """`block_size` as a positive int; ValueError otherwise."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)) or block_size < 1:
        raise ValueError(f"block_size={block_size!r} must be a positive integer")
    return int(block_size)


def mx_scale_exponent(amax: Any, elem_format: str | FloatFormat = "E4M3FN", scale_rule: str = "floor") -> np.ndarray:
    """Shared exponent X per block amax (int64 array), clamped to [-127, 127]; amax 0 gives -127.
    NaN/Inf amaxes give 128 (the caller maps them to the NaN scale code)."""
    f = element_format(elem_format, MX_ELEMENT_FORMATS)
    rule = scale_rule_of(scale_rule)
    a = formats.as_float_array(amax, "amax").astype(np.float64)  # object/text arrays: TypeError naming amax
    if np.any(a < 0):
        raise ValueError("a block amax cannot be negative")
    finite = np.isfinite(a)
    pos = finite & (a > 0)
    mant, e = np.frexp(np.where(pos, a, 1.0))  # a = mant · 2^e, mant in [0.5, 1)
    sig = mant * 2.0  # a = sig · 2^(e-1), sig in [1, 2)
    x = e.astype(np.int64) - 1 - f.emax  # FLOOR
    if rule is ScaleRule.CEIL:
        x = x + (sig > 1.0)
    elif rule is ScaleRule.RCEIL:
        x = x + (sig > f.max / 2.0**f.emax)  # amax / 2^X ≤ max_elem, else one more binade
    elif rule is ScaleRule.EVEN:
        x = x + (sig >= 2.0 - 2.0 ** -(f.mantissa_bits + 1))  # rounds (half away) up to 2.0
    x = np.clip(x, -E8M0_BIAS, E8M0_BIAS)
    x = np.where(pos, x, -E8M0_BIAS)
    return np.where(finite, x, E8M0_BIAS + 1)
