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
from lowprec.formats import E4M3FN, E8M0, codec

from ..quant import engine as _engine
from ..quant._blockwise import scale_groups
from ..quant.engine import QuantResult, chunk_global_amax, scaled_policy, transform_input
from ..quant.fp8_blockwise import FP8TileTensor
from ..quant.mx import MXTensor
from ..quant.mxint import MXINT_ELEMENT_SCALE, MXIntTensor
from ..quant.nvfp4 import NVFP4Tensor
from ..quant.rht import get_rht, inverse_rht
from ..scaling import ScaledTensor
from ..quant.recipes import (
    ALL,
    DEFAULT,
    DEFAULT_RECIPES,
    RECIPES,
    Recipe,
    Scheme,
    get_recipe,
    parse_recipes,
)

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
    "block_layout",
    "cast_input",
    "combine_amax",
    "decode_table",
    "get_recipe",
    "parse_recipes",
    "quantize_chunk",
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
        fast = transform_compiled(recipe, x)
        if fast is not None:  # the compiled transform, then the rule on the transformed operand
            value = chunk_global_amax(untransformed(recipe), fast[0])
        else:
            value = chunk_global_amax(recipe, x)
        self.values[recipe.name] = combine_amax(self.values.get(recipe.name), value)

    def of(self, recipe: Recipe) -> Any:
        return self.values.get(recipe.name)


class QuantizedChunk:
    """One recipe on one chunk of rows: what the cast saw and what came back. The per-element
    arrays are formed when first read (the compiled metrics read `result` and `layout` instead)."""

    def __init__(self, result: QuantResult, cast_in: np.ndarray, hadamard: np.ndarray | None) -> None:
        self.result = result  # the quantizer's codes and scales
        self.cast_in = cast_in  # the values entering the quantizer (x, or x·H), as given to it
        self.hadamard = hadamard  # H of an RHT recipe (float64, 16 × 16), else None

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
        if isinstance(n, NVFP4Tensor):
            per_block = formats.decode(scale_groups(n.scale_codes, g, q.shape), E4M3FN).astype(np.float64)
            per_block = per_block * n.second_level_per_block()
        else:
            per_block = formats.decode(scale_groups(n.scale_codes, g, q.shape), E8M0).astype(np.float64)
            if isinstance(n, MXIntTensor):
                per_block = per_block * MXINT_ELEMENT_SCALE
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
    """Run `recipe` on rows `x` (2-D, float32 or float64) with the whole tensor's amaxes."""
    given = amax.of(recipe) if amax is not None and recipe.global_amax else None
    fast = transform_compiled(recipe, x)
    if fast is not None:  # the compiled transform; the quantizer takes the operand as it is
        operand, h = fast
        return QuantizedChunk(_engine.quantize(operand, untransformed(recipe), global_amax=given), operand, h)
    q: QuantResult = _engine.quantize(x, recipe, global_amax=given)
    cast_in = q.operand if q.operand is not None else x
    return QuantizedChunk(q, cast_in, q.hadamard)
