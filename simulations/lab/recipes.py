"""The recipe lab's recipes: the quant wing's registry (`simulations.quant.RECIPES`, one `Recipe`
record per way of storing a tensor, each run by `quant.quantize`), and one recipe on a chunk of rows.

Every recipe of the registry is a lab recipe (`lowprec analyze --recipes NAME[@CONVENTION]`, `all`,
`default`): BF16/FP16 casts, E4M3/E5M2 per tensor, row and column, INT8 per row, INT4 per group,
MXFP8/MXFP6/MXFP4, MXINT8, NVFP4 1×16 and 16×16 and Transformer Engine's 4over6 and row-scaled
variants, FP8 blockwise 1×128 / 128×128 tiles (FP32, power-of-two or UE8M0 scales), and the RHT
recipes. With the random Hadamard transform (RHT), every run of 16 elements along the last axis is
multiplied by H = diag(d) · S_16 / 4 (the signs on the inputs; `quant.rht`: lowprec's seeded signs,
or Transformer Engine's fixed vector under @transformer_engine) before the cast, rounded to the input's
float type, and the decoded values are transformed back with Hᵀ, so errors are measured against the
tensor itself. Transformer Engine applies the RHT to the column-wise (weight-gradient) operands only,
never to weights: a weight run through `nvfp4_rht` shows what the transform would do, not a recipe
TE runs on weights.

A tensor is quantized as its matrix view (`quant.matrix_shape`: rows × last axis), in row chunks
(`quantize_chunk`). Every recipe can be chunked: row, block and tile scales are local to a chunk
(16×16 and 128×128 tiles need chunks of a multiple of 16 or 128 rows), and the scales that depend on
the whole tensor — the per-tensor amax, the per-column amaxes and NVFP4's tensor amax (by the
convention's own rule, after the transform) — are measured over every chunk first (`GlobalAmax`,
combined by `combine_amax`) and passed in, which gives exactly the codes the whole tensor would get.
A recipe whose block does not divide the last axis (or whose tiles do not divide both axes) does not
apply to that tensor; `Recipe.check` says why (no padding; FP8 tiles alone are quantized as partial
edge tiles, as Transformer Engine and DeepGEMM pad).

Bits per element (`Recipe.bits_per_element`): element bits plus every stored scale amortised over the
tensor's elements.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E2M1, E4M3FN, codec

from ..scaling.granularity import parse_granularity
from ..quant import engine as _engine
from ..quant._blockwise import inf_bits
from ..quant.conventions import ElementCast, GlobalScale, element_policy, get_block_convention
from ..quant.engine import QuantResult, chunk_global_amax, nvfp4_amax_of_blocks, scaled_policy, transform_input
from ..quant.fp8_blockwise import FP8TileTensor
from ..quant.mx import MXTensor
from ..quant.mxint import MXIntTensor
from ..quant.nvfp4 import NVFP4Tensor, quotient_scales
from ..quant.rht import get_rht, inverse_rht
from ..quant.recipes import (
    ALL,
    DEFAULT,
    DEFAULT_RECIPES,
    RECIPES,
    Recipe,
    ScaleFormat,
    Scheme,
    get_recipe,
    parse_recipes,
)
from ..scaling.scales import amax_array
from ..scaling import ScaledTensor, group_scales

__all__ = [
    "ALL",
    "BlockLayout",
    "DEFAULT",
    "DEFAULT_RECIPES",
    "Family",
    "GlobalAmax",
    "QuantizedChunk",
    "RECIPES",
    "Recipe",
    "FusedCast",
    "block_layout",
    "cast_input",
    "combine_amax",
    "decode_table",
    "get_recipe",
    "parse_recipes",
    "quantize_chunk",
    "fused_cast",
    "scaled_policy",
    "transform_compiled",
    "untransformed",
]

#: the lab's name for a recipe's scheme (which quantizer runs it)
Family = Scheme


def cast_input(recipe: Recipe, x: np.ndarray) -> np.ndarray:
    """What enters the recipe's quantizer: x, or x with the RHT applied and rounded back to x's
    float type (the transformed operand a kernel would hold)."""
    return transform_input(recipe, x)[0]


def combine_amax(a: Any, b: Any) -> Any:
    """max of two amaxes (scalars or arrays) where a NaN wins, as a NaN element makes the amax NaN
    in `np.max` (scalars keep the NaN object itself: its bits matter to the torchao convention)."""
    if a is None:
        return b
    if isinstance(a, float) and isinstance(b, float):
        if math.isnan(a):
            return a
        if math.isnan(b):
            return b
        return max(a, b)
    return np.maximum(a, b)


@dataclass
class GlobalAmax:
    """The whole-tensor amaxes of the recipes that need one, measured over every chunk first."""

    values: dict[str, Any] = dataclasses.field(default_factory=dict)  # recipe name → amax

    def add(self, recipe: Recipe, x: np.ndarray) -> None:
        if recipe.global_amax is None:
            return
        value = nvfp4_amax_compiled(recipe, x)
        if value is None:
            fast = transform_compiled(recipe, x)
            if fast is not None:  # the compiled transform, then the rule on the transformed operand
                value = chunk_global_amax(untransformed(recipe), fast[0])
            else:
                value = chunk_global_amax(recipe, x)
        self.values[recipe.name] = combine_amax(self.values.get(recipe.name), value)

    def of(self, recipe: Recipe) -> Any:
        return self.values.get(recipe.name)


def nvfp4_amax_compiled(recipe: Recipe, x: np.ndarray) -> Any:
    """`chunk_global_amax` of an NVFP4 recipe by the compiled kernels (the transform, the block amax
    bits), or None where they do not run (then `chunk_global_amax` does)."""
    if (recipe.global_amax != "nvfp4" or x.ndim != 2 or x.dtype not in (np.float32, np.float64) or not x.size
            or codec.compiled_kernels_for(x.size) is None):
        return None
    br, bc = (16, 16) if recipe.block_2d else (1, 16)
    if x.shape[0] % br or x.shape[1] % bc:
        return None
    fast = transform_compiled(recipe, x)
    if recipe.transform is not None and fast is None:
        return None
    arr = fast[0] if fast is not None else x
    if get_block_convention(recipe.convention).float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    from . import _kernels

    arr = np.ascontiguousarray(arr)
    grid = (arr.shape[0] // br, arr.shape[1] // bc)
    abits = np.empty(grid, np.uint32 if arr.dtype == np.float32 else np.uint64)
    _kernels.block_amax_bits(arr, br, bc, _kernels.abs_mask(arr.dtype), 0, grid[0], abits)
    return nvfp4_amax_of_blocks(recipe, abits, arr.dtype)


class QuantizedChunk:
    """One recipe on one chunk of rows: what the cast saw and what came back. Everything is formed
    when first read: the compiled metrics read `fused` (a scaled cast, NVFP4 under the ocp rule: the
    quantizer runs inside the kernel) or `result` and `layout`, the numpy metrics the per-element
    arrays."""

    def __init__(self, recipe: Recipe, x: np.ndarray, given: Any = None, result: QuantResult | None = None,
                 cast_in: np.ndarray | None = None, hadamard: np.ndarray | None = None) -> None:
        self.recipe = recipe  # the recipe as it quantizes cast_in (without its transform when cast_in is x·H)
        self.x = x  # the rows
        self.given = given  # the whole tensor's amax the recipe needs (`GlobalAmax.of`), or None
        self._result = result
        self.cast_in = x if cast_in is None else cast_in  # the values entering the quantizer (x, or x·H)
        self.hadamard = hadamard  # H of an RHT recipe (float64, 16 × 16), else None

    @property
    def result(self) -> QuantResult:
        """The quantizer's codes and scales (`quant.quantize` of cast_in)."""
        if self._result is None:
            self._result = _engine.quantize(self.cast_in, self.recipe, global_amax=self.given)
        return self._result

    @functools.cached_property
    def fused(self) -> "FusedCast | None":
        """What the compiled fused kernel needs (`fused_cast`), or None."""
        return fused_cast(self.recipe, self.cast_in, self.given, self.hadamard) if self._result is None else None

    @functools.cached_property
    def cast_out(self) -> np.ndarray:
        """The dequantized values (before the inverse RHT), float64."""
        return np.asarray(self.result.dequantize(), dtype=np.float64)

    @functools.cached_property
    def x_hat(self) -> np.ndarray:
        """Dequantized, in the input's basis (after the inverse RHT), float64."""
        q, out = self, self.cast_out
        x_hat = inverse_rht(out, q.hadamard, axis=-1) if q.hadamard is not None else out  # (x·H)·Hᵀ = x
        return x_hat

    @functools.cached_property
    def decode_scales(self) -> np.ndarray:
        """The decode scale of each element (float64; 1 for a cast; NaN under a NaN scale)."""
        return self.result.element_scales()

    @functools.cached_property
    def layout(self) -> "BlockLayout | None":
        """The dequantization as a table and a grid of block scales (`block_layout`), for the
        compiled metrics; None where the result has no such layout."""
        return block_layout(self.result)


