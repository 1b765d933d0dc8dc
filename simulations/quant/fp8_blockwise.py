"""FP8 blockwise scaling: E4M3 elements with one scale per 1×k or k×k tile of the matrix view (k = 128:
1×128 tiles for activations and gradients, 128×128 for weights), under the convention's rule
(`quant.conventions.FP8TileScale`): Transformer Engine's `Float8BlockScaling` reference (FP32 or
power-of-two FP32 scales) or DeepSeek-V3's as DeepGEMM computes it (FP32 or UE8M0 scales).

Everything is float32 arithmetic, as both implementations compute (the input is rounded to float32
first: TE takes float32/bf16/fp16, DeepGEMM calls `.float()`); a float16 or bfloat16 input keeps
its dtype's largest value for TE's Inf rule. A partial edge tile is the tile over the elements that
exist: both implementations pad with zeros, which change no amax. `quant.transpose` shows what
happens when the 128×1 (column) view needed by the weight-gradient GEMM is made from the 1×128 (row)
data instead of from the source, and when power-of-two scales make that exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from lowprec import formats
from lowprec.formats import E4M3FN

from .conventions import BlockConvention, ElementCast, FP8TileScale, cast_elements, get_block_convention

__all__ = ["FP8TileTensor", "quantize_fp8_tiles", "tile_scales"]

_F32 = np.float32
FLT_MAX = float(np.finfo(np.float32).max)
DEEPGEMM_AMAX_FLOOR = _F32(1e-4)  # DeepGEMM's amax.clamp(1e-4), as float32
#: the largest finite value of each input dtype: Transformer Engine's scale where F / amax is +Inf
_DTYPE_MAX = {"float32": FLT_MAX, "float64": FLT_MAX, "float16": float(np.finfo(np.float16).max),
              "bfloat16": float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)}


@dataclass
class FP8TileTensor:
    """E4M3 codes of a matrix with one scale per tile."""

    codes: np.ndarray  # uint8 E4M3FN codes, the matrix view's shape (M, K)
    decode_scales: np.ndarray  # float32, one per tile: (ceil(M / r), ceil(K / c))
    scale_codes: np.ndarray | None  # UE8M0 codes of the decode scales (E8M0 scale format), else None
    tile: tuple[int, int]
    source_dtype: str = "float32"
    shape: tuple[int, ...] | None = None  # the tensor's own shape (None: the matrix view's)

    def element_scales(self) -> np.ndarray:
        """The decode scale of each element (float64), in the tensor's shape."""
        r, c = self.tile
        m, k = self.codes.shape
        full = np.repeat(np.repeat(self.decode_scales.astype(np.float64), r, axis=0), c, axis=1)[:m, :k]
        return full.reshape(self.shape if self.shape is not None else (m, k))

    def dequantize(self) -> np.ndarray:
        """value(code) · decode scale, formed exactly and rounded once to float32 (Transformer
        Engine's `ref_dequantize_rowwise`: the E4M3 value times the float32 `scale_inv`), in the
        tensor's shape."""
        vals = formats.decode(self.codes, E4M3FN).astype(np.float64).reshape(self.element_scales().shape)
        with np.errstate(invalid="ignore", over="ignore"):
            return (vals * self.element_scales()).astype(np.float32)


