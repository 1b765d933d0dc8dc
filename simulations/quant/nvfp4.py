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
and their own zero, Inf and NaN tensors (`simulations.quant.conventions`). Bits per element: 4 + 8/16
= 4.5 plus the FP32 tensor scale amortised, 32 / n (`nvfp4_bits_per_element`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, FP32, CastPolicy

from ..scaling.granularity import Granularity
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
from .conventions import (
    FLT_MAX,
    BlockConvention,
    ElementCast,
    GlobalScale,
    cast_elements,
    element_policy,
    get_block_convention,
    e4m3_as_float32,
    nvfp4_encode_reciprocal,
    nvfp4_scales,
    nvfp4_tensor_amax,
    scale_by_multiplier,
)

__all__ = ["E4M3_NAN_CODE", "NVFP4Tensor", "NVFP4_BLOCK", "NVFP4_TENSOR_DIVISOR", "nvfp4_bits_per_element",
           "nvfp4_tensor_scale", "four_over_six", "quantize_nvfp4", "quotient_scales"]

NVFP4_BLOCK = 16  # elements per E4M3 block scale (NVIDIA's NVFP4)
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
    convention: str = "ocp"  # the block convention (simulations.quant.conventions) that made it
    row_scales: np.ndarray | None = None  # row-scaled NVFP4: the FP32 decode scale of each row (x's shape
    #                                       without its last axis); `tensor_scale` is then NaN
    variant: str | None = None  # "4over6", "row_scaled" or None (the default path)

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
            out = vals * (bscale * self.second_level_per_block())[:, None]
        dt = np.float64 if self.source_dtype == "float64" else np.float32
        with np.errstate(over="ignore"):
            return g.from_groups(out, self.shape).astype(dt)

    def second_level_per_block(self) -> Any:
        """The FP32 second-level decode scale of each block in `to_groups` order (the tensor scale, or
        each block's row scale), float64."""
        if self.row_scales is None:
            return self.tensor_scale
        per_row = self.row_scales.astype(np.float64).reshape(-1)
        return np.repeat(per_row, self.shape[-1] // NVFP4_BLOCK)  # 1×16 blocks along the last axis

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": "NVFP4",
            "variant": self.variant,
            "row_scales": None if self.row_scales is None else self.row_scales.astype(np.float64).tolist(),
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


def nvfp4_bits_per_element(n_elements: int | None = None, block_2d: bool = False) -> float:
    """4 + 8/16 = 4.5 (8/256 for 16×16 tiles), plus the FP32 tensor scale over n_elements if given."""
    if not isinstance(block_2d, (bool, np.bool_)):
        raise TypeError(f"block_2d must be True or False, got {block_2d!r}")
    per_scale = NVFP4_BLOCK * NVFP4_BLOCK if block_2d else NVFP4_BLOCK
    bits = E2M1.bits + E4M3FN.bits / per_scale
    if n_elements is not None:
        if isinstance(n_elements, bool) or not isinstance(n_elements, (int, np.integer)):
            raise TypeError(f"n_elements must be a positive integer or None, got {n_elements!r}")
        if n_elements < 1:
            raise ValueError(f"n_elements={n_elements} must be positive")
        bits += FP32.bits / n_elements
    return bits


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
    variant: str | None = None,
) -> NVFP4Tensor:
    """NVFP4-quantize `x`: blocks of 16 along `axis`, or 16×16 tiles of a 2-D weight with
    `block_2d=True` (see the module docstring). `convention` names a `block_conventions` record
    (default ocp). `policy` replaces the ocp convention's E2M1 element policy (default nearest-even,
    saturating); stochastic rounding needs `rng`. The other conventions fix their element cast.
    `tensor_amax` replaces the tensor amax measured from `x` (by the convention's `TensorAmax` rule),
    so a large tensor can be quantized in row chunks under the whole tensor's FP32 scale (the recipe
    lab measures it over every chunk first, by the same rule). `variant` names a variant of the
    convention (`BlockConvention.nvfp4_variants`; Transformer Engine: "4over6", "row_scaled", both on
    1×16 blocks along the last axis; see `four_over_six` and the module docstring)."""
    conv = get_block_convention(convention)
    if not isinstance(block_2d, (bool, np.bool_)):
        raise TypeError(f"block_2d must be True or False, got {block_2d!r}")
    if block_2d and not conv.nvfp4_tiles_2d:
        raise ValueError(f"the {conv.name} convention has NVFP4 1×16 blocks only, not 16×16 tiles")
    conv.check_nvfp4(bool(block_2d), variant)
    if variant is not None and (block_2d or conv.nvfp4_global_scale is not GlobalScale.ENCODE_RECIPROCAL):
        raise ValueError(f"the NVFP4 variant {variant!r} runs on 1×16 blocks under Transformer Engine's "
                         "global-scale arithmetic")
    if variant == "row_scaled" and tensor_amax is not None:
        raise ValueError("row-scaled NVFP4 takes each row's own amax; tensor_amax does not apply")
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
    if variant is not None and axis % len(shape) != len(shape) - 1:
        raise ValueError(f"the NVFP4 variant {variant!r} has blocks along the last axis only, not axis {axis}")
    blocks = g.to_groups(arr)
    nb = blocks.shape[0]
    abits: np.ndarray = np.empty(nb, np.uint32 if arr.dtype == np.float32 else np.uint64)

    def amax_pass(ci: int, lo: int, hi: int) -> None:
        abits[lo:hi] = amax_bits(blocks[lo:hi])

    map_chunks(nb, amax_pass)
    bad: np.ndarray = abits >= inf_bits(arr.dtype)
    codes = np.empty(blocks.shape, np.uint8)
    rngs = chunk_rngs(rng, nb)
    row_scales = None
    if variant == "4over6":
        block_amax32 = abits.view(arr.dtype)
        t_amax = nvfp4_tensor_amax(block_amax32, bad, conv.nvfp4_tensor_amax) if tensor_amax is None else tensor_amax
        scale_codes, ts, codes = four_over_six(blocks, block_amax32, t_amax)
    elif conv.nvfp4_global_scale is not GlobalScale.DECODE_QUOTIENT:
        block_amax32 = abits.view(arr.dtype)
        if variant == "row_scaled":
            per_row = shape[-1] // NVFP4_BLOCK
            row_amax = abits.reshape(-1, per_row).max(axis=1).view(arr.dtype)  # a NaN wins, as torch.max
            t_amax_blocks = np.repeat(row_amax, per_row)
            scale_codes, ts_blocks, multiplier = nvfp4_scales(block_amax32, t_amax_blocks, conv)
            row_scales = np.asarray(ts_blocks, np.float32)[::per_row].reshape(shape[:-1] or (1,))
            ts = float("nan")
        else:
            t_amax = (nvfp4_tensor_amax(block_amax32, bad, conv.nvfp4_tensor_amax) if tensor_amax is None
                      else tensor_amax)
            scale_codes, ts, multiplier = nvfp4_scales(block_amax32, t_amax, conv)

        def work_float32(ci: int, lo: int, hi: int) -> None:
            scaled = scale_by_multiplier(blocks[lo:hi], multiplier[lo:hi])
            codes[lo:hi] = cast_elements(scaled, E2M1, conv.nvfp4_element_cast)

        map_chunks(nb, work_float32)
    else:
        scale_codes, ts, full = quotient_scales(abits.view(arr.dtype), bad, conv, tensor_amax)

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
                       bool(block_2d), pol, str(arr.dtype), conv.name, row_scales, variant)


