"""Scaled-quantization recipes as data: one frozen `Recipe` record per way of storing a tensor in low
precision, in one registry (`RECIPES`), each with its source.

A recipe is an element format, the granularity its scales are shared at (per tensor, per row, per
column, 1×k blocks along the last axis, k×k tiles of the matrix view), the scale's format
(`ScaleFormat`: FP32, a power of two stored in FP32, E8M0/UE8M0, E4M3, UE5M3, BF16), the scale rule,
an optional second level (NVFP4's FP32 scale per tensor or per row), an optional transform (the
random Hadamard transform on blocks of 16, its signs named by the convention: `quant.rht`), the
rounding, and the block convention whose arithmetic it follows (`quant.conventions`: ocp, torchao,
transformer_engine, deepseek, microxcaling; a cast takes a `formats` convention, torch or ml_dtypes).
`Scheme` names the scale law, i.e. which quantizer of the wing runs it; `quant.quantize(x,
"NAME@CONVENTION")` runs any record (`quant.engine`).

`get_recipe("NAME")` gives the record under its own convention, `get_recipe("NAME@CONVENTION")` the
same recipe under another; `parse_recipes` reads a comma-separated list (with `default` and `all`).
A new recipe is one record here plus its tests.

The matrix view of a tensor (`matrix_shape`: rows × last axis) is what tile recipes quantize, as
Transformer Engine and DeepGEMM flatten leading axes. Bits per element (`Recipe.bits_per_element`):
element bits plus every stored scale amortised over the tensor's elements (the RHT's sixteen signs
are a shared constant: 0 bits).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import Enum
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import Format

from ..scaling.granularity import parse_granularity
from .conventions import CONVENTIONS, BlockConvention, get_block_convention
from .rht import RHT_BLOCK

__all__ = [
    "ALL",
    "CAST_CONVENTIONS",
    "DEFAULT",
    "DEFAULT_RECIPES",
    "RECIPES",
    "Recipe",
    "ScaleFormat",
    "Scheme",
    "get_recipe",
    "matrix_shape",
    "parse_recipes",
]

#: the `formats` conventions a cast recipe takes (the block conventions apply to scaled recipes)
CAST_CONVENTIONS = ("torch", "ml_dtypes")


class Scheme(str, Enum):
    """Which scale law a recipe follows, i.e. which quantizer of the wing runs it (the arithmetic of
    each convention is on the enums of `quant.conventions`).

    CAST: every element cast to the element format, no scale (`formats.quantize` under the `torch` or
        `ml_dtypes` convention).
    SCALED: groups (tensor, row, column, 1×k, k×k) share encode scale F / amax (F the element's
        largest value), stored as FP32 or cast to the scale format rounded up; elements round to
        nearest even and saturate (`simulations.scaling.quantize_scaled`, the ocp reading).
    MX: 32 consecutive elements share an E8M0 scale 2^X, X from the block amax by the ScaleRule
        (OCP MX v1.0 §5–6; `quant.mx`).
    NVFP4: E2M1 elements, an E4M3 scale per 1×16 block or 16×16 tile, under an FP32 second level per
        tensor or per row (`quant.nvfp4`).
    FP8_TILES: E4M3 elements, one scale per 1×k or k×k tile of the matrix view (partial edge tiles
        allowed), stored as FP32, a power of two in FP32, or UE8M0 (`quant.fp8_blockwise`).
    MXINT: INT8 elements with an implicit 2^-6 under an E8M0 scale per 32 (OCP MX v1.0 §5.3;
        `quant.mxint`).
    """

    CAST = "cast"
    SCALED = "scaled"
    MX = "mx"
    NVFP4 = "nvfp4"
    FP8_TILES = "fp8_tiles"
    MXINT = "mxint"


class ScaleFormat(str, Enum):
    """What one stored scale is.

    NONE: no scale (a cast).
    FP32: an IEEE float32 scale (Transformer Engine stores the decode scale `scale_inv`).
    POW2_FP32: a power of two stored in FP32 (Transformer Engine's `Float8BlockScaling` default).
    E8M0: an unsigned power of two 2^(code − 127), code 0xFF NaN (OCP's E8M0; DeepSeek's UE8M0).
    E4M3: an E4M3FN value (NVFP4's block scale).
    UE5M3: the unsigned float8 e5m3 of ml_dtypes (`float8_e5m3fnu`), where `formats` has it.
    BF16: a bfloat16 scale (INT4 group scales).
    """

    NONE = "none"
    FP32 = "FP32"
    POW2_FP32 = "POW2_FP32"
    E8M0 = "E8M0"
    E4M3 = "E4M3"
    UE5M3 = "UE5M3"
    BF16 = "BF16"

    @classmethod
    def parse(cls, value: Any) -> "ScaleFormat":
        """A ScaleFormat from its name (case-insensitive; UE8M0 = E8M0, E4M3FN = E4M3, None = NONE)."""
        if isinstance(value, ScaleFormat):
            return value
        if value is None:
            return cls.NONE
        key = str(value).strip().upper()
        key = {"UE8M0": "E8M0", "E4M3FN": "E4M3", "FLOAT8_E5M3FNU": "UE5M3", "POW2": "POW2_FP32"}.get(key, key)
        for m in cls:
            if m.value.upper() == key:
                return m
        raise ValueError(f"scale format {value!r} is not one of {', '.join(m.value for m in cls)} (UE8M0 = E8M0)")

    @property
    def bits(self) -> int:
        """Bits of one stored scale."""
        return {"none": 0, "FP32": 32, "POW2_FP32": 32, "E8M0": 8, "E4M3": 8, "UE5M3": 8, "BF16": 16}[self.value]

    def storage_format(self) -> Format | None:
        """The `formats` format a scale is stored in (FP32 for the power-of-two FP32 scale; None for
        NONE). UE5M3 raises ValueError where `formats` lacks `float8_e5m3fnu`."""
        if self is ScaleFormat.NONE:
            return None
        name = {"FP32": "FP32", "POW2_FP32": "FP32", "E8M0": "E8M0", "E4M3": "E4M3FN", "BF16": "BF16",
                "UE5M3": "float8_e5m3fnu"}[self.value]
        try:
            return formats.get_format(name)
        except ValueError:
            raise ValueError("the UE5M3 scale format (ml_dtypes float8_e5m3fnu) is not in lowprec.formats on this "
                             "build, so no recipe can store UE5M3 scales yet") from None


def matrix_shape(shape: Sequence[int]) -> tuple[int, int]:
    """(rows, cols) of the matrix view: cols = the last axis, rows = the product of the others."""
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise TypeError(f"shape must be a tuple of non-negative integers, got {shape!r:.80}")
    if len(shape) == 0:
        return 1, 1
    cols = int(shape[-1])
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if len(shape) > 1 else 1
    return rows, cols


_ROUNDINGS = ("nearest_even", "stochastic")
_TRANSFORMS = ("rht16",)
_SECOND_LEVELS = ("tensor", "row")


@dataclass(frozen=True)
class Recipe:
    """One way of storing a tensor: every field a named choice (see the module docstring)."""

    name: str  # registry key; the recipe under another convention is named `NAME@CONVENTION`
    scheme: Scheme  # which scale law (and quantizer) runs it
    element: str  # element format (a `formats` name)
    granularity: str  # which elements share a scale: "element" (a cast) or a `parse_granularity` spec
    #                   ("tensor", "row", "column", "block32" = 1×32 along the last axis, "block16x16" tiles)
    scale_format: ScaleFormat = ScaleFormat.NONE
    convention: str = "ocp"  # whose arithmetic (the registry record holds the recipe's default)
    scale_rule: str | None = None  # MX: the ScaleRule (None: the convention's own); NVFP4: "4over6" or None
    second_level: str | None = None  # "tensor" / "row": an FP32 scale per tensor / per row above the blocks
    transform: str | None = None  # "rht16": the random Hadamard transform on blocks of 16 along the last axis
    rounding: str = "nearest_even"  # or "stochastic" (ocp MX, NVFP4 and scaled recipes; needs an rng)
    description: str = ""
    source: str = ""  # the specification or implementation it follows

    def __post_init__(self) -> None:
        if not isinstance(self.scheme, Scheme):
            object.__setattr__(self, "scheme", Scheme(self.scheme))
        object.__setattr__(self, "scale_format", ScaleFormat.parse(self.scale_format))
        formats.get_format(self.element)
        if self.rounding not in _ROUNDINGS:
            raise ValueError(f"recipe {self.name}: rounding {self.rounding!r} is not one of {', '.join(_ROUNDINGS)}")
        if self.transform is not None and self.transform not in _TRANSFORMS:
            raise ValueError(f"recipe {self.name}: transform {self.transform!r} is not one of {', '.join(_TRANSFORMS)}")
        if self.second_level is not None and self.second_level not in _SECOND_LEVELS:
            raise ValueError(f"recipe {self.name}: second level {self.second_level!r} is not one of "
                             f"{', '.join(_SECOND_LEVELS)}")
        if self.scheme is not Scheme.CAST:
            parse_granularity(self.granularity)
        why = self.unsupported(self.convention)
        if why is not None:
            raise ValueError(f"recipe {self.name}: {why}")

    # ---- conventions -----------------------------------------------------------------------------
    @property
    def base_name(self) -> str:
        return self.name.split("@")[0]

    def unsupported(self, convention: str) -> str | None:
        """Why the recipe cannot run under `convention`, or None when it can."""
        conv_name = convention.strip().lower() if isinstance(convention, str) else convention
        if self.scheme is Scheme.CAST:
            if conv_name not in CAST_CONVENTIONS:
                return f"a cast takes convention {' or '.join(CAST_CONVENTIONS)}, not {convention!r}"
            return None
        if self.scheme is Scheme.SCALED:
            if conv_name != "ocp":
                return f"scaled casts use the ocp element policy (nearest even, saturating), not {convention!r}"
            return self._stochastic_ok("ocp")
        try:
            conv = get_block_convention(conv_name)
            if self.scheme is Scheme.MX:
                fmt = self.fmt
                assert isinstance(fmt, formats.FloatFormat)
                conv.check_mx(fmt, self.block_elements)
                conv.mx_rule(self.scale_rule)
            elif self.scheme is Scheme.NVFP4:
                conv.check_nvfp4(self.block_2d, self.nvfp4_variant)
            elif self.scheme is Scheme.FP8_TILES:
                conv.check_fp8_tiles(self.scale_format.value)
            elif self.scheme is Scheme.MXINT:
                conv.check_mxint()
        except ValueError as exc:
            return str(exc)
        return self._stochastic_ok(conv.name)

    def _stochastic_ok(self, conv: str) -> str | None:
        if self.rounding == "stochastic" and (conv != "ocp" or self.scheme not in (Scheme.SCALED, Scheme.MX,
                                                                                     Scheme.NVFP4)):
            return "stochastic rounding is available under the ocp convention for scaled, MX and NVFP4 recipes"
        return None

    @property
    def conventions(self) -> tuple[str, ...]:
        """Every convention the recipe runs under, its own first."""
        names = CAST_CONVENTIONS if self.scheme is Scheme.CAST else tuple(CONVENTIONS)
        ok = [c for c in names if self.unsupported(c) is None]
        return tuple([self.convention] + [c for c in ok if c != self.convention])

    @property
    def block_convention(self) -> BlockConvention | None:
        """The block convention record (None for a cast, whose convention is a `formats` one)."""
        return None if self.scheme is Scheme.CAST else get_block_convention(self.convention)

    @property
    def rht_convention(self) -> str | None:
        """The signs of the recipe's RHT (`quant.rht.RHT_CONVENTIONS`): its block convention's; None
        without a transform."""
        if self.transform is None:
            return None
        conv = self.block_convention
        return "seeded" if conv is None else conv.rht

    def with_convention(self, convention: str) -> "Recipe":
        """The same recipe under another convention, named `NAME@CONVENTION` (plain NAME under the
        registry record's own convention)."""
        conv = convention.strip().lower()
        if self.scheme is Scheme.SCALED and conv != "ocp":
            raise ValueError(f"recipe {self.name} takes no convention (scaled casts use the ocp element policy)")
        base = self.base_name
        default = RECIPES[base].convention if base in RECIPES else self.convention
        name = base if conv == default else f"{base}@{conv}"
        return dataclasses.replace(self, name=name, convention=conv)

    def with_scale_rule(self, scale_rule: str | None) -> "Recipe":
        """The same MX recipe with another ScaleRule (None: the convention's own)."""
        if self.scheme is not Scheme.MX:
            raise ValueError(f"recipe {self.name} is not an MX recipe; only MX recipes take a scale rule")
        return dataclasses.replace(self, scale_rule=scale_rule)

    def with_rounding(self, rounding: str) -> "Recipe":
        """The same recipe with another rounding (stochastic: ocp scaled, MX and NVFP4 recipes)."""
        return dataclasses.replace(self, rounding=rounding)

    # ---- derived ---------------------------------------------------------------------------------
    @property
    def fmt(self) -> Format:
        return formats.get_format(self.element)

    @property
    def family(self) -> Scheme:
        """The scheme (the recipe lab's name for it)."""
        return self.scheme

    @property
    def rht(self) -> bool:
        """Whether the recipe applies the random Hadamard transform."""
        return self.transform == "rht16"

    @property
    def block_2d(self) -> bool:
        return self.scheme is not Scheme.CAST and parse_granularity(self.granularity).kind == "block2d"

    @property
    def nvfp4_variant(self) -> str | None:
        """NVFP4 only: "4over6", "row_scaled" or None (the default path)."""
        if self.scheme is not Scheme.NVFP4:
            return None
        if self.scale_rule == "4over6":
            return "4over6"
        return "row_scaled" if self.second_level == "row" else None

    @property
    def block(self) -> tuple[int, int]:
        """(rows, cols) of one scale block of the matrix view; (1, 1) for a cast; (0, 0) for scales
        per tensor, row or column (not blocks)."""
        if self.scheme is Scheme.CAST:
            return 1, 1
        g = parse_granularity(self.granularity)
        if g.kind == "block":
            return 1, int(g.block[0])
        if g.kind == "block2d":
            return int(g.block[0]), int(g.block[1])
        return 0, 0

    @property
    def block_elements(self) -> int:
        """Elements under one block scale (0 for a cast or a scale per tensor, row or column)."""
        br, bc = self.block
        return 0 if (br, bc) == (1, 1) and self.scheme is Scheme.CAST else br * bc

    @property
    def partial_tiles(self) -> bool:
        """Whether a block that does not divide the tensor is quantized as a partial tile (FP8 tiles,
        as Transformer Engine and DeepGEMM pad) rather than refused."""
        return self.scheme is Scheme.FP8_TILES

    @property
    def row_multiple(self) -> int:
        """Row chunks hold a multiple of this many rows (16 for 16×16 tiles, 128 for 128×128)."""
        return max(1, self.block[0])

    @property
    def global_amax(self) -> str | None:
        """Which amax over the whole tensor the recipe needs before its row chunks: "tensor", "column",
        "nvfp4" (NVFP4's tensor amax by the convention's rule), or None (row-local scales)."""
        if self.scheme is Scheme.NVFP4:
            return "nvfp4" if self.second_level != "row" else None
        if self.scheme is Scheme.SCALED:
            kind = parse_granularity(self.granularity).kind
            if kind in ("tensor", "column"):
                return kind
        return None

    def check(self, shape: Sequence[int]) -> str | None:
        """Why the recipe does not apply to a tensor of `shape`, or None when it does."""
        rows, cols = matrix_shape(shape)
        if self.rht and cols % RHT_BLOCK:
            return f"the Hadamard transform needs the last axis ({cols}) to be a multiple of {RHT_BLOCK}"
        if self.scheme is Scheme.SCALED and parse_granularity(self.granularity).kind == "column" and len(shape) < 2:
            return "a tensor with fewer than two axes has no columns (channels)"
        if self.partial_tiles:
            return None
        br, bc = self.block
        if bc > 1 and cols % bc:
            return f"blocks of {bc} do not divide the last axis ({cols})"
        if br > 1 and rows % br:
            return f"{br}×{bc} tiles do not divide the rows ({rows}) of the matrix view"
        return None

    def n_scales(self, shape: Sequence[int]) -> int:
        """How many block (or group) scales the recipe stores for a tensor of `shape` (partial tiles
        count as whole ones)."""
        rows, cols = matrix_shape(shape)
        if self.scheme is Scheme.CAST:
            return 0
        g = parse_granularity(self.granularity)
        if g.kind == "tensor":
            return 1
        if g.kind == "row":
            return rows
        if g.kind == "column":
            return cols
        br, bc = self.block
        return -(-rows // br) * -(-cols // bc)

    def bits_per_element(self, shape: Sequence[int]) -> float:
        """Element bits plus every stored scale amortised over the tensor (see the module docstring)."""
        rows, cols = matrix_shape(shape)
        n = rows * cols
        bits = float(self.fmt.bits)
        if self.scheme is Scheme.CAST or n == 0:
            return bits
        bits += self.scale_format.bits * self.n_scales(shape) / n
        if self.second_level is not None:
            bits += formats.FP32.bits * (1 if self.second_level == "tensor" else rows) / n
        return bits

    def to_dict(self) -> dict[str, Any]:
        sf = self.scale_format
        return {"name": self.name, "family": self.scheme.value, "scheme": self.scheme.value, "element": self.element,
                "granularity": self.granularity,
                "scale_format": None if sf is ScaleFormat.NONE else sf.value,
                "convention": self.convention, "scale_rule": self._rule_name(), "second_level": self.second_level,
                "transform": self.transform, "rht": self.rht, "rht_convention": self.rht_convention,
                "rounding": self.rounding, "conventions": list(self.conventions),
                "description": self.description, "source": self.source}

    def _rule_name(self) -> str | None:
        if self.scheme is Scheme.MX:
            return get_block_convention(self.convention).mx_rule(self.scale_rule).rule.value
        return self.scale_rule


# ------------------------------------------------------------------------------------------------
# the registry
# ------------------------------------------------------------------------------------------------

_OCP_MX = "OCP Microscaling Formats (MX) v1.0 §5–6"
_NVFP4 = "NVIDIA NVFP4 (Blackwell): E2M1 elements, E4M3 scale per 16, FP32 tensor scale"
_TE_NVFP4 = "Transformer Engine reference_nvfp4.py NVFP4QuantizerRef"
_TE_BLOCKWISE = ("Transformer Engine Float8BlockScaling: tests/pytorch/references/blockwise_quantizer_reference.py "
                 "with quantize_scale_calc.py scale_from_amax_tensor")
_DEEPGEMM = "DeepSeek-V3 FP8 (DeepGEMM deep_gemm/utils/math.py per_token_cast_to_fp8 / per_block_cast_to_fp8)"
_RHT_NOTE = ("; Transformer Engine applies the RHT to the column-wise (wgrad) operands only, "
             "never to weights")


def _r(name: str, scheme: Scheme, element: str, granularity: str, description: str, source: str,
       **kw: Any) -> Recipe:
    return Recipe(name, scheme, element, granularity, description=description, source=source, **kw)


_ALL: tuple[Recipe, ...] = (
    _r("bf16", Scheme.CAST, "BF16", "element", "cast to BF16 (round to nearest even)",
       "x.to(torch.bfloat16)", convention="torch"),
    _r("fp16", Scheme.CAST, "FP16", "element", "cast to FP16 (round to nearest even; beyond 65504 → Inf)",
       "x.to(torch.float16)", convention="torch"),
    _r("e4m3_tensor", Scheme.SCALED, "E4M3FN", "tensor",
       "E4M3 with one FP32 scale per tensor, current scaling (scale = 448 / amax)",
       "Transformer Engine FP8 primer (current scaling)", scale_format="FP32"),
    _r("e5m2_tensor", Scheme.SCALED, "E5M2", "tensor",
       "E5M2 with one FP32 scale per tensor, current scaling (scale = 57344 / amax)",
       "Transformer Engine FP8 primer (current scaling)", scale_format="FP32"),
    _r("e4m3_row", Scheme.SCALED, "E4M3FN", "row",
       "E4M3 with an FP32 scale per row (per output channel of a weight, per token of an activation)",
       "per-channel / per-token FP8 scaling", scale_format="FP32"),
    _r("e4m3_column", Scheme.SCALED, "E4M3FN", "column",
       "E4M3 with an FP32 scale per column (per input channel / feature along the last axis)",
       "per-channel FP8 scaling", scale_format="FP32"),
    _r("int8_row", Scheme.SCALED, "INT8", "row",
       "symmetric INT8 (±127) with an FP32 scale per row (per output channel of a weight)",
       "per-channel symmetric INT8 quantization", scale_format="FP32"),
    _r("int4_g32", Scheme.SCALED, "INT4", "block32",
       "symmetric INT4 (±7) with a BF16 scale per group of 32 along the last axis",
       "group-wise INT4 weight quantization", scale_format="BF16"),
    _r("int4_g128", Scheme.SCALED, "INT4", "block128",
       "symmetric INT4 (±7) with a BF16 scale per group of 128 along the last axis",
       "group-wise INT4 weight quantization", scale_format="BF16"),
    _r("mxfp8_e4m3", Scheme.MX, "E4M3FN", "block32", "MXFP8: E4M3 elements, an E8M0 scale per 32", _OCP_MX,
       scale_format="E8M0"),
    _r("mxfp8_e5m2", Scheme.MX, "E5M2", "block32", "MXFP8: E5M2 elements, an E8M0 scale per 32", _OCP_MX,
       scale_format="E8M0"),
    _r("mxfp6_e3m2", Scheme.MX, "E3M2", "block32", "MXFP6: E3M2 elements, an E8M0 scale per 32", _OCP_MX,
       scale_format="E8M0"),
    _r("mxfp6_e2m3", Scheme.MX, "E2M3", "block32", "MXFP6: E2M3 elements, an E8M0 scale per 32", _OCP_MX,
       scale_format="E8M0"),
    _r("mxfp4", Scheme.MX, "E2M1", "block32", "MXFP4: E2M1 elements, an E8M0 scale per 32", _OCP_MX,
       scale_format="E8M0"),
    _r("mxfp4_rht", Scheme.MX, "E2M1", "block32",
       "MXFP4 after the random Hadamard transform (blocks of 16)" + _RHT_NOTE, _OCP_MX + "; quant.rht",
       scale_format="E8M0", transform="rht16"),
    _r("nvfp4", Scheme.NVFP4, "E2M1", "block16",
       "NVFP4: E2M1 elements, an E4M3 scale per 16 along the last axis, an FP32 tensor scale", _NVFP4,
       scale_format="E4M3", second_level="tensor"),
    _r("nvfp4_16x16", Scheme.NVFP4, "E2M1", "block16x16",
       "NVFP4 with an E4M3 scale per 16×16 tile (the weight layout), an FP32 tensor scale", _NVFP4,
       scale_format="E4M3", second_level="tensor"),
    _r("nvfp4_rht", Scheme.NVFP4, "E2M1", "block16",
       "NVFP4 (1×16 blocks) after the random Hadamard transform (blocks of 16; the tensor amax taken after it)"
       + _RHT_NOTE, _NVFP4 + "; " + _TE_NVFP4 + " with_rht=True under transformer_engine",
       scale_format="E4M3", second_level="tensor", transform="rht16"),
    # ---- FP8 blockwise (1×128 activations and gradients, 128×128 weights) -------------------------
    _r("fp8_1x128", Scheme.FP8_TILES, "E4M3FN", "block128",
       "E4M3 with an FP32 scale per 1×128 tile along the last axis (activations, gradients)", _TE_BLOCKWISE,
       scale_format="FP32", convention="transformer_engine"),
    _r("fp8_128x128", Scheme.FP8_TILES, "E4M3FN", "block128x128",
       "E4M3 with an FP32 scale per 128×128 tile of the matrix view (weights)", _TE_BLOCKWISE,
       scale_format="FP32", convention="transformer_engine"),
    _r("fp8_1x128_pow2", Scheme.FP8_TILES, "E4M3FN", "block128",
       "E4M3 with a power-of-two scale (stored in FP32) per 1×128 tile: Float8BlockScaling's default",
       _TE_BLOCKWISE, scale_format="POW2_FP32", convention="transformer_engine"),
    _r("fp8_128x128_pow2", Scheme.FP8_TILES, "E4M3FN", "block128x128",
       "E4M3 with a power-of-two scale (stored in FP32) per 128×128 tile: Float8BlockScaling's default",
       _TE_BLOCKWISE, scale_format="POW2_FP32", convention="transformer_engine"),
    _r("fp8_1x128_ue8m0", Scheme.FP8_TILES, "E4M3FN", "block128",
       "E4M3 with a UE8M0 scale (amax / 448 rounded up to a power of two) per 1×128 tile", _DEEPGEMM
       + " use_ue8m0=True (DeepSeek-V3.1 checkpoints)", scale_format="E8M0", convention="deepseek"),
    _r("fp8_128x128_ue8m0", Scheme.FP8_TILES, "E4M3FN", "block128x128",
       "E4M3 with a UE8M0 scale (amax / 448 rounded up to a power of two) per 128×128 tile", _DEEPGEMM
       + " use_ue8m0=True", scale_format="E8M0", convention="deepseek"),
    # ---- MXINT8, NVFP4 variants ---------------------------------------------------------------------
    _r("mxint8", Scheme.MXINT, "INT8", "block32",
       "MXINT8: INT8 elements with an implicit 2^-6 (±1 63/64), an E8M0 scale per 32",
       _OCP_MX + " §5.3 (INT8); gfloat format_info_mxint8", scale_format="E8M0"),
    _r("nvfp4_4over6", Scheme.NVFP4, "E2M1", "block16",
       "NVFP4 where each block picks the scale mapping its amax to 6 or to 4 (1.5× the scale), whichever "
       "gives the smaller absolute error (MAE)", _TE_NVFP4 + " nvfp4_use_4over6=True (MAE, e4m3 max 448); "
       "Four Over Six (Cook et al., 2025)", scale_format="E4M3", second_level="tensor", scale_rule="4over6",
       convention="transformer_engine"),
    _r("nvfp4_rowscaled", Scheme.NVFP4, "E2M1", "block16",
       "NVFP4 with an FP32 second-level scale per row instead of per tensor", _TE_NVFP4 + " row_scaled_nvfp4=True",
       scale_format="E4M3", second_level="row", convention="transformer_engine"),
)

#: every recipe by name (convention variants are made by `get_recipe("NAME@CONVENTION")`)
RECIPES: dict[str, Recipe] = {r.name: r for r in _ALL}
#: what `lowprec analyze` runs without --recipes: one recipe of each kind
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
                         f"takes @CONVENTION: {', '.join(CONVENTIONS)} for blocks, "
                         f"{', '.join(CAST_CONVENTIONS)} for casts)")
    recipe = RECIPES[name]
    return recipe.with_convention(conv) if conv else recipe


def parse_recipes(text: str | Sequence[str] | None) -> tuple[Recipe, ...]:
    """Recipes from a comma-separated list (or a sequence of names): `default` (DEFAULT_RECIPES),
    `all` (every registered recipe) and `NAME[@CONVENTION]`; each once, in the order given."""
    if text is None:
        items: list[str] = [DEFAULT]
    elif isinstance(text, str):
        items = [t for t in (s.strip() for s in text.split(",")) if t]
    elif isinstance(text, (list, tuple)) and all(isinstance(t, (str, Recipe)) for t in text):
        items = [t if isinstance(t, str) else t.name for t in text]
        items = [t.strip() for t in items]
    else:
        raise TypeError(f"recipes are named by text (comma-separated) or a list of names, got {text!r:.80}")
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
