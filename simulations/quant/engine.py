"""One quantizer for every recipe: `quantize(x, "NAME[@CONVENTION]")` runs any record of
`quant.recipes.RECIPES` and returns a `QuantResult` of the same shape whatever the scheme.

The steps, each read from the record: (1) the input as the implementation takes it (float32 for the
float32 conventions; a float16/bfloat16 array keeps its dtype's name for the rules that need it);
(2) the transform (the RHT on blocks of 16 along the last axis, signs by the convention, applied in
the operand's dtype); (3) the blocks and their scales by the scheme's quantizer under the
convention's rule — `formats.quantize` (CAST), `simulations.scaling.quantize_scaled` (SCALED),
`quant.mx` (MX), `quant.nvfp4` (NVFP4 and its variants), `quant.fp8_blockwise` (FP8_TILES),
`quant.mxint` (MXINT); (4) the result: element codes in x's shape, the decode scale of each block
(float32, shaped like the block grid; the SCALED scheme's are float64, the exact reciprocals of its
FP32 encode scales), the scales' codes where they have a low-precision format, the second-level
scale of two-level recipes, and `dequantize()`.

`chunk_global_amax` measures, on one chunk of rows, the whole-tensor amax a recipe needs
(`Recipe.global_amax`) by the recipe's own rule, so a large tensor can be quantized chunk by chunk
with exactly the codes the whole tensor gets (the recipe lab combines the chunks' values).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from lowprec import formats
from lowprec.formats import E4M3FN, E8M0

from ..scaling import ScaledTensor, default_element_policy, quantize_scaled
from ._blockwise import amax_bits, block_grouping, float_input, inf_bits, scale_groups
from .conventions import get_block_convention, nvfp4_tensor_amax
from .fp8_blockwise import FP8TileTensor, quantize_fp8_tiles
from .mx import MXTensor, quantize_mx
from .mxint import MXINT_ELEMENT_SCALE, MXIntTensor, quantize_mxint8
from .nvfp4 import NVFP4Tensor, quantize_nvfp4
from .recipes import Recipe, ScaleFormat, Scheme, get_recipe, matrix_shape
from .rht import apply_rht, get_rht, inverse_rht

__all__ = ["QuantResult", "chunk_global_amax", "nvfp4_amax_of_blocks", "quantize", "scaled_policy",
           "transform_input"]

_HALF_DTYPES = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))


@dataclass
class QuantResult:
    """A tensor quantized by one recipe (see the module docstring)."""

    recipe: Recipe  # the record, under the convention that ran
    codes: np.ndarray  # one element code per element, x's shape (uint8; uint16 for 16-bit casts)
    scales: np.ndarray | None  # decode scale of each block (float32; SCALED: float64), block-grid shaped
    scale_codes: np.ndarray | None  # codes of the scales in their low-precision format, else None
    tensor_scale: Any  # the second level: NVFP4's FP32 tensor decode scale (float), or one per row
    #                    (row-scaled NVFP4, x's shape without its last axis); None for one-level recipes
    native: Any  # the scheme's own tensor (MXTensor, NVFP4Tensor, ScaledTensor, FP8TileTensor, MXIntTensor)
    #              or None for a cast
    shape: tuple[int, ...]
    source_dtype: str  # the input's dtype name
    operand: np.ndarray | None = None  # with a transform: the values that entered the cast (x · H, x's dtype)
    hadamard: np.ndarray | None = None  # with a transform: H (float64, 16 × 16)
    axis: int = -1  # the block axis of 1×k blocks

    @property
    def convention(self) -> str:
        return self.recipe.convention

    @property
    def bits_per_element(self) -> float:
        return self.recipe.bits_per_element(self.shape)

    def dequantize(self) -> np.ndarray:
        """The stored operand decoded: value(code) × block scale (× the second level), formed
        exactly and returned in the input's float dtype (float32 for half-precision input; the SCALED
        scheme returns float64, the product with its exact float64 decode scale). With a transform
        these are values of x · H: `restore()` transforms them back."""
        if self.native is None:
            return formats.decode(self.codes, self.recipe.fmt)
        out = self.native.dequantize()
        return np.asarray(out).reshape(self.shape)

    def restore(self) -> np.ndarray:
        """The dequantized tensor in x's own basis (float64): `dequantize()`, times Hᵀ blockwise when
        the recipe transformed x ((x · H) · Hᵀ = x)."""
        out = np.asarray(self.dequantize(), dtype=np.float64)
        return inverse_rht(out, self.hadamard, axis=-1) if self.hadamard is not None else out

    def element_scales(self) -> np.ndarray:
        """The factor that multiplies `formats.decode(codes, recipe.fmt)` for each element (float64, x's
        shape): the block scale times the second level (MXINT8: times the element's implicit 2^-6);
        1 for a cast, NaN under a NaN scale."""
        n = self.native
        if n is None:
            return np.ones(self.shape)
        if isinstance(n, ScaledTensor):
            return n.element_decode_scales()
        if isinstance(n, FP8TileTensor):
            return n.element_scales()
        g = n.granularity
        per_block = self.block_factors()
        size = int(np.prod(g.block))
        return g.from_groups(np.repeat(per_block[:, None], size, axis=1), self.shape)

    def block_factors(self) -> np.ndarray:
        """`element_scales` of an MX, NVFP4 or MXINT8 result, one per block in its granularity's
        `to_groups` order (float64): the block scale times the second level (MXINT8: times 2^-6)."""
        n = self.native
        if not isinstance(n, (MXTensor, NVFP4Tensor, MXIntTensor)):
            raise TypeError(f"block_factors is for MX, NVFP4 and MXINT8 results, not {type(n).__name__}")
        g = n.granularity
        if isinstance(n, NVFP4Tensor):
            per_block = formats.decode(scale_groups(n.scale_codes, g, self.shape), E4M3FN).astype(np.float64)
            per_block = per_block * n.second_level_per_block()
        else:
            per_block = formats.decode(scale_groups(n.scale_codes, g, self.shape), E8M0).astype(np.float64)
            if isinstance(n, MXIntTensor):
                per_block = per_block * MXINT_ELEMENT_SCALE
        return per_block

    def to_dict(self) -> dict[str, Any]:
        return {"recipe": self.recipe.to_dict(), "shape": list(self.shape), "source_dtype": self.source_dtype,
                "bits_per_element": self.bits_per_element,
                "codes": self.codes.astype(np.int64).tolist(),
                "scales": None if self.scales is None else self.scales.astype(np.float64),
                "scale_codes": None if self.scale_codes is None else self.scale_codes.astype(np.int64).tolist(),
                "tensor_scale": (self.tensor_scale.astype(np.float64) if isinstance(self.tensor_scale, np.ndarray)
                                 else self.tensor_scale)}


def scaled_policy(fmt: formats.Format) -> formats.CastPolicy:
    """The element policy of a scaled recipe: the ocp reading (nearest even, saturating), and, for a
    format without NaN (INT8, INT4), a NaN input cast to +0 rather than refused (the recipe lab
    measures errors over finite inputs only, so this code never enters a metric; it keeps a
    checkpoint with one NaN analysable)."""
    policy = default_element_policy(fmt)
    if policy.nan_to_finite is formats.NanToFinite.RAISE:
        policy = policy.with_(nan_to_finite=formats.NanToFinite.ZERO)
    return policy


def _as_input(x: Any) -> tuple[np.ndarray, str]:
    """x as a float array and the name of its dtype (float16 and bfloat16 arrays are widened to
    float32 exactly; their name is kept)."""
    arr = np.asarray(x)
    if arr.dtype in _HALF_DTYPES:
        return arr.astype(np.float32), str(arr.dtype)
    out = float_input(arr)
    return out, str(out.dtype)


def transform_input(recipe: str | Recipe, x: Any, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """(what enters the recipe's quantizer, H or None): x (rounded to float32 first where the
    convention takes float32), or x · H blockwise along the last axis in x's dtype, with the signs and
    the summation of the recipe's convention (`quant.rht.RHT_CONVENTIONS`)."""
    rec = get_recipe(recipe)
    arr = np.asarray(x)
    conv = rec.block_convention
    if conv is not None and conv.float32_input and arr.dtype == np.float64:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)  # the implementation takes float32: rounded before anything else
    if rec.transform is None:
        return arr, None
    if arr.ndim == 0 or arr.shape[-1] % 16:
        raise ValueError(f"recipe {rec.name}: the Hadamard transform needs the last axis to be a multiple of 16, "
                         f"got shape {arr.shape}")
    rht = get_rht(rec.rht_convention or "seeded")
    h = rht.matrix(seed)
    return apply_rht(arr, h, axis=-1, accumulate=rht.accumulate), h


