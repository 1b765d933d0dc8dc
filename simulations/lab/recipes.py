"""Recipes of the recipe lab as data: one `Recipe` record per way of storing a tensor in low precision,
in one registry, each run by the existing quantizers of `simulations` (nothing re-implemented here).

A recipe is an element format, the granularity its scales are shared at (or a block), the scale's
format and rule, a block convention (`simulations.block_conventions`: ocp, torchao,
transformer_engine), an optional random Hadamard transform (RHT) and the rounding. Families:

- `cast` — every element cast to a 16-bit float (`formats.quantize` under the `torch` convention:
  round to nearest even, overflow to ±Inf, as `x.to(torch.bfloat16)` does). No scale.
- `scaled` — `simulations.scaling.quantize_scaled`: groups (per tensor, per row, per column, 1-D
  blocks) share `encode_scale = F / amax` (F the element format's largest value), stored as FP32
  (Transformer Engine's current scaling) or cast to `scale_format` rounded up (INT4's BF16 group
  scales); elements round to nearest even and saturate. INT grids are symmetric (±127, ±7).
- `mx` — `simulations.mx.quantize_mx`: 32 elements along the last axis share an E8M0 scale 2^X
  (the convention's scale rule: floor for ocp and torchao, rceil for transformer_engine).
- `nvfp4` — `simulations.nvfp4.quantize_nvfp4`: E2M1 elements, an E4M3 scale per 16 along the last
  axis (or per 16×16 tile), an FP32 tensor scale.

With `rht`, every run of 16 elements along the last axis is multiplied by the random Hadamard matrix
of `simulations.hadamard` (seed 0) before the cast, rounded to the input's float type, and the
decoded values are transformed back, so errors are measured against the tensor itself.

A tensor is quantized as its matrix view (`readers.matrix_shape`: rows × last axis), in row chunks
(`quantize_chunk`). Every recipe can be chunked: row, block and tile scales are local to a chunk, and
the three scales that depend on the whole tensor — the per-tensor amax, the per-column amaxes and
NVFP4's tensor amax (by the convention's own rule) — are measured over every chunk first
(`GlobalAmax`) and passed in, which gives exactly the codes the whole tensor would get. 16×16 tiles
need chunks of a multiple of 16 rows. A recipe whose block does not divide the last axis (or whose
tiles do not divide both axes) does not apply to that tensor; `Recipe.check` says why (no padding).

Bits per element (`Recipe.bits_per_element`): element bits plus every stored scale amortised over the
tensor's elements — FP32 scales 32 bits each (per tensor: one; per row: one per row; per column: one
per column), E8M0 8 / 32 (MX), NVFP4 8 / 16 (8 / 256 for tiles) plus its one FP32 tensor scale, INT4
group scales 16 / g (BF16). The RHT's sixteen signs come from a seed shared by the model: 0 bits.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import Format

from .._blockwise import amax_bits, block_grouping, float_input, inf_bits
from ..block_conventions import BLOCK_CONVENTIONS, get_block_convention, nvfp4_tensor_amax
from ..block_formats import mx_bits_per_element, nvfp4_bits_per_element
from ..granularity import parse_granularity
from ..hadamard import RHT_BLOCK, apply_blockwise, random_hadamard
from ..mx import quantize_mx
from ..nvfp4 import quantize_nvfp4
from ..scaling import default_element_policy, quantize_scaled
from .readers import matrix_shape

__all__ = [
    "ALL",
    "DEFAULT",
    "DEFAULT_RECIPES",
    "Family",
    "GlobalAmax",
    "QuantizedChunk",
    "RECIPES",
    "Recipe",
    "get_recipe",
    "parse_recipes",
    "quantize_chunk",
]

RHT_SEED = 0  # the seed of the Hadamard signs (simulations.hadamard.random_hadamard)


class Family(str, Enum):
    """Which quantizer runs a recipe (see the module docstring)."""

    CAST = "cast"
    SCALED = "scaled"
    MX = "mx"
    NVFP4 = "nvfp4"


_CAST_CONVENTIONS = ("torch", "ml_dtypes")


@dataclass(frozen=True)
class Recipe:
    """One way of storing a tensor: every field a named choice."""

    name: str  # registry key; a convention variant is named `NAME@CONVENTION`
    family: Family
    element: str  # element format (a `formats` name)
    granularity: str  # which elements share a scale: "element" (cast), a `parse_granularity` spec,
    #                   "block32" (MX), "block16" / "block16x16" (NVFP4)
    scale_format: str | None = None  # scaled: None = FP32 encode scale; MX: E8M0; NVFP4: E4M3FN
    convention: str = "ocp"  # cast: a `formats` convention; MX / NVFP4: a block convention
    scale_rule: str | None = None  # MX: the shared-exponent rule (None: the convention's own)
    rht: bool = False  # random Hadamard transform on blocks of 16 along the last axis
    rounding: str = "nearest_even"  # every recipe here rounds to nearest even
    description: str = ""

    def __post_init__(self) -> None:
        fmt = formats.get_format(self.element)
        if self.rounding != "nearest_even":
            raise ValueError(f"recipe {self.name}: rounding {self.rounding!r}; the lab's recipes round to nearest "
                             "even (nearest_even)")
        if self.family is Family.CAST:
            if self.convention not in _CAST_CONVENTIONS:
                raise ValueError(f"recipe {self.name}: a cast takes convention {' or '.join(_CAST_CONVENTIONS)}, "
                                 f"not {self.convention!r}")
        elif self.family is Family.SCALED:
            parse_granularity(self.granularity)
            if self.convention != "ocp":
                raise ValueError(f"recipe {self.name}: scaled casts use the ocp element policy (nearest even, "
                                 f"saturating), not {self.convention!r}")
        else:
            conv = get_block_convention(self.convention)
            if self.family is Family.MX:
                assert isinstance(fmt, formats.FloatFormat)
                conv.check_mx(fmt, 32)
                conv.mx_rule(self.scale_rule)
            elif self.block_2d and not conv.nvfp4_tiles_2d:
                raise ValueError(f"recipe {self.name}: the {conv.name} convention has NVFP4 1×16 blocks only, "
                                 "not 16×16 tiles")

    # ---- derived -------------------------------------------------------------------------------
    @property
    def fmt(self) -> Format:
        return formats.get_format(self.element)

    @property
    def block_2d(self) -> bool:
        return self.family is Family.NVFP4 and self.granularity == "block16x16"

    @property
    def block(self) -> tuple[int, int]:
        """(rows, cols) of one scale block of the matrix view; (1, 1) for a cast, (1, C) is not a
        block: per-tensor/row/column recipes give (0, 0)."""
        if self.family is Family.CAST:
            return 1, 1
        if self.family is Family.MX:
            return 1, 32
        if self.family is Family.NVFP4:
            return (16, 16) if self.block_2d else (1, 16)
        g = parse_granularity(self.granularity)
        if g.kind == "block":
            return 1, int(g.block[0])
        if g.kind == "block2d":
            return int(g.block[0]), int(g.block[1])
        return 0, 0

    @property
    def row_multiple(self) -> int:
        """Chunks hold a multiple of this many rows (16 for 16×16 tiles)."""
        return max(1, self.block[0])

    @property
    def global_amax(self) -> str | None:
        """Which amax over the whole tensor the recipe needs before its chunks: "tensor", "column",
        "nvfp4" (the tensor amax by the convention's rule), or None."""
        if self.family is Family.NVFP4:
            return "nvfp4"
        if self.family is Family.SCALED:
            kind = parse_granularity(self.granularity).kind
            if kind in ("tensor", "column"):
                return kind
        return None

    def check(self, shape: Sequence[int]) -> str | None:
        """Why the recipe does not apply to a tensor of `shape`, or None when it does."""
        rows, cols = matrix_shape(shape)
        if self.rht and cols % RHT_BLOCK:
            return f"the Hadamard transform needs the last axis ({cols}) to be a multiple of {RHT_BLOCK}"
        if self.family is Family.SCALED and parse_granularity(self.granularity).kind == "column" and len(shape) < 2:
            return "a tensor with fewer than two axes has no columns (channels)"
        br, bc = self.block
        if bc > 1 and cols % bc:
            return f"blocks of {bc} do not divide the last axis ({cols})"
        if br > 1 and rows % br:
            return f"{br}×{bc} tiles do not divide the rows ({rows}) of the matrix view"
        return None

    def bits_per_element(self, shape: Sequence[int]) -> float:
        """Element bits plus stored scales amortised over the tensor (see the module docstring)."""
        rows, cols = matrix_shape(shape)
        n = rows * cols
        if self.family is Family.CAST:
            return float(self.fmt.bits)
        if self.family is Family.MX:
            return mx_bits_per_element(self.element, 32)
        if self.family is Family.NVFP4:
            return nvfp4_bits_per_element(n, self.block_2d)
        g = parse_granularity(self.granularity)
        n_scales = int(np.prod(g.grid_shape((rows, cols)), dtype=np.int64))
        scale_bits = 32 if self.scale_format is None else formats.get_format(self.scale_format).bits
        return self.fmt.bits + scale_bits * n_scales / n

    def with_convention(self, convention: str) -> "Recipe":
        """The same recipe under another block (or cast) convention, named `NAME@CONVENTION`."""
        if self.family is Family.SCALED:
            raise ValueError(f"recipe {self.name} takes no convention (scaled casts use the ocp element policy)")
        base = self.name.split("@")[0]
        conv = convention.strip().lower()
        default = "torch" if self.family is Family.CAST else "ocp"
        name = base if conv == default else f"{base}@{conv}"
        return dataclasses.replace(self, name=name, convention=conv)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "family": self.family.value, "element": self.element,
                "granularity": self.granularity,
                "scale_format": self.scale_format if self.scale_format is not None else (
                    "FP32" if self.family is Family.SCALED else None),
                "convention": self.convention, "scale_rule": self._rule_name(), "rht": self.rht,
                "rounding": self.rounding, "description": self.description}

    def _rule_name(self) -> str | None:
        if self.family is not Family.MX:
            return None
        return get_block_convention(self.convention).mx_rule(self.scale_rule).rule.value