def quotient_scales(block_amax: np.ndarray, bad: np.ndarray, conv: BlockConvention, tensor_amax: float | None = None
                    ) -> tuple[np.ndarray, float, np.ndarray]:
    """The scales of NVFP4 under a `GlobalScale.DECODE_QUOTIENT` convention (ocp): (E4M3 block scale
    codes, the FP32 tensor decode scale ts, each block's full decode scale block_scale · ts, 0 for a
    NaN/Inf block) from the blocks' amaxes (float32 or float64, flagged `bad` where NaN/Inf) and the
    tensor amax (None: measured from the blocks by the convention's rule). Elements are then
    E2M1(x / full) with the quotient in float64 (0 where full is 0)."""
    if not isinstance(conv, BlockConvention):
        raise TypeError(f"conv must be a BlockConvention (get_block_convention(name)), got {type(conv).__name__}")
    block_amax = formats.as_float_array(block_amax, "block_amax")
    bad_arr = np.asarray(bad)
    if bad_arr.dtype != np.bool_ or bad_arr.shape != block_amax.shape:
        raise ValueError(f"bad must be a boolean array of block_amax's shape {block_amax.shape}, "
                         f"got {bad_arr.dtype} of shape {bad_arr.shape}")
    bad = bad_arr
    block_amax = np.where(bad, 0.0, block_amax.astype(np.float64))
    ts = nvfp4_tensor_scale(nvfp4_tensor_amax(block_amax, bad, conv.nvfp4_tensor_amax)
                            if tensor_amax is None else tensor_amax)
    scale_pol = formats.policy_for("ocp", formats.E4M3FN)
    scale_codes = formats.encode(block_amax / (E2M1.max * ts), formats.E4M3FN, scale_pol)
    scale_codes[bad] = E4M3_NAN_CODE
    full = formats.decode(scale_codes, formats.E4M3FN).astype(np.float64) * ts  # exact: 24 + 4 bits
    full[bad] = 0.0
    return scale_codes, ts, full


