"""MXINT8 (OCP Microscaling Formats v1.0 §5.3): 32 consecutive elements along an axis share an E8M0
scale 2^X; each element is an INT8 integer k read as k · 2^-6 (its value lies in [−2, 1 63/64]), so
an element decodes as k · 2^(X − 6). X is the floor rule with the element's emax 0:
X = floor(log2 amax), clamped to E8M0's [−127, 127].

Two conventions (`quant.conventions.MXIntScale`): `ocp`, as gfloat 0.5.2 computes it
(`format_info_mxint8`, `quantize_block` with `compute_scale_amax`: exact arithmetic, nearest even,
−2 reachable), and `microxcaling`, Microsoft's emulation library (float32 arithmetic, half away
from zero, symmetric ±127). The element codes are INT8's two's-complement codes (`formats.INT8`), as
unsigned bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E8M0, INT8

from ..scaling.granularity import Granularity
from ._blockwise import amax_bits, block_grouping, float_input, inf_bits, scale_groups, scale_layout
from .conventions import BlockConvention, MXIntScale, get_block_convention
from .scale_rules import E8M0_BIAS, E8M0_NAN_CODE

__all__ = ["MXINT_BLOCK", "MXINT_ELEMENT_SCALE", "MXIntTensor", "quantize_mxint8"]

MXINT_BLOCK = 32
MXINT_ELEMENT_SCALE = 2.0**-6  # the implicit scale of the MXINT8 element: k · 2^-6
_F32 = np.float32


@dataclass
class MXIntTensor:
    """MXINT8 codes (two's-complement INT8, one per element) and one E8M0 code per block."""

    codes: np.ndarray  # uint8 INT8 codes, x's shape
    scale_codes: np.ndarray  # uint8 E8M0 codes, x's shape with `axis` divided by 32
    axis: int
    source_dtype: str = "float32"

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def granularity(self) -> Granularity:
        return Granularity("block", (MXINT_BLOCK,), self.axis)

    @property
    def block_scales(self) -> np.ndarray:
        """2^X per block (float32; NaN for the NaN scale)."""
        return formats.decode(self.scale_codes, E8M0).astype(np.float32)

    def dequantize(self) -> np.ndarray:
        """k · 2^-6 · 2^X per element (exact), in the source dtype; NaN in a NaN-scale block."""
        g = self.granularity
        k = g.to_groups(formats.decode(self.codes, INT8).astype(np.float64))
        s = formats.decode(scale_groups(self.scale_codes, g, self.shape), E8M0).astype(np.float64)
        dt = np.float64 if self.source_dtype == "float64" else np.float32
        with np.errstate(over="ignore", invalid="ignore"):
            return g.from_groups(k * (s * MXINT_ELEMENT_SCALE)[:, None], self.shape).astype(dt)


def _floor_log2_exact(a: np.ndarray) -> np.ndarray:
    """floor(log2 a) for finite a > 0 (float32 or float64), from frexp: exact."""
    _, e = np.frexp(a.astype(np.float64))
    return e.astype(np.int64) - 1


def quantize_mxint8(x: Any, axis: int = -1, *, convention: str | BlockConvention = "ocp") -> MXIntTensor:
    """MXINT8-quantize `x` in blocks of 32 along `axis` under the convention's MXINT8 rule."""
    convention = get_block_convention(convention)
    rule = convention.check_mxint()
    arr = float_input(x)
    if convention.float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    shape = tuple(arr.shape)
    g = block_grouping(shape, axis, MXINT_BLOCK, False)
    blocks = g.to_groups(arr)
    abits = amax_bits(blocks)
    bad = abits >= inf_bits(arr.dtype)
    amax = abits.view(arr.dtype)
    if rule is MXIntScale.OCP:
        pos = ~bad & (amax > 0)
        xexp = np.where(pos, np.clip(_floor_log2_exact(np.where(pos, amax, 1.0)), -E8M0_BIAS, E8M0_BIAS), -E8M0_BIAS)
        factor = np.ldexp(1.0, (6 - xexp).astype(np.int32))  # x / 2^X · 2^6, exact in float64
        scaled = blocks.astype(np.float64) * factor[:, None]
        scaled[bad] = 0.0
        codes = formats.encode(scaled, INT8, formats.policy_for("ocp", INT8))
    elif rule is MXIntScale.MICROXCALING:
        a32 = amax.astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            # torch.log2 of amax + FLT_MIN where amax is 0, in float32; floor
            log2 = np.log2(np.where(a32 == 0, _F32(2.0**-126), a32).astype(np.float64)).astype(np.float32)
            e = np.floor(log2)
        bad = bad | ~np.isfinite(e) | (e > E8M0_BIAS)
        xexp = np.where(bad, 0, np.maximum(np.where(np.isfinite(e), e, 0), -E8M0_BIAS)).astype(np.int64)
        with np.errstate(over="ignore", invalid="ignore"):
            v = blocks.astype(np.float32) / np.ldexp(_F32(1.0), xexp.astype(np.int32))[:, None] * _F32(64.0)
            k = np.sign(v) * np.floor(np.abs(v) + _F32(0.5))  # 'nearest': half away from zero, in float32
            k = np.clip(k, -127, 127)
        k[bad] = 0
        codes = formats.encode(k.astype(np.float64), INT8, formats.policy_for("ocp", INT8))
    else:
        raise ValueError(f"unknown MXINT8 rule {rule!r}")
    sc = (xexp + E8M0_BIAS).astype(np.uint8)
    sc[bad] = E8M0_NAN_CODE
    return MXIntTensor(g.from_groups(codes, shape), scale_layout(sc, g, shape), axis, str(arr.dtype))