def _rule_policy(rec: Recipe, fmt: formats.Format) -> formats.CastPolicy | None:
    """The element policy for an ocp recipe with stochastic rounding; None: the convention's own."""
    if rec.rounding != "stochastic":
        return None
    return default_element_policy(fmt).with_(rounding=formats.Rounding.STOCHASTIC)


def quantize(x: Any, recipe: str | Recipe, *, axis: int = -1, rng: np.random.Generator | None = None,
             global_amax: Any = None) -> QuantResult:
    """Quantize `x` by `recipe` (a `Recipe` or "NAME[@CONVENTION]"; see the module docstring).

    `axis` is the block axis of 1×k block recipes (MX, NVFP4 1×16, MXINT8, scaled 1-D blocks given
    without an axis); tile recipes, row-scaled NVFP4 and transforms work on the last axis. `rng`
    drives stochastic rounding (a recipe with rounding "stochastic"). `global_amax` replaces the
    whole-tensor amax the recipe measures (`Recipe.global_amax`: NVFP4's tensor amax, a per-tensor
    or per-column scale's amax), for chunked runs (`chunk_global_amax`)."""
    rec = get_recipe(recipe)
    if rec.rounding == "stochastic" and rng is None:
        raise ValueError(f"recipe {rec.name} rounds stochastically: pass rng (a numpy.random.Generator)")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r:.40}")
    raw = np.asarray(x)
    operand, h = transform_input(rec, raw)
    arr, dtype_name = _as_input(operand)
    shape = tuple(arr.shape)
    if rec.scheme is Scheme.CAST:
        fmt = rec.fmt
        codes = formats.encode(arr, fmt, formats.policy_for(rec.convention, fmt))
        return QuantResult(rec, codes, None, None, None, None, shape, dtype_name)
    last = len(shape) - 1 if shape else 0
    if (rec.scheme is Scheme.FP8_TILES or rec.transform is not None or rec.nvfp4_variant is not None
            or rec.block_2d) and len(shape) and axis % len(shape) != last:
        raise ValueError(f"recipe {rec.name} works along the last axis; axis {axis} does not apply")
    common: dict[str, Any] = {"operand": arr if h is not None else None, "hadamard": h, "axis": axis}
    if rec.scheme is Scheme.SCALED:
        fmt = rec.fmt
        spec = rec.granularity
        if axis != -1 and spec.startswith("block") and "x" not in spec and "@" not in spec:
            spec = f"{spec}@{axis}"
        pol = _rule_policy(rec, fmt) or scaled_policy(fmt)
        sf = None if rec.scale_format is ScaleFormat.FP32 else rec.scale_format.storage_format()
        st = quantize_scaled(arr, fmt, spec, pol, scale_format=sf, amax=global_amax, rng=rng)
        return QuantResult(rec, st.codes, st.decode_scales, st.scale_codes, None, st, shape, dtype_name, **common)
    if rec.scheme is Scheme.MX:
        mt = quantize_mx(arr, rec.element, rec.block_elements, rec.scale_rule, axis=axis,
                         policy=_rule_policy(rec, rec.fmt), convention=rec.convention, rng=rng)
        scales = formats.decode(mt.scale_codes, E8M0).astype(np.float32)
        return QuantResult(rec, mt.codes, scales, mt.scale_codes, None, mt, shape, dtype_name, **common)
    if rec.scheme is Scheme.NVFP4:
        if global_amax is not None and (isinstance(global_amax, (bool, np.bool_)) or not isinstance(
                global_amax, (int, float, np.integer, np.floating))):
            raise TypeError(f"global_amax of an NVFP4 recipe is the tensor amax, a real number; "
                            f"got {global_amax!r:.40}")
        nt = quantize_nvfp4(arr, axis, block_2d=rec.block_2d, policy=_rule_policy(rec, rec.fmt), rng=rng,
                            convention=rec.convention, tensor_amax=None if global_amax is None else float(global_amax),
                            variant=rec.nvfp4_variant)
        second = nt.row_scales if nt.row_scales is not None else nt.tensor_scale
        return QuantResult(rec, nt.codes, np.asarray(nt.block_scales, np.float32), nt.scale_codes, second, nt,
                           shape, dtype_name, **common)
    if rec.scheme is Scheme.FP8_TILES:
        rows, cols = matrix_shape(shape)
        ft = quantize_fp8_tiles(arr.reshape(rows, cols), rec.block, rec.scale_format.value,
                                get_block_convention(rec.convention), dtype_name, shape)
        grid = ft.decode_scales
        if rec.block[0] == 1 and len(shape) != 2:  # 1×k tiles: the rows of the matrix view are x's leading axes
            grid = grid.reshape(shape[:-1] + (grid.shape[-1],))
        sc = None if ft.scale_codes is None else ft.scale_codes.reshape(grid.shape)
        return QuantResult(rec, ft.codes.reshape(shape), grid, sc, None, ft, shape, dtype_name, **common)
    if rec.scheme is Scheme.MXINT:
        it = quantize_mxint8(arr, axis, convention=get_block_convention(rec.convention))
        return QuantResult(rec, it.codes, it.block_scales, it.scale_codes, None, it, shape, dtype_name, **common)
    raise ValueError(f"unknown scheme {rec.scheme!r}")