def four_over_six(blocks: np.ndarray, block_amax: np.ndarray, tensor_amax: float
                  ) -> tuple[np.ndarray, float, np.ndarray]:
    """Transformer Engine's NVFP4 "4over6" (`NVFP4QuantizerRef(nvfp4_use_4over6=True)`, error mode
    MAE, not fast-math, e4m3 max 448): (E4M3 scale codes, the tensor decode scale ts, E2M1 codes) of
    1×16 `blocks` (float32 rows) with float32 amaxes `block_amax` under the tensor amax A.

    enc = min(fl32(2688 / A), FLT_MAX) (1 where 0), ts = fl32(1 / enc); base = fl32(fl32(amax / 6) ·
    enc); two candidate block scales s6 = E4M3(clamp(base, ±448)) (amax maps to 6) and
    s4 = E4M3(clamp(fl32(base · 1.5), ±448)) (amax maps to 4); for each, the elements
    E2M1(clamp(fl32(x · min(fl32(1 / fl32(s · ts)), FLT_MAX)), ±6)) by comparisons, and the error
    Σ |fl32(fl32(fl32(value · s) · A) / 2688) − x| summed in float32 over the 16 elements in order;
    the block keeps map-to-4 where its error is strictly smaller (ties keep map-to-6). Source:
    `_quantize_blockwise_4over6_reference` of transformer_engine/pytorch/custom_recipes/reference_nvfp4.py;
    the Four Over Six rule of Cook et al. (2025, arXiv:2512.02010)."""
    conv = get_block_convention("transformer_engine")
    f32 = np.float32
    blocks = formats.as_float_array(blocks, "blocks")
    a = formats.as_float_array(block_amax, "block_amax").astype(np.float32)
    if blocks.ndim != 2 or blocks.shape[1] != NVFP4_BLOCK or a.shape != (blocks.shape[0],):
        raise ValueError(f"blocks must be rows of {NVFP4_BLOCK} and block_amax one per row; got shapes "
                         f"{blocks.shape} and {a.shape}")
    if isinstance(tensor_amax, (bool, np.bool_)) or not isinstance(tensor_amax, (int, float, np.integer, np.floating)):
        raise TypeError(f"tensor_amax must be a real number, got {type(tensor_amax).__name__}")
    t = f32(tensor_amax)
    torch_e4m3 = formats.policy_for("torch", E4M3FN)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        enc = nvfp4_encode_reciprocal(t, NVFP4_TENSOR_DIVISOR)
        ts = f32(1.0) / enc
        base = (a / f32(E2M1.max)) * enc
        x32 = blocks.astype(np.float32)
        cands = []
        for q in (base * f32(1.5), base):  # map-to-4, map-to-6
            sc = formats.encode(np.clip(q, -f32(E4M3FN.max), f32(E4M3FN.max)), E4M3FN, torch_e4m3)
            s = e4m3_as_float32(sc)
            m = np.minimum(f32(1.0) / (s * ts), f32(FLT_MAX))
            scaled = np.clip(scale_by_multiplier(x32, m), -f32(E2M1.max), f32(E2M1.max))
            codes = cast_elements(scaled, E2M1, conv.nvfp4_element_cast)
            vals = formats.decode(codes, E2M1).astype(np.float32)
            err = np.zeros(a.shape, np.float32)
            for i in range(blocks.shape[1]):
                v = ((vals[:, i] * s) * t) / f32(NVFP4_TENSOR_DIVISOR)
                err = err + np.abs(v - x32[:, i])
            cands.append((sc, codes, err))
    (s4, c4, e4), (s6, c6, e6) = cands
    pick4 = e4 < e6
    return np.where(pick4, s4, s6).astype(np.uint8), float(ts), np.where(pick4[:, None], c4, c6).astype(np.uint8)