@dataclass(frozen=True)
class BlockLayout:
    """How a 2-D `QuantResult` dequantizes, per element (i, j): table[code] · scales[i // br, j // bc]
    (float64: decode(code, recipe.fmt) and `QuantResult.element_scales` read per block), rounded to
    float32 when `round32` — the one product and the one rounding of the scheme's `dequantize`."""

    table: np.ndarray
    scales: np.ndarray
    br: int
    bc: int
    round32: bool


@functools.lru_cache(maxsize=None)
def decode_table(fmt: formats.Format, code_dtype: np.dtype) -> np.ndarray:
    """decode(code, fmt) as float64 for every value of `code_dtype` (uint8, uint16); NaN past the
    format's codes (no quantizer writes them)."""
    n = 1 << (8 * np.dtype(code_dtype).itemsize)
    table = np.full(n, np.nan)
    valid = np.arange(1 << fmt.bits, dtype=code_dtype)
    with np.errstate(invalid="ignore"):
        table[:valid.size] = np.asarray(formats.decode(valid, fmt), dtype=np.float64)
    table.setflags(write=False)
    return table


def block_layout(q: QuantResult) -> BlockLayout | None:
    """`BlockLayout` of a 2-D result, or None (another shape or granularity: the numpy metrics run)."""
    if len(q.shape) != 2 or q.codes.dtype not in (np.uint8, np.uint16):
        return None
    rows, cols = q.shape
    n = q.native
    table = decode_table(q.recipe.fmt, q.codes.dtype)
    if n is None:  # a cast: decode(code) itself
        return BlockLayout(table, np.ones((1, 1)), rows, cols, False)
    if isinstance(n, ScaledTensor):  # decode(code) · decode scale in float64 (`ScaledTensor.dequantize`)
        g, dec = n.granularity, np.asarray(n.decode_scales, np.float64)
        if g.kind == "tensor":
            return BlockLayout(table, dec.reshape(1, 1), rows, cols, False)
        if g.kind == "row":
            return BlockLayout(table, dec.reshape(rows, 1), 1, cols, False)
        if g.kind == "column":
            return BlockLayout(table, dec.reshape(1, cols), rows, 1, False)
        if g.kind == "block" and g.axis % 2 == 1:
            k = g.block[0]
            return BlockLayout(table, dec.reshape(rows, cols // k), 1, k, False)
        if g.kind == "block2d":
            r, c = g.block
            return BlockLayout(table, dec.reshape(rows // r, cols // c), r, c, False)
        return None
    if isinstance(n, FP8TileTensor):  # rounded once to float32 whatever the input (`FP8TileTensor.dequantize`)
        r, c = n.tile
        return BlockLayout(table, np.ascontiguousarray(n.decode_scales, np.float64), r, c, True)
    if isinstance(n, (MXTensor, NVFP4Tensor, MXIntTensor)):  # in the source dtype: float32 unless float64
        g = n.granularity
        per_block = q.block_factors()
        round32 = n.source_dtype != "float64"
        if g.kind == "block" and g.axis % 2 == 1:
            k = g.block[0]
            return BlockLayout(table, np.ascontiguousarray(per_block.reshape(rows, cols // k)), 1, k, round32)
        if g.kind == "block2d":
            r, c = g.block
            return BlockLayout(table, np.ascontiguousarray(per_block.reshape(rows // r, cols // c)), r, c, round32)
    return None


@functools.lru_cache(maxsize=None)
def untransformed(recipe: Recipe) -> Recipe:
    """The recipe without its transform: what quantizes an operand already transformed."""
    return dataclasses.replace(recipe, transform=None)


@functools.lru_cache(maxsize=None)
def _rht_of(recipe: Recipe) -> tuple[np.ndarray, bool]:
    """(H, whether the convention sums in float32 in order) of an RHT recipe."""
    rht = get_rht(recipe.rht_convention or "seeded")
    h = np.ascontiguousarray(rht.matrix(0))
    h.setflags(write=False)
    return h, rht.accumulate == "float32_in_order"


def transform_compiled(recipe: Recipe, x: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(operand, H) of an RHT recipe on rows x by the compiled kernel — exactly `transform_input`'s
    values (x rounded to float32 first where the convention takes float32; x · H blockwise summed as
    its convention says, rounded once to the operand's dtype) — or None: no transform, the codec's
    switch picks numpy, a single block (numpy's product of one row takes another summation order),
    or a shape the transform refuses (the quantizer raises its error)."""
    if recipe.transform is None or x.ndim != 2 or x.shape[1] % 16 or x.size <= 16 or x.dtype not in (
            np.float32, np.float64):
        return None
    if codec.compiled_kernels_for(x.size) is None:
        return None
    from . import _kernels

    arr = x
    conv = recipe.block_convention
    if conv is not None and conv.float32_input and arr.dtype == np.float64:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    arr = np.ascontiguousarray(arr)
    h, in_order = _rht_of(recipe)
    out = np.empty_like(arr)
    _kernels.rht_forward(arr, h, in_order and arr.dtype == np.float32, 0, arr.shape[0], out)
    return out, h


def quantize_chunk(recipe: Recipe, x: np.ndarray, amax: GlobalAmax | None = None) -> QuantizedChunk:
    """Run `recipe` on rows `x` (2-D, float32 or float64) with the whole tensor's amaxes (the
    quantizer runs when its result is first read: see `QuantizedChunk`)."""
    given = amax.of(recipe) if amax is not None and recipe.global_amax else None
    if recipe.transform is None:
        return QuantizedChunk(recipe, x, given)
    fast = transform_compiled(recipe, x)
    if fast is not None:  # the compiled transform; the quantizer takes the operand as it is
        operand, h = fast
        return QuantizedChunk(untransformed(recipe), x, given, None, operand, h)
    q: QuantResult = _engine.quantize(x, recipe, global_amax=given)
    return QuantizedChunk(recipe, x, given, q, q.operand if q.operand is not None else x, q.hadamard)


@dataclass(frozen=True)
class FusedCast:
    """A recipe on a chunk for the compiled fused kernel (`_kernels.cast_kernel`): the values it
    casts (`src`: x, or x·H), per block of br × bc elements the factor a they are scaled by (src · a,
    or src / a with `divide`) and the decode scale s their codes are multiplied by (rounded to float32
    with `round32`), decode's table, and H of an RHT recipe (else None)."""

    kernel: Any
    src: np.ndarray
    a: np.ndarray
    s: np.ndarray
    br: int
    bc: int
    divide: bool
    round32: bool
    table: np.ndarray
    hadamard: np.ndarray | None = None


def fused_cast(recipe: Recipe, src: np.ndarray, given: Any = None, hadamard: np.ndarray | None = None
               ) -> FusedCast | None:
    """`FusedCast` of a recipe whose quantizer the kernel runs — a scaled cast (`scaled_fused`),
    NVFP4 under the ocp quotient rule (`nvfp4_fused`) — on `src` (the rows, or x·H for an RHT
    recipe without its transform); None where the numpy quantizer runs instead (the codec's switch
    sends src to numpy, another scheme or convention, stochastic rounding)."""
    if (recipe.transform is not None or recipe.rounding != "nearest_even" or src.ndim != 2 or not src.size
            or src.dtype not in (np.float32, np.float64) or codec.compiled_kernels_for(src.size) is None):
        return None
    if recipe.scheme is Scheme.SCALED and hadamard is None:
        return scaled_fused(recipe, src, given)
    if recipe.scheme is Scheme.NVFP4:
        return nvfp4_fused(recipe, src, given, hadamard)
    return None


@functools.lru_cache(maxsize=None)
def _scaled_kernel(recipe: Recipe) -> Any:
    """The fused kernel of a scaled cast's element format under its policy (`scaled_policy`)."""
    from . import _kernels

    return _kernels.cast_kernel(recipe.fmt, scaled_policy(recipe.fmt))


@functools.lru_cache(maxsize=None)
def _nvfp4_kernel() -> Any:
    """The fused kernel of NVFP4's E2M1 elements under the OCP element cast."""
    from . import _kernels

    return _kernels.cast_kernel(E2M1, element_policy(ElementCast.OCP, E2M1))


def scaled_fused(recipe: Recipe, x: np.ndarray, given: Any = None) -> FusedCast | None:
    """A scaled cast (`Scheme.SCALED`) on rows x with its scales set as `quantize_scaled` sets them
    (group amaxes measured, or the whole tensor's `given`; `scaling.group_scales`); None for a
    granularity other than tensor, row, column or 1×k blocks, or a whole-tensor amax not given."""
    from . import _kernels

    fmt = recipe.fmt
    kernel = _scaled_kernel(recipe)
    if kernel is None:
        return None
    rows, cols = x.shape
    g = parse_granularity(recipe.granularity)
    if g.kind in ("tensor", "column"):
        if given is None:
            return None
        grid = (1, 1) if g.kind == "tensor" else (1, cols)
        br, bc = (rows, cols) if g.kind == "tensor" else (rows, 1)
        am = np.broadcast_to(amax_array(given), g.grid_shape((rows, cols))).reshape(-1).astype(np.float64)
    elif g.kind == "row" or (g.kind == "block" and g.axis % 2 == 1 and cols % g.block[0] == 0):
        br, bc = 1, (cols if g.kind == "row" else g.block[0])
        grid = (rows, cols // bc)
        block = np.empty(grid)
        _kernels.block_amax(np.ascontiguousarray(x), bc, 0, rows, block)
        am = block.reshape(-1)
    else:
        return None
    sf = None if recipe.scale_format is ScaleFormat.FP32 else recipe.scale_format.storage_format()
    enc, dec, _ = group_scales(am, fmt, 0, sf)
    dec = dec.reshape(grid)
    return FusedCast(kernel, np.ascontiguousarray(x), dec if sf is not None else enc.reshape(grid), dec, br, bc,
                     sf is not None, False, decode_table(fmt, np.dtype(fmt.code_dtype)))


def nvfp4_fused(recipe: Recipe, src: np.ndarray, given: Any = None, hadamard: np.ndarray | None = None
                ) -> FusedCast | None:
    """NVFP4 under a `GlobalScale.DECODE_QUOTIENT` convention with the OCP element cast (ocp: the
    nvfp4, nvfp4_16x16 and nvfp4_rht recipes) on src, with the whole tensor's amax `given`: block
    amaxes by `_kernels.block_amax_bits`, scales by `quant.nvfp4.quotient_scales` (the quantizer's
    own), elements E2M1(src / full) and dequantized as value · block scale · ts (`NVFP4Tensor`)."""
    conv = get_block_convention(recipe.convention)
    if (given is None or recipe.nvfp4_variant is not None or conv.nvfp4_global_scale is not GlobalScale.DECODE_QUOTIENT
            or conv.nvfp4_element_cast is not ElementCast.OCP or (conv.float32_input and src.dtype != np.float32)):
        return None
    rows, cols = src.shape
    br, bc = (16, 16) if recipe.block_2d else (1, 16)
    if rows % br or cols % bc:
        return None
    from . import _kernels

    kernel = _nvfp4_kernel()
    if kernel is None:
        return None
    x = np.ascontiguousarray(src)
    grid = (rows // br, cols // bc)
    abits = np.empty(grid, np.uint32 if x.dtype == np.float32 else np.uint64)
    _kernels.block_amax_bits(x, br, bc, _kernels.abs_mask(x.dtype), 0, grid[0], abits)
    flat = abits.reshape(-1)
    bad = flat >= inf_bits(x.dtype)
    scale_codes, ts, full = quotient_scales(flat.view(x.dtype), bad, conv, float(given))
    factors = formats.decode(scale_codes, E4M3FN).astype(np.float64) * ts  # as NVFP4Tensor.block_factors
    return FusedCast(kernel, x, full.reshape(grid), factors.reshape(grid), br, bc, True, x.dtype != np.float64,
                     decode_table(E2M1, np.dtype(np.uint8)), hadamard)
