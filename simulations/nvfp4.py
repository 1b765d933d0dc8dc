"""NVFP4 block quantization (NVIDIA Blackwell recipe): E2M1 elements, one E4M3FN scale per 16 elements
(or per 16×16 tile of a weight) and one FP32 tensor scale.

Under the default `ocp` block convention: `tensor_scale = amax / (448 · 6)` (a decode scale, rounded
to float32); `block_scale = E4M3(block_amax / 6 / tensor_scale)` (nearest-even, saturating; the
quotient is formed in float64, exact to the cast); elements are E2M1(x / (block_scale ·
tensor_scale)) with the quotient in float64, saturating at ±6. The tensor amax is taken over blocks
without NaN/Inf; a zero tensor gets tensor_scale 1.0; a tensor amax whose quotient overflows FP32
(float64 input beyond 2688 · FLT_MAX) saturates the tensor scale at FLT_MAX; a block whose scale is 0
(all-zero, or so small next to the tensor amax that its scale underflows E4M3) has zero codes; a block
holding NaN/Inf gets the E4M3 NaN scale 0x7F and zero codes and dequantizes to NaN.
`convention="torchao"` or `"transformer_engine"` reproduces those libraries instead: their float32
arithmetic, torchao's 2^-6 floor on block scales, the elements multiplied by a float32 reciprocal,
and their own zero, Inf and NaN tensors (`simulations.block_conventions`). Bits per element: 4 + 8/16
= 4.5 plus the FP32 tensor scale amortised, 32 / n (`block_formats.NVFP4`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, CastPolicy

from ._blockwise import (
    amax_bits,
    block_grouping,
    chunk_rngs,
    float_input,
    inf_bits,
    map_chunks,
    scale_groups,
    scale_layout,
)
from .block_conventions import (
    FLT_MAX,
    ElementCast,
    GlobalScale,
    cast_elements,
    element_policy,
    get_block_convention,
    nvfp4_scales,
    nvfp4_tensor_amax,
    scale_by_multiplier,
)
from .block_formats import NVFP4, nvfp4_bits_per_element
from .granularity import Granularity

__all__ = ["E4M3_NAN_CODE", "NVFP4Tensor", "NVFP4_BLOCK", "NVFP4_TENSOR_DIVISOR", "nvfp4_tensor_scale",
           "quantize_nvfp4"]

NVFP4_BLOCK = NVFP4.block_size  # 16
NVFP4_TENSOR_DIVISOR = E4M3FN.max * E2M1.max  # 448 · 6
E4M3_NAN_CODE = E4M3FN.magnitude_mask  # 0x7F: S.1111.111 without the sign


@dataclass
class NVFP4Tensor:
    """E2M1 codes (one per element), E4M3 block scale codes and an FP32 tensor scale."""

    codes: np.ndarray  # uint8 E2M1 codes (low nibble), same shape as x
    scale_codes: np.ndarray  # uint8 E4M3FN codes: x's shape with `axis` / 16, or (M/16, N/16) tiles
    tensor_scale: float  # FP32 decode scale: amax / (448 · 6)
    axis: int
    block_2d: bool
    policy: CastPolicy
    source_dtype: str = "float32"
    convention: str = "ocp"  # the block convention (simulations.block_conventions) that made it

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.codes.shape)

    @property
    def granularity(self) -> Granularity:
        if self.block_2d:
            return Granularity("block2d", (NVFP4_BLOCK, NVFP4_BLOCK))
        return Granularity("block", (NVFP4_BLOCK,), self.axis)

    @property
    def block_scales(self) -> np.ndarray:
        """Decoded E4M3 block scales (float32; NaN for the NaN scale)."""
        return formats.decode(self.scale_codes, formats.E4M3FN)

    @property
    def bits_per_element(self) -> float:
        return nvfp4_bits_per_element(int(np.prod(self.shape, dtype=np.int64)) or None, self.block_2d)

    def dequantize(self) -> np.ndarray:
        """value(code) · block_scale · tensor_scale (products in float64, exact), in the source dtype
        (float32, or float64 for float64 input, whose saturated values can exceed float32)."""
        g = self.granularity
        vals = g.to_groups(formats.decode(self.codes, formats.E2M1).astype(np.float64))
        bscale = formats.decode(scale_groups(self.scale_codes, g, self.shape), formats.E4M3FN).astype(np.float64)
        with np.errstate(invalid="ignore"):  # 0 · Inf under torchao's Inf tensor scale is NaN, as there
            out = vals * (bscale * self.tensor_scale)[:, None]
        dt = np.float64 if self.source_dtype == "float64" else np.float32
        with np.errstate(over="ignore"):
            return g.from_groups(out, self.shape).astype(dt)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": "NVFP4",
            "block": [NVFP4_BLOCK, NVFP4_BLOCK] if self.block_2d else [NVFP4_BLOCK],
            "axis": self.axis,
            "tensor_scale": self.tensor_scale,
            "convention": self.convention,
            "policy": self.policy.to_dict(),
            "shape": list(self.shape),
            "bits_per_element": self.bits_per_element,
            "codes": self.codes.astype(np.int64).tolist(),
            "scale_codes": self.scale_codes.astype(np.int64).tolist(),
        }


def nvfp4_tensor_scale(amax: float) -> float:
    """FP32 tensor decode scale amax / (448 · 6) (the `ocp` convention's GlobalScale.DECODE_QUOTIENT):
    1.0 for a zero amax; the smallest float32 subnormal if the quotient underflows; FLT_MAX if it
    overflows float32 (only a float64 amax beyond 2688 · FLT_MAX can)."""
    if isinstance(amax, bool) or not isinstance(amax, (int, float, np.integer, np.floating)):
        raise TypeError(f"tensor amax must be a real number, got {amax!r:.40}")
    a = float(amax)
    if not math.isfinite(a) or a < 0:
        raise ValueError(f"tensor amax must be finite and ≥ 0, got {amax!r}")
    if a == 0:
        return 1.0
    with np.errstate(over="ignore"):
        ts = float(np.float32(a / NVFP4_TENSOR_DIVISOR))
    if math.isinf(ts):
        return FLT_MAX
    return ts if ts > 0 else float(np.float32(2.0**-149))


def quantize_nvfp4(
    x: Any,
    axis: int = -1,
    *,
    block_2d: bool = False,
    policy: CastPolicy | None = None,
    rng: np.random.Generator | None = None,
    convention: str = "ocp",
    tensor_amax: float | None = None,
) -> NVFP4Tensor:
    """NVFP4-quantize `x`: blocks of 16 along `axis`, or 16×16 tiles of a 2-D weight with
    `block_2d=True` (see the module docstring). `convention` names a `block_conventions` record
    (default ocp). `policy` replaces the ocp convention's E2M1 element policy (default nearest-even,
    saturating); stochastic rounding needs `rng`. The other conventions fix their element cast.
    `tensor_amax` replaces the tensor amax measured from `x` (by the convention's `TensorAmax` rule),
    so a large tensor can be quantized in row chunks under the whole tensor's FP32 scale (the recipe
    lab measures it over every chunk first, by the same rule)."""
    conv = get_block_convention(convention)
    if not isinstance(block_2d, (bool, np.bool_)):
        raise TypeError(f"block_2d must be True or False, got {block_2d!r}")
    if block_2d and not conv.nvfp4_tiles_2d:
        raise ValueError(f"the {conv.name} convention has NVFP4 1×16 blocks only, not 16×16 tiles")
    if policy is not None and conv.nvfp4_element_cast is not ElementCast.OCP:
        raise ValueError(f"the {conv.name} convention fixes its element cast; policy applies to 'ocp' only")
    pol = element_policy(conv.nvfp4_element_cast, E2M1) if policy is None else policy
    if not isinstance(pol, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(pol).__name__}")
    arr = float_input(x)
    if conv.float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    shape = tuple(arr.shape)
    g = block_grouping(shape, axis, NVFP4_BLOCK, bool(block_2d))
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    abits: np.ndarray = np.empty(nb, np.uint32 if arr.dtype == np.float32 else np.uint64)

    def amax_pass(ci: int, lo: int, hi: int) -> None:
        abits[lo:hi] = amax_bits(blocks[lo:hi])

    map_chunks(nb, amax_pass)
    bad: np.ndarray = abits >= inf_bits(arr.dtype)
    codes = np.empty(blocks.shape, np.uint8)
    rngs = chunk_rngs(rng, nb)
    if conv.nvfp4_global_scale is not GlobalScale.DECODE_QUOTIENT:
        block_amax32 = abits.view(arr.dtype)
        t_amax = nvfp4_tensor_amax(block_amax32, bad, conv.nvfp4_tensor_amax) if tensor_amax is None else tensor_amax
        scale_codes, ts, multiplier = nvfp4_scales(block_amax32, t_amax, conv)

        def work_float32(ci: int, lo: int, hi: int) -> None:
            scaled = scale_by_multiplier(blocks[lo:hi], multiplier[lo:hi])
            codes[lo:hi] = cast_elements(scaled, E2M1, conv.nvfp4_element_cast)

        map_chunks(nb, work_float32)
    else:
        block_amax = np.where(bad, 0.0, abits.view(arr.dtype).astype(np.float64))
        ts = nvfp4_tensor_scale(nvfp4_tensor_amax(block_amax, bad, conv.nvfp4_tensor_amax)
                                if tensor_amax is None else tensor_amax)
        scale_pol = formats.policy_for("ocp", formats.E4M3FN)
        scale_codes = formats.encode(block_amax / (E2M1.max * ts), formats.E4M3FN, scale_pol)
        scale_codes[bad] = E4M3_NAN_CODE
        full = formats.decode(scale_codes, formats.E4M3FN).astype(np.float64) * ts  # exact: 24 + 4 bits
        full[bad] = 0.0

        def work(ci: int, lo: int, hi: int) -> None:
            s = full[lo:hi]
            inv_ok = s > 0
            with np.errstate(divide="ignore", invalid="ignore"):
                scaled = blocks[lo:hi].astype(np.float64) / np.where(inv_ok, s, 1.0)[:, None]
            if not inv_ok.all():
                scaled[~inv_ok] = 0.0
            codes[lo:hi] = cast_elements(scaled, E2M1, conv.nvfp4_element_cast, pol,
                                         None if rngs is None else rngs[ci])

        map_chunks(nb, work)
    return NVFP4Tensor(g.from_groups(codes, shape), scale_layout(scale_codes, g, shape), ts, axis,
                       bool(block_2d), pol, str(arr.dtype), conv.name)