def chunk_global_amax(recipe: str | Recipe, x: Any) -> Any:
    """The whole-tensor amax `recipe` needs, measured on rows `x` alone by the recipe's own rule
    (after its transform): NVFP4's tensor amax by the convention's `TensorAmax` rule (a float), a
    per-tensor scale's max |x| (a float), a per-column scale's column amaxes (float64 array), or
    None. Chunks combine by taking the maximum, a NaN winning."""
    rec = get_recipe(recipe)
    kind = rec.global_amax
    if kind is None:
        return None
    xin, _ = transform_input(rec, x)
    arr, _ = _as_input(xin)
    with np.errstate(invalid="ignore"):
        if kind == "tensor":
            return float(np.max(np.abs(arr))) if arr.size else 0.0
        if kind == "column":
            return np.abs(arr).max(axis=0).astype(np.float64)
    conv = get_block_convention(rec.convention)
    if conv.float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    g = block_grouping(tuple(arr.shape), -1, 16, rec.block_2d)
    return nvfp4_amax_of_blocks(rec, amax_bits(g.to_groups(arr)), arr.dtype)


def nvfp4_amax_of_blocks(recipe: str | Recipe, abits: np.ndarray, dtype: np.dtype) -> float:
    """An NVFP4 recipe's tensor amax (by its convention's `TensorAmax` rule) from the amax bit
    patterns of its blocks (`_blockwise.amax_bits` of float32 or float64 input `dtype`, taken after
    the transform and the convention's float32 rounding)."""
    rec = get_recipe(recipe)
    conv = get_block_convention(rec.convention)
    abits = np.asarray(abits).reshape(-1)
    bad = abits >= inf_bits(np.dtype(dtype))
    block_amax = abits.view(dtype)
    if conv.float32_input:
        return nvfp4_tensor_amax(block_amax, bad, conv.nvfp4_tensor_amax)
    return nvfp4_tensor_amax(np.where(bad, 0.0, block_amax.astype(np.float64)), bad, conv.nvfp4_tensor_amax)