def _r(name: str, family: Family, element: str, granularity: str, description: str, **kw: Any) -> Recipe:
    return Recipe(name, family, element, granularity, description=description, **kw)


_ALL: tuple[Recipe, ...] = (
    _r("bf16", Family.CAST, "BF16", "element", "cast to BF16 (round to nearest even)", convention="torch"),
    _r("fp16", Family.CAST, "FP16", "element", "cast to FP16 (round to nearest even; beyond 65504 → Inf)",
       convention="torch"),
    _r("e4m3_tensor", Family.SCALED, "E4M3FN", "tensor",
       "E4M3 with one FP32 scale per tensor, current scaling (scale = 448 / amax)"),
    _r("e5m2_tensor", Family.SCALED, "E5M2", "tensor",
       "E5M2 with one FP32 scale per tensor, current scaling (scale = 57344 / amax)"),
    _r("e4m3_row", Family.SCALED, "E4M3FN", "row",
       "E4M3 with an FP32 scale per row (per output channel of a weight, per token of an activation)"),
    _r("e4m3_column", Family.SCALED, "E4M3FN", "column",
       "E4M3 with an FP32 scale per column (per input channel / feature along the last axis)"),
    _r("int8_row", Family.SCALED, "INT8", "row",
       "symmetric INT8 (±127) with an FP32 scale per row (per output channel of a weight)"),
    _r("int4_g32", Family.SCALED, "INT4", "block32",
       "symmetric INT4 (±7) with a BF16 scale per group of 32 along the last axis", scale_format="BF16"),
    _r("int4_g128", Family.SCALED, "INT4", "block128",
       "symmetric INT4 (±7) with a BF16 scale per group of 128 along the last axis", scale_format="BF16"),
    _r("mxfp8_e4m3", Family.MX, "E4M3FN", "block32", "MXFP8: E4M3 elements, an E8M0 scale per 32",
       scale_format="E8M0"),
    _r("mxfp8_e5m2", Family.MX, "E5M2", "block32", "MXFP8: E5M2 elements, an E8M0 scale per 32",
       scale_format="E8M0"),
    _r("mxfp6_e3m2", Family.MX, "E3M2", "block32", "MXFP6: E3M2 elements, an E8M0 scale per 32",
       scale_format="E8M0"),
    _r("mxfp6_e2m3", Family.MX, "E2M3", "block32", "MXFP6: E2M3 elements, an E8M0 scale per 32",
       scale_format="E8M0"),
    _r("mxfp4", Family.MX, "E2M1", "block32", "MXFP4: E2M1 elements, an E8M0 scale per 32", scale_format="E8M0"),
    _r("mxfp4_rht", Family.MX, "E2M1", "block32", "MXFP4 after the random Hadamard transform (blocks of 16)",
       scale_format="E8M0", rht=True),
    _r("nvfp4", Family.NVFP4, "E2M1", "block16",
       "NVFP4: E2M1 elements, an E4M3 scale per 16 along the last axis, an FP32 tensor scale",
       scale_format="E4M3FN"),
    _r("nvfp4_16x16", Family.NVFP4, "E2M1", "block16x16",
       "NVFP4 with an E4M3 scale per 16×16 tile (the weight layout), an FP32 tensor scale",
       scale_format="E4M3FN"),
    _r("nvfp4_rht", Family.NVFP4, "E2M1", "block16",
       "NVFP4 (1×16 blocks) after the random Hadamard transform (blocks of 16)", scale_format="E4M3FN", rht=True),
)

