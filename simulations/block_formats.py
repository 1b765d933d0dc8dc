"""Block formats as data: one `BlockFormat` record per recipe, in one registry, and the rule that sizes
an MX block's shared scale.

A block format stores elements of an `element` format in blocks of `block_size` consecutive values
that share one scale of a `scale` format, and optionally one more `tensor_scale` for the whole tensor:

- MX (OCP Microscaling Formats v1.0 §5–6): 32 elements under an E8M0 scale 2^X — MXFP8 (E4M3FN or
  E5M2 elements), MXFP6 (E3M2 or E2M3), MXFP4 (E2M1). The exponent X follows from the block amax by a
  named `ScaleRule` (formulas on the enum), clamped to E8M0's range [-127, 127].
- NVFP4 (NVIDIA Blackwell): E2M1 elements, an E4M3FN scale per 16 elements and an FP32 tensor scale.

`BLOCK_FORMATS` maps each name to its record; `get_block_format` looks one up. Bits per element are
element bits plus the block scale amortised (MXFP8 8.25, MXFP6 6.25, MXFP4 4.25, NVFP4 4.5 plus the
FP32 tensor scale over the tensor). How a real implementation rounds the scale and the elements
(OCP, torchao, Transformer Engine) is a separate concern: a named block-format convention
(`simulations.block_conventions.BlockConvention`), passed beside a `BlockFormat` as `CastPolicy` is
passed beside a `FloatFormat` (`quantize_mx(…, scale_rule, convention=…)`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E2M3, E3M2, E4M3FN, E5M2, E8M0, FP32, FloatFormat

__all__ = [
    "BLOCK_FORMATS",
    "BlockFormat",
    "E8M0_BIAS",
    "E8M0_NAN_CODE",
    "MXFP4",
    "MXFP6_E2M3",
    "MXFP6_E3M2",
    "MXFP8_E4M3",
    "MXFP8_E5M2",
    "MX_ELEMENT_FORMATS",
    "NVFP4",
    "ScaleRule",
    "get_block_format",
    "mx_bits_per_element",
    "mx_scale_exponent",
    "nvfp4_bits_per_element",
]


@dataclass(frozen=True)
class BlockFormat:
    """One block-scaled format: which element format, how many elements share a scale, in what."""

    name: str  # registry key, e.g. "MXFP8_E4M3"
    family: str  # "MX" (OCP Microscaling: a power-of-two E8M0 scale) or "NVFP4"
    element: FloatFormat  # format of each element
    block_size: int  # consecutive elements (along the block axis) that share one scale
    scale: FloatFormat  # format of the block scale: E8M0 for MX, E4M3FN for NVFP4
    tensor_scale: FloatFormat | None = None  # a second-level scale for the whole tensor (NVFP4: FP32)

    @property
    def bits_per_element(self) -> float:
        """Element bits plus the block scale's bits amortised (the tensor scale not counted)."""
        return self.element.bits + self.scale.bits / self.block_size

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family, "element": self.element.name,
                "block_size": self.block_size, "scale": self.scale.name,
                "tensor_scale": None if self.tensor_scale is None else self.tensor_scale.name,
                "bits_per_element": self.bits_per_element}


MXFP8_E4M3 = BlockFormat("MXFP8_E4M3", "MX", E4M3FN, 32, E8M0)
MXFP8_E5M2 = BlockFormat("MXFP8_E5M2", "MX", E5M2, 32, E8M0)
MXFP6_E3M2 = BlockFormat("MXFP6_E3M2", "MX", E3M2, 32, E8M0)
MXFP6_E2M3 = BlockFormat("MXFP6_E2M3", "MX", E2M3, 32, E8M0)
MXFP4 = BlockFormat("MXFP4", "MX", E2M1, 32, E8M0)
NVFP4 = BlockFormat("NVFP4", "NVFP4", E2M1, 16, E4M3FN, FP32)

BLOCK_FORMATS: dict[str, BlockFormat] = {
    f.name: f for f in (MXFP8_E4M3, MXFP8_E5M2, MXFP6_E3M2, MXFP6_E2M3, MXFP4, NVFP4)
}

#: element formats an MX block may hold
MX_ELEMENT_FORMATS = tuple(f.element.name for f in BLOCK_FORMATS.values() if f.family == "MX")
E8M0_BIAS = E8M0.bias  # 127
E8M0_NAN_CODE = E8M0.magnitude_mask  # 0xFF


def get_block_format(name: str | BlockFormat) -> BlockFormat:
    """The block format called `name` (case-insensitive; '-' for '_'); a BlockFormat passes through.
    Raises ValueError naming the known ones."""
    if isinstance(name, BlockFormat):
        return name
    if isinstance(name, str):
        key = name.strip().upper().replace("-", "_")
        if key in BLOCK_FORMATS:
            return BLOCK_FORMATS[key]
    raise ValueError(f"unknown block format {name!r}; known: {', '.join(BLOCK_FORMATS)}")


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


def mx_bits_per_element(elem_format: str = "E4M3FN", block_size: int = 32) -> float:
    """Element bits + E8M0 bits / block_size: MXFP8 8.25, MXFP6 6.25, MXFP4 4.25 at block 32."""
    f = element_format(elem_format, MX_ELEMENT_FORMATS)
    return f.bits + E8M0.bits / check_block_size(block_size)


def nvfp4_bits_per_element(n_elements: int | None = None, block_2d: bool = False) -> float:
    """4 + 8/16 = 4.5 (8/256 for 16×16 tiles), plus the FP32 tensor scale over n_elements if given."""
    if not isinstance(block_2d, (bool, np.bool_)):
        raise TypeError(f"block_2d must be True or False, got {block_2d!r}")
    per_scale = NVFP4.block_size * NVFP4.block_size if block_2d else NVFP4.block_size
    bits = NVFP4.element.bits + NVFP4.scale.bits / per_scale
    if n_elements is not None:
        if isinstance(n_elements, bool) or not isinstance(n_elements, (int, np.integer)):
            raise TypeError(f"n_elements must be a positive integer or None, got {n_elements!r}")
        if n_elements < 1:
            raise ValueError(f"n_elements={n_elements} must be positive")
        assert NVFP4.tensor_scale is not None
        bits += NVFP4.tensor_scale.bits / n_elements
    return bits
