"""MX block quantization (OCP Microscaling Formats v1.0 §5–6): MXFP8, MXFP6, MXFP4.

Every run of `block_size` (default 32) consecutive elements along `axis` shares one E8M0 scale 2^X;
an element is stored as the code of x / 2^X in the element format (E4M3FN, E5M2, E3M2, E2M3, E2M1)
and decodes as value(code) · 2^X. X comes from the block amax by the named `ScaleRule` of
`simulations.block_formats`, clamped to [-127, 127]; its code is X + 127. Dividing by 2^X is exact in
float32/float64 (a power of two; a product that leaves the normal range lies far below the element
grid's half-step), so each element is rounded once, by `formats.encode` under the element policy
(default: nearest-even, saturating — the OCP conversion; an element beyond the grid after scaling
saturates to ±max). Edge cases: an all-zero block gets X = -127 (code 0x00) and zero codes; a block
holding NaN or ±Inf gets the NaN scale 0xFF and zero element codes, and every element of it
dequantizes to NaN (OCP §6.3: a NaN scale makes the whole block NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, FloatFormat

from ._blockwise import (
    amax_bits,
    block_grouping,
    chunk_rngs,
    float_input,
    inf_bits,
    map_chunks,
    scale_groups,
    scale_layout,
    scratch,
)
from .block_formats import (
    E8M0_BIAS,
    E8M0_NAN_CODE,
    MX_ELEMENT_FORMATS,
    ScaleRule,
    check_block_size,
    element_format,
    mx_scale_exponent,
    scale_rule_of,
)
from .granularity import Granularity

__all__ = ["MXTensor", "mx_scale_rule_table", "quantize_mx"]


@dataclass
class MXTensor:
    """An MX-quantized array: element codes in x's shape, one E8M0 scale code per block."""

    codes: np.ndarray  # uint8 element codes, same shape as x
    scale_codes: np.ndarray  # uint8 E8M0 codes, x's shape with `axis` divided by block_size
    elem_format: FloatFormat
    block_size: int
    axis: int
    scale_rule: ScaleRule
    policy: CastPolicy
    source_dtype: str = "float32"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def scale_exponents(self) -> np.ndarray:
        """X per block (int64); 128 marks the NaN scale."""
        return self.scale_codes.astype(np.int64) - E8M0_BIAS

    @property
    def bits_per_element(self) -> float:
        return self.elem_format.bits + 8.0 / self.block_size

    @property
    def granularity(self) -> Granularity:
        return Granularity("block", (self.block_size,), self.axis)

    def dequantize(self) -> np.ndarray:
        """value(code) · 2^X per block (NaN for a NaN scale), in the source dtype (exact)."""
        g = self.granularity
        dt = np.float64 if self.source_dtype == "float64" else np.float32
        vals = g.to_groups(formats.decode(self.codes, self.elem_format).astype(dt))
        scales = formats.decode(scale_groups(self.scale_codes, g, self.shape), formats.E8M0).astype(dt)
        with np.errstate(over="ignore", invalid="ignore"):
            return g.from_groups(vals * scales[:, None], self.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": f"MX{self.elem_format.name}",
            "elem_format": self.elem_format.name,
            "block_size": self.block_size,
            "axis": self.axis,
            "scale_rule": self.scale_rule.value,
            "policy": self.policy.to_dict(),
            "shape": list(self.shape),
            "bits_per_element": self.bits_per_element,
            "codes": self.codes.astype(np.int64).tolist(),
            "scale_codes": self.scale_codes.astype(np.int64).tolist(),
        }


def quantize_mx(
    x: Any,
    elem_format: str = "E4M3FN",
    block_size: int = 32,
    scale_rule: str = "floor",
    axis: int = -1,
    policy: CastPolicy | None = None,
    *,
    rng: np.random.Generator | None = None,
) -> MXTensor:
    """MX-quantize `x` in blocks of `block_size` along `axis` (see the module docstring).

    `policy` is the element cast policy (default `policy_for('ocp', elem)`: nearest-even,
    saturating); stochastic rounding needs `rng` and is reproducible for its seed."""
    f = element_format(elem_format, MX_ELEMENT_FORMATS)
    bs = check_block_size(block_size)
    rule = scale_rule_of(scale_rule)
    pol = formats.policy_for("ocp", f) if policy is None else policy
    if not isinstance(pol, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(pol).__name__}")
    arr = float_input(x)
    shape = tuple(arr.shape)
    g = block_grouping(shape, axis, bs, False)
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    codes = np.empty(blocks.shape, np.uint8)
    scale_codes = np.empty(nb, np.uint8)
    inf_pattern = inf_bits(arr.dtype)
    rngs = chunk_rngs(rng, nb)

    def work(ci: int, lo: int, hi: int) -> None:
        xb = blocks[lo:hi]
        abits = amax_bits(xb)
        bad = abits >= inf_pattern
        amax = abits.view(arr.dtype)
        xexp = mx_scale_exponent(np.where(bad, 0.0, amax), f, rule)
        factor = np.ldexp(np.ones(hi - lo, arr.dtype), (-xexp).astype(np.int32))
        with np.errstate(over="ignore", invalid="ignore"):  # Inf/NaN blocks, zeroed below
            scaled = np.multiply(xb, factor[:, None], out=scratch(xb.shape, arr.dtype))
        if bad.any():
            scaled[bad] = 0
        codes[lo:hi] = formats.encode(scaled, f, pol, rng=None if rngs is None else rngs[ci])
        sc = (xexp + E8M0_BIAS).astype(np.uint8)
        sc[bad] = E8M0_NAN_CODE
        scale_codes[lo:hi] = sc

    map_chunks(nb, work)
    return MXTensor(g.from_groups(codes, shape), scale_layout(scale_codes, g, shape), f, bs, axis, rule, pol,
                    str(arr.dtype))


def mx_scale_rule_table(amax: float = 957.0, elem_format: str = "E4M3FN") -> list[dict[str, Any]]:
    """For one block whose largest element is `amax`: per rule, the exponent X, the scale 2^X and
    what `amax` decodes as (the worked example: E4M3, 957 → 896 under floor, 960 under rceil)."""
    rows = []
    for rule in ScaleRule:
        t = quantize_mx(np.array([amax], np.float64), elem_format, 1, rule.value)
        rows.append({"rule": rule.value, "scale_exponent": int(t.scale_exponents[0]),
                     "decode_scale": 2.0 ** int(t.scale_exponents[0]),
                     "decoded_amax": float(t.dequantize()[0])})
    return rows