#: every recipe by name (convention variants are made by `get_recipe("NAME@CONVENTION")`)
RECIPES: dict[str, Recipe] = {r.name: r for r in _ALL}
#: what `lowprec analyze` runs without --recipes: one recipe of each kind the issue names
DEFAULT_RECIPES: tuple[str, ...] = ("bf16", "e4m3_tensor", "e4m3_row", "mxfp8_e4m3", "mxfp6_e2m3", "mxfp4",
                                    "nvfp4", "nvfp4_rht", "int8_row", "int4_g128")
ALL = "all"
DEFAULT = "default"


def get_recipe(spec: str | Recipe) -> Recipe:
    """The recipe `NAME` or `NAME@CONVENTION` (case-insensitive); ValueError naming the known ones."""
    if isinstance(spec, Recipe):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"a recipe is named by text, got {type(spec).__name__}")
    name, _, conv = spec.strip().lower().partition("@")
    if name not in RECIPES:
        raise ValueError(f"unknown recipe {spec.strip()!r}; known: {', '.join(RECIPES)} (a block or cast recipe "
                         f"takes @CONVENTION: {', '.join(BLOCK_CONVENTIONS)} for blocks, "
                         f"{', '.join(_CAST_CONVENTIONS)} for casts)")
    recipe = RECIPES[name]
    return recipe.with_convention(conv) if conv else recipe


