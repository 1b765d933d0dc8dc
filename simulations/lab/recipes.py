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
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..quant import engine as _engine
from ..quant.engine import QuantResult, chunk_global_amax, scaled_policy, transform_input
from ..quant.rht import inverse_rht
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
    "DEFAULT",
    "DEFAULT_RECIPES",
    "Family",
    "GlobalAmax",
    "QuantizedChunk",
    "RECIPES",
    "Recipe",
    "cast_input",
    "combine_amax",
    "get_recipe",
    "parse_recipes",
    "quantize_chunk",
    "scaled_policy",
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
        value = chunk_global_amax(recipe, x)
        self.values[recipe.name] = combine_amax(self.values.get(recipe.name), value)

    def of(self, recipe: Recipe) -> Any:
        return self.values.get(recipe.name)


@dataclass
class QuantizedChunk:
    """One recipe on one chunk of rows: what the cast saw and what came back."""

    x_hat: np.ndarray  # dequantized, in the input's basis (after the inverse RHT), float64
    cast_in: np.ndarray  # the values entering the quantizer (x, or x·H), as given to it
    cast_out: np.ndarray  # their dequantized values (before the inverse RHT), float64
    decode_scales: np.ndarray  # the decode scale of each element (float64; 1 for a cast; NaN under a
    #                            NaN scale)


def quantize_chunk(recipe: Recipe, x: np.ndarray, amax: GlobalAmax | None = None) -> QuantizedChunk:
    """Run `recipe` on rows `x` (2-D, float32 or float64) with the whole tensor's amaxes."""
    given = amax.of(recipe) if amax is not None and recipe.global_amax else None
    q: QuantResult = _engine.quantize(x, recipe, global_amax=given)
    out = np.asarray(q.dequantize(), dtype=np.float64)
    cast_in = q.operand if q.operand is not None else x
    x_hat = inverse_rht(out, q.hadamard, axis=-1) if q.hadamard is not None else out  # (x·H)·Hᵀ = x
    return QuantizedChunk(x_hat, cast_in, out, q.element_scales())