def tile_scales(amax: np.ndarray, rule: FP8TileScale, scale_format: str, source_dtype: str = "float32"
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(decode scales, element multipliers, UE8M0 codes or None) of tiles with float32 amaxes `amax`,
    by `rule` (see FP8TileScale) and `scale_format` ("FP32", "POW2_FP32" or "E8M0")."""
    if not isinstance(rule, FP8TileScale):
        raise TypeError(f"rule must be an FP8TileScale, got {rule!r:.40}")
    a = formats.as_float_array(amax, "amax").astype(np.float32)
    fmax = _F32(E4M3FN.max)
    codes = None
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        if rule is FP8TileScale.TE_ENCODE:
            if scale_format not in ("FP32", "POW2_FP32"):
                raise ValueError(f"Transformer Engine's FP8 tiles store FP32 or POW2_FP32 scales, not {scale_format}")
            s = fmax / a
            s = np.where(s == np.inf, _F32(_DTYPE_MAX.get(source_dtype, FLT_MAX)), s).astype(np.float32)
            if scale_format == "POW2_FP32":
                _, e = np.frexp(s)  # s = m · 2^e, m in [0.5, 1): 2^(e − 1) ≤ s (frexp of NaN / Inf: e = 0)
                s = np.ldexp(_F32(1.0), (e - 1).astype(np.int32)).astype(np.float32)
                s = np.where(a == np.inf, _F32(0.0), s).astype(np.float32)
            s = np.where(a == 0, _F32(1.0), s).astype(np.float32)
            return (_F32(1.0) / s).astype(np.float32), s, None
        if rule is FP8TileScale.DEEPGEMM_DECODE:
            if scale_format not in ("FP32", "E8M0"):
                raise ValueError(f"DeepGEMM's FP8 tiles store FP32 or UE8M0 scales, not {scale_format}")
            d = np.maximum(a, DEEPGEMM_AMAX_FLOOR) / fmax  # np.maximum keeps a NaN amax, as torch.clamp does
            if scale_format == "E8M0":
                bits = np.abs(d).view(np.uint32).astype(np.int64)
                k = np.clip(((bits >> 23) & 0xFF) + ((bits & 0x7FFFFF) != 0), 1, 254)
                d = (k.astype(np.uint32) << np.uint32(23)).view(np.float32)
                codes = k.astype(np.uint8)
            d = d.astype(np.float32)
            return d, (_F32(1.0) / d).astype(np.float32), codes
    raise ValueError(f"unknown FP8 tile rule {rule!r}")


def quantize_fp8_tiles(x: Any, tile: tuple[int, int], scale_format: str, conv: str | BlockConvention,
                       source_dtype: str = "float32", shape: tuple[int, ...] | None = None) -> FP8TileTensor:
    """E4M3 with one scale per `tile` (rows, cols) of the 2-D `x` (float32; other floats are rounded
    to float32), partial edge tiles allowed, by the convention's FP8 tile rule; `shape` is the
    tensor's own shape when x is its matrix view."""
    conv = get_block_convention(conv)
    rule = conv.check_fp8_tiles(str(scale_format))
    if (not isinstance(tile, (tuple, list)) or len(tile) != 2
            or not all(isinstance(t, (int, np.integer)) and not isinstance(t, bool) and t >= 1 for t in tile)):
        raise ValueError(f"tile must be (rows, cols), two positive integers, got {tile!r:.60}")
    arr = formats.as_float_array(x, "x")
    if arr.ndim != 2:
        raise ValueError(f"FP8 tiles quantize a matrix; got shape {arr.shape} (quant.quantize takes the matrix view)")
    if shape is not None and int(np.prod(shape, dtype=np.int64)) != arr.size:
        raise ValueError(f"shape {shape} does not hold the {arr.size} elements of x")
    with np.errstate(over="ignore"):
        a32 = np.ascontiguousarray(arr, dtype=np.float32)
    r, c = (int(t) for t in tile)
    m, k = a32.shape
    gm, gk = -(-m // r), -(-k // c)
    if (gm * r, gk * c) != (m, k):
        padded = np.zeros((gm * r, gk * c), np.float32)
        padded[:m, :k] = a32
    else:
        padded = a32
    tiles = padded.reshape(gm, r, gk, c)
    mags = np.bitwise_and(tiles.view(np.uint32), np.uint32(0x7FFFFFFF))
    abits = mags.max(axis=(1, 3))  # NaN > Inf > finite as unsigned bit patterns: a NaN wins, as torch.amax
    amax = abits.view(np.float32)
    dec, mult, scodes = tile_scales(amax, rule, scale_format, source_dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = tiles * mult[:, None, :, None]
    codes = cast_elements(scaled.reshape(gm * r, gk * c), E4M3FN, ElementCast.TORCH_CLAMPED)[:m, :k]
    return FP8TileTensor(np.ascontiguousarray(codes), dec, scodes, (r, c), source_dtype, shape)