def parse_recipes(text: str | Sequence[str] | None) -> tuple[Recipe, ...]:
    """Recipes from a comma-separated list (or a sequence of names): `default` (DEFAULT_RECIPES),
    `all` (every registered recipe) and `NAME[@CONVENTION]`; each once, in the order given."""
    if text is None:
        items: list[str] = [DEFAULT]
    elif isinstance(text, str):
        items = [t for t in (s.strip() for s in text.split(",")) if t]
    else:
        items = [str(t).strip() for t in text]
    if not items:
        raise ValueError("no recipe given; name some (comma-separated), or 'default' or 'all'")
    out: list[Recipe] = []
    for item in items:
        key = item.lower()
        expanded = ([RECIPES[n] for n in DEFAULT_RECIPES] if key == DEFAULT else
                    list(_ALL) if key == ALL else [get_recipe(item)])
        for r in expanded:
            if r.name not in {o.name for o in out}:
                out.append(r)
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# running a recipe on a chunk of rows
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def hadamard_matrix() -> np.ndarray:
    """The 16 × 16 random Hadamard matrix the RHT recipes use (seed RHT_SEED)."""
    return random_hadamard(RHT_BLOCK, RHT_SEED)


def cast_input(recipe: Recipe, x: np.ndarray) -> np.ndarray:
    """What enters the recipe's quantizer: x, or x with the RHT applied and rounded back to x's
    float type (the transformed operand a kernel would hold)."""
    if not recipe.rht:
        return x
    return apply_blockwise(x, hadamard_matrix(), axis=-1).astype(x.dtype)


def nvfp4_chunk_amax(recipe: Recipe, x: np.ndarray) -> float:
    """The tensor amax `quantize_nvfp4` would measure from rows `x` alone, under the recipe's
    convention (its `TensorAmax` rule over its blocks). Chunks combine by `combine_amax`."""
    conv = get_block_convention(recipe.convention)
    arr = float_input(x)
    if conv.float32_input and arr.dtype != np.float32:
        with np.errstate(over="ignore"):
            arr = arr.astype(np.float32)
    g = block_grouping(tuple(arr.shape), -1, 16, recipe.block_2d)
    abits = amax_bits(g.to_groups(arr))
    bad = abits >= inf_bits(arr.dtype)
    block_amax = abits.view(arr.dtype)
    if conv.float32_input:
        return nvfp4_tensor_amax(block_amax, bad, conv.nvfp4_tensor_amax)
    return nvfp4_tensor_amax(np.where(bad, 0.0, block_amax.astype(np.float64)), bad, conv.nvfp4_tensor_amax)


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
        kind = recipe.global_amax
        if kind is None:
            return
        xin = cast_input(recipe, x)
        with np.errstate(invalid="ignore"):
            if kind == "nvfp4":
                value: Any = nvfp4_chunk_amax(recipe, xin)
            elif kind == "tensor":
                value = float(np.max(np.abs(xin))) if xin.size else 0.0
            else:
                value = np.abs(xin).max(axis=0).astype(np.float64)
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


def scaled_policy(fmt: Format) -> formats.CastPolicy:
    """The element policy of a scaled recipe: the ocp reading (nearest even, saturating), and, for a
    format without NaN (INT8, INT4), a NaN input cast to +0 rather than refused. The lab measures
    errors over finite inputs only, so this code never enters a metric; it keeps a checkpoint with
    one NaN analysable."""
    policy = default_element_policy(fmt)
    if policy.nan_to_finite is formats.NanToFinite.RAISE:
        policy = policy.with_(nan_to_finite=formats.NanToFinite.ZERO)
    return policy


def _expand(per_block: np.ndarray, block: tuple[int, int], shape: tuple[int, int]) -> np.ndarray:
    """Per-block values (laid out as the blocks tile the matrix) repeated over their elements."""
    br, bc = block
    grid = per_block.reshape(shape[0] // br, shape[1] // bc)
    return np.repeat(np.repeat(grid, br, axis=0), bc, axis=1)


def quantize_chunk(recipe: Recipe, x: np.ndarray, amax: GlobalAmax | None = None) -> QuantizedChunk:
    """Run `recipe` on rows `x` (2-D, float32 or float64) with the whole tensor's amaxes."""
    xin = cast_input(recipe, x)
    shape = (int(x.shape[0]), int(x.shape[1]))
    if recipe.family is Family.CAST:
        out = formats.quantize(xin, recipe.fmt, formats.policy_for(recipe.convention, recipe.fmt)).astype(np.float64)
        scales = np.ones(shape)
    elif recipe.family is Family.SCALED:
        given = amax.of(recipe) if amax is not None and recipe.global_amax else None
        st = quantize_scaled(xin, recipe.fmt, recipe.granularity, scaled_policy(recipe.fmt),
                             scale_format=recipe.scale_format, amax=given)
        out = st.dequantize()
        scales = st.element_decode_scales()
    elif recipe.family is Family.MX:
        mt = quantize_mx(xin, recipe.element, 32, recipe.scale_rule, axis=-1, convention=recipe.convention)
        out = mt.dequantize().astype(np.float64)
        scales = _expand(formats.decode(mt.scale_codes, formats.E8M0).astype(np.float64), (1, 32), shape)
    else:
        given = amax.of(recipe) if amax is not None else None
        nt = quantize_nvfp4(xin, -1, block_2d=recipe.block_2d, convention=recipe.convention,
                            tensor_amax=given)
        out = nt.dequantize().astype(np.float64)
        block = (16, 16) if recipe.block_2d else (1, 16)
        scales = _expand(nt.block_scales.astype(np.float64) * nt.tensor_scale, block, shape)
    x_hat = apply_blockwise(out, hadamard_matrix().T, axis=-1) if recipe.rht else out
    return QuantizedChunk(x_hat, xin, out, scales)
