"""The block-formats simulation: the block recipes of the quant wing (`simulations.quant.RECIPES`) on
one tensor, and one recipe in detail.

The tensor: `rows × cols` float32 values from `numpy.random.default_rng(seed)` (standard normal,
Student-t with 3 degrees of freedom, or a signed log-normal with σ = 2), optionally with one outlier
at column OUTLIER_COL of row `row`. With `hadamard` on, every run of 16 elements along a row is first
multiplied by the random Hadamard matrix of `simulations.quant.rht` (the convention's signs: seeded
from `seed`, or Transformer Engine's fixed vector), and each decoded tensor is transformed back
(with Hᵀ), so errors are always measured against the original tensor.

- The comparison: under a convention that has MX and NVFP4, MX (each element format × each scale
  rule, blocks of 32 along rows) and NVFP4 (1×16 blocks and 16×16 tiles); under one that has neither
  (deepseek, microxcaling), each block recipe it has. Per scheme the bits per element and the RMS
  relative error ‖x̂ − x‖₂ / ‖x‖₂ overall and per 32-element block along rows.
- The recipe in detail (`recipe`, any of `BLOCK_RECIPES`: MX, NVFP4 and its variants, FP8 blockwise
  1×128 / 128×128 tiles, MXINT8; and `scale_rule` for MX): against per-tensor scaling in the same
  element format (`simulations.scaling.quantize_scaled`, FP32 `encode_scale = F / amax`), the
  per-block errors, and the first 32 elements of `row` with their codes, scales and the grid of
  values the first of them can decode to. With `transposed_view` on, also the two ways of making the
  column-blocked view (blocks along columns, as the weight-gradient product needs; for 1×128 tiles
  the 128×1 view) of the tensor entering the cast: quantized from the source (one rounding) and
  re-quantized from the row-blocked decoded data (two roundings), with the same recipe; those errors
  are measured against the tensor entering the cast (with the transform on, the transformed one; the
  tensor-wide error of the row view is the same in either basis, the blockwise transform being
  orthogonal).

`BlocksConfig` declares every parameter once; `lowprec simulate blocks`, `python -m
lowprec.simulations.blocks`, the BlockFormats widget and its lesson directive are generated from it.
`convention` names whose arithmetic every cast follows (`simulations.quant.conventions`: the OCP
reading, torchao 0.18, Transformer Engine 2.20, DeepSeek's DeepGEMM, microxcaling); the recipe must
be one the convention has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Union

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import CastPolicy

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, config_values, run_module
from ..scaling.granularity import Granularity
from ..scaling.metrics import ErrorReport, error_metrics
from ..quant.conventions import CONVENTIONS, DEFAULT_CONVENTION, BlockConvention, get_block_convention
from ..quant.engine import QuantResult, quantize
from ..quant.mx import MXTensor, mx_scale_rule_table, quantize_mx
from ..quant.nvfp4 import NVFP4Tensor, quantize_nvfp4
from ..quant.recipes import RECIPES, Recipe, ScaleFormat, Scheme
from ..quant.rht import RHT_BLOCK, apply_blockwise, inverse_rht, rht_matrix
from ..quant.scale_rules import ScaleRule, scale_rule_of
from ..scaling import quantize_scaled
from .records import BLOCK_FORMATS, BlockFormat, get_block_format

__all__ = [
    "BLOCK_RECIPES",
    "BlockSchemeEntry",
    "BlocksConfig",
    "BlocksResult",
    "DISTRIBUTIONS",
    "RecipeView",
    "OUTLIER_COL",
    "SHOWN",
    "SIMULATION",
    "SelectedRecipe",
    "ShownBlock",
    "TransposedView",
    "quantize_block",
    "quantize_mx",
    "quantize_nvfp4",
    "sample_tensor",
    "simulate_blocks",
]

DISTRIBUTIONS = ("normal", "student_t", "lognormal")
OUTLIER_COL = 5  # column of the optional outlier in row `row`
SHOWN = 32  # elements of `row` shown in detail: one MX block, two NVFP4 blocks
COMPARE_BLOCK = 32  # per-block errors are over blocks of 32 along rows, for every scheme

BlockTensor = Union[MXTensor, NVFP4Tensor]


def _block_recipes() -> dict[str, Recipe]:
    """The registry's block-scaled recipes without a transform (the `hadamard` knob applies one), by
    upper-case name: the six MX and NVFP4 formats first (their `BLOCK_FORMATS` names), then the rest
    in registry order."""
    legacy = [r for r in (RECIPES[bf.name.lower()] for bf in BLOCK_FORMATS.values())]
    rest = [r for r in RECIPES.values() if r not in legacy and r.transform is None
            and r.scheme in (Scheme.MX, Scheme.NVFP4, Scheme.FP8_TILES, Scheme.MXINT)]
    return {r.name.upper(): r for r in legacy + rest}


#: the recipes the simulation can show in detail, by the name its `recipe` knob takes
BLOCK_RECIPES: dict[str, Recipe] = _block_recipes()


#: the most elements `sample_tensor` draws (4096 × 4096, the config's bounds)
MAX_SAMPLES = 4096 * 4096


def sample_tensor(distribution: str, shape: Sequence[int], seed: int) -> np.ndarray:
    """float32 samples: 'normal' N(0, 1), 'student_t' (3 dof), 'lognormal' ±exp(N(0, 2²)).
    At most `MAX_SAMPLES` elements (ValueError beyond: bounded work)."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"shape must be a tuple of integers, got {shape!r:.80}")
    shp = tuple(int(s) for s in shape)
    if any(s < 0 for s in shp) or int(np.prod(shp, dtype=object)) > MAX_SAMPLES:
        raise ValueError(f"shape must have non-negative sides and at most {MAX_SAMPLES} elements, got {shp}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r:.40}")
    if not 0 <= int(seed) < 2**63:
        raise ValueError(f"seed must be in [0, 2**63), got {seed}")
    rng = np.random.default_rng(int(seed))
    if distribution == "normal":
        return rng.standard_normal(shp).astype(np.float32)
    if distribution == "student_t":
        return rng.standard_t(3, size=shp).astype(np.float32)
    if distribution == "lognormal":
        return (rng.lognormal(0.0, 2.0, size=shp) * rng.choice([-1.0, 1.0], size=shp)).astype(np.float32)
    raise ValueError(f"distribution {distribution!r} is not one of {', '.join(DISTRIBUTIONS)}")


def quantize_block(x: Any, block_format: str | BlockFormat, scale_rule: str | None = "floor", axis: int = -1,
                   policy: CastPolicy | None = None, *, rng: np.random.Generator | None = None,
                   convention: str = DEFAULT_CONVENTION) -> BlockTensor:
    """`x` in the block format (a name of BLOCK_FORMATS or a record), blocks along `axis`, under the
    block convention: `quantize_mx` for MX (with `scale_rule`), `quantize_nvfp4` for NVFP4 (no
    scale rule)."""
    bf = get_block_format(block_format)
    if bf.family == "NVFP4":
        return quantize_nvfp4(x, axis=axis, policy=policy, rng=rng, convention=convention)
    return quantize_mx(x, bf.element.name, bf.block_size, scale_rule, axis=axis, policy=policy, rng=rng,
                       convention=convention)


# ------------------------------------------------------------------------------------------------
# results
# ------------------------------------------------------------------------------------------------


@dataclass
class BlockSchemeEntry:
    """One scheme of the comparison."""

    scheme: str  # e.g. "MXFP8_E4M3 floor", "NVFP4 16x16"
    block_format: str  # a key of BLOCK_FORMATS
    elem_format: str
    scale_rule: str  # an MX rule, or "e4m3_scale" for NVFP4
    bits_per_element: float
    rms_rel_error: float
    sqnr_db: float
    max_abs_error: float
    flushed_fraction: float
    block_rms_rel_error: np.ndarray  # per 32-element block along rows, row-major

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme, "block_format": self.block_format, "elem_format": self.elem_format,
            "scale_rule": self.scale_rule, "bits_per_element": self.bits_per_element,
            "rms_rel_error": self.rms_rel_error, "sqnr_db": self.sqnr_db, "max_abs_error": self.max_abs_error,
            "flushed_fraction": self.flushed_fraction, "block_rms_rel_error": self.block_rms_rel_error,
        }


@dataclass
class ShownBlock:
    """The first SHOWN elements of one row, as the selected recipe stores them."""

    row: int
    input: np.ndarray  # the values entering the cast (after the transform, when on), float64
    decoded: np.ndarray  # what the recipe decodes them as, in the same basis
    per_tensor: np.ndarray  # what per-tensor scaling decodes them as
    codes: np.ndarray  # element codes
    decode_scales: np.ndarray  # the full decode scale of each element (NaN under a NaN scale)
    scale_codes: list[int]  # the block scale codes of the shown span (E8M0 for MX, E4M3FN for NVFP4)
    block_scales: list[float]  # those scales decoded (NVFP4: before the tensor scale)
    scale_exponents: list[int]  # MX: the shared exponents X (128: the NaN scale); NVFP4: empty
    tensor_scale: float | None  # NVFP4's FP32 tensor scale; None for MX
    reach: float  # 1.05 × the largest magnitude among the first block's inputs and decoded values
    lattice: np.ndarray  # every value the first shown block can decode to within ±reach

    @property
    def amax(self) -> float:
        return float(np.max(np.abs(self.input)))

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "input": self.input, "decoded": self.decoded, "per_tensor": self.per_tensor,
                "codes": self.codes.astype(np.int64), "decode_scales": self.decode_scales,
                "scale_codes": self.scale_codes, "block_scales": self.block_scales,
                "scale_exponents": self.scale_exponents, "tensor_scale": self.tensor_scale, "reach": self.reach,
                "lattice": self.lattice}


@dataclass
class TransposedView:
    """Tensor-wide RMS relative errors (against the tensor entering the cast) of the row-blocked view
    and of the column-blocked view made from the source or from the row-blocked decoded data."""

    rows: float
    columns_from_source: float
    columns_requantized: float
    codes_differ: float  # fraction of column-view codes that differ between the two routes

    @property
    def extra(self) -> float:
        """What the second rounding adds: requantized − from source."""
        return self.columns_requantized - self.columns_from_source

    @property
    def requantized_ratio(self) -> float:
        """requantized / from source (NaN when the single rounding is exact)."""
        return self.columns_requantized / self.columns_from_source if self.columns_from_source > 0 else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "columns_from_source": self.columns_from_source,
                "columns_requantized": self.columns_requantized, "extra": self.extra,
                "codes_differ": self.codes_differ}


@dataclass(frozen=True)
class RecipeView:
    """A recipe under the name the `recipe` knob takes."""

    name: str  # e.g. "MXFP8_E4M3"
    recipe: Recipe

    @property
    def element(self) -> formats.Format:
        return self.recipe.fmt

    @property
    def block(self) -> tuple[int, int]:
        return self.recipe.block

    @property
    def scale(self) -> ScaleFormat:
        return self.recipe.scale_format


@dataclass
class SelectedRecipe:
    """The recipe in detail, against per-tensor scaling in the same element format."""

    name: str  # the recipe's name as the `recipe` knob takes it (e.g. "MXFP8_E4M3", "FP8_1X128_POW2")
    recipe: Recipe  # the record, under the simulation's convention (and, for MX, its scale rule)
    scale_rule: str  # MX: "floor" …; otherwise the scale's kind ("e4m3_scale", "fp32_scale", …)
    quantized: QuantResult  # of the tensor entering the cast (not written to JSON)
    error: ErrorReport  # against the original tensor, per 32-element block along rows
    error_per_tensor: ErrorReport
    shown: ShownBlock
    shown_block: int  # index of the first shown 32-element block (row-major)
    transposed: TransposedView | None

    @property
    def bits_per_element(self) -> float:
        return self.quantized.bits_per_element

    @property
    def block_format(self) -> "RecipeView":
        """The recipe as the widget names it (`.name`), with its element, block and scale."""
        return RecipeView(self.name, self.recipe)

    @property
    def error_ratio(self) -> float:
        """Per-tensor error / block error: how many times more accurate the blocks are (inf when
        the blocks are exact and per-tensor scaling is not; NaN when both are exact)."""
        e, ept = self.error.rms_rel_error, self.error_per_tensor.rms_rel_error
        if e == 0:
            return float("nan") if ept == 0 else float("inf")
        return ept / e

    def to_dict(self) -> dict[str, Any]:
        return {
            "block_format": {**self.recipe.to_dict(), "name": self.name, "recipe": self.recipe.name},
            "scale_rule": self.scale_rule,
            "bits_per_element": self.bits_per_element, "error_ratio": self.error_ratio,
            "error": self.error.to_dict(),
            "error_per_tensor": self.error_per_tensor.to_dict(), "shown_block": self.shown_block,
            "shown": self.shown.to_dict(),
            "transposed": None if self.transposed is None else self.transposed.to_dict(),
        }


# ------------------------------------------------------------------------------------------------
# the simulation: one config, every face
# ------------------------------------------------------------------------------------------------


@config_record
class BlocksConfig:
    """The block-formats simulation's parameters (see the module docstring)."""

    recipe: str = knob("MXFP8_E4M3", "block recipe shown in detail (the comparison covers the MX and NVFP4 "
                       "formats)", choices=tuple(BLOCK_RECIPES))
    scale_rule: str = knob("floor", "how an MX block's shared exponent follows from its amax (MX recipes only)",
                           choices=tuple(r.value for r in ScaleRule))
    hadamard: bool = knob(False, "random Hadamard transform on blocks of 16 along rows before every cast")
    distribution: str = knob("student_t", "distribution of the tensor (Student-t, 3 dof: heavy tails)",
                             choices=DISTRIBUTIONS)
    outlier: float = knob(0.0, f"outlier placed at column {OUTLIER_COL} of `row` (0: none)", bounds=(-1e6, 1e6),
                          widget="input")
    row: int = knob(0, "row whose first 32 elements are shown (and hold the outlier)", bounds=(0, 4095),
                    widget="input")
    seed: int = knob(0, "seed of the tensor and of the Hadamard signs", bounds=(0, 2**31 - 1), widget="input")
    transposed_view: bool = knob(False, "also compare the column-blocked view quantized from the source with "
                                        "the one re-quantized from the row-blocked decoded data")
    rows: int = knob(32, "rows of the tensor (a multiple of 16; of 32 with the transposed view)",
                     bounds=(16, 4096), widget="input")
    cols: int = knob(128, "columns of the tensor (a multiple of 32)", bounds=(32, 4096), widget="input")
    convention: str = knob(DEFAULT_CONVENTION, "whose block arithmetic every cast follows: the OCP reading, "
                           "torchao 0.18, Transformer Engine 2.20, DeepSeek (DeepGEMM) or microxcaling",
                           choices=tuple(CONVENTIONS))

    def __post_init__(self) -> None:
        conv = get_block_convention(self.convention)
        rec = BLOCK_RECIPES[self.recipe]
        why = rec.unsupported(conv.name)
        if why is not None:
            raise ConfigError("recipe", why)
        if rec.scheme is Scheme.MX:
            try:
                conv.mx_rule(self.scale_rule)
            except ValueError as exc:
                raise ConfigError("scale_rule", str(exc)) from None
        step = 32 if self.transposed_view else 16
        if self.rows % step:
            why = " (column blocks of 32 for the transposed view)" if self.transposed_view else " (16×16 tiles)"
            raise ConfigError("rows", f"must be a multiple of {step}{why}, got {self.rows}")
        if self.cols % 32:
            raise ConfigError("cols", f"must be a multiple of 32 (blocks of 32 along rows), got {self.cols}")
        if self.row >= self.rows:
            raise ConfigError("row", f"must be < rows ({self.rows}), got {self.row}")

    def selected_recipe(self) -> Recipe:
        """The recipe in detail, under the convention (and, for MX, the scale rule)."""
        rec = BLOCK_RECIPES[self.recipe].with_convention(self.convention)
        if rec.scheme is Scheme.MX:
            rec = rec.with_scale_rule(self.scale_rule)
        return rec

    def cost(self) -> Cost:
        n = self.rows * self.cols
        conv = get_block_convention(self.convention)
        casts = len(_comparison(conv)) + 2 + (3 if self.transposed_view else 0)
        return Cost(bytes=n * 8 * 12, seconds=casts * n * 5e-8, note=f"{casts} block casts of {n} elements")


@dataclass
class BlocksResult:
    """Every scheme on one tensor, and the selected recipe in detail."""

    config: BlocksConfig
    x: np.ndarray  # the tensor, float32 (not written to JSON)
    x_in: np.ndarray  # the tensor entering the casts: x, or x after the transform (not written)
    block_amax: np.ndarray  # amax of each 32-block of x along rows
    entries: list[BlockSchemeEntry] = field(default_factory=list)
    scale_rule_example: list[dict[str, Any]] = field(default_factory=list)
    selected: SelectedRecipe | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.x.shape)

    def to_dict(self) -> dict[str, Any]:
        c = self.config
        return {
            "study": "blocks", "config": config_values(c), "shape": list(self.shape), "distribution": c.distribution,
            "seed": c.seed, "block_amax": self.block_amax, "entries": [e.to_dict() for e in self.entries],
            "scale_rule_example": self.scale_rule_example,
            "selected": None if self.selected is None else self.selected.to_dict(),
        }


def _scale_kind(rec: Recipe) -> str:
    """The `scale_rule` column of a non-MX recipe: its scale's kind ("e4m3_scale", "fp32_scale" …)."""
    if rec.scheme is Scheme.MXINT:
        return "floor"
    return f"{rec.scale_format.value.lower()}_scale"


def _comparison(conv: BlockConvention) -> list[tuple[str, str, str, Recipe]]:
    """(scheme label, block format, scale rule, recipe) of every cast of the comparison under `conv`:
    the MX formats × the scale rules it has and NVFP4 1×16 / 16×16 where it has MX and NVFP4, else each
    block recipe it has."""
    out: list[tuple[str, str, str, Recipe]] = []
    if conv.mx_elements and conv.nvfp4:
        for bf in BLOCK_FORMATS.values():
            if bf.family != "MX" or bf.element.name not in conv.mx_elements:
                continue
            for rule in (r.value for r in ScaleRule if r.value in conv.rules):
                rec = RECIPES[bf.name.lower()].with_convention(conv.name).with_scale_rule(rule)
                out.append((f"{bf.name} {rule}", bf.name, rule, rec))
        for name, label in (("nvfp4", "NVFP4 1x16"), ("nvfp4_16x16", "NVFP4 16x16")):
            rec = RECIPES[name]
            if rec.unsupported(conv.name) is None:
                out.append((label, "NVFP4", "e4m3_scale", rec.with_convention(conv.name)))
        return out
    for name, rec in BLOCK_RECIPES.items():
        if rec.unsupported(conv.name) is None:
            out.append((name, name, _scale_kind(rec), rec.with_convention(conv.name)))
    return out


def _scheme_entry(label: str, block_format: str, rule: str, q: QuantResult, x: np.ndarray,
                  back: Any) -> BlockSchemeEntry:
    rep = error_metrics(x, back(q.dequantize()), groups=Granularity("block", (COMPARE_BLOCK,), -1))
    return BlockSchemeEntry(label, block_format, q.recipe.element, rule, q.bits_per_element, rep.rms_rel_error,
                            rep.sqnr_db, rep.max_abs_error, rep.flushed_fraction, rep.group_rms_rel_error.reshape(-1))


def _shown(q: QuantResult, x_in: np.ndarray, decoded_in: np.ndarray, per_tensor_in: np.ndarray,
           row: int) -> ShownBlock:
    """The first SHOWN elements of `row` as the recipe stores them."""
    rec = q.recipe
    span = slice(0, SHOWN)
    br, bc = rec.block
    n_blocks = -(-SHOWN // bc)
    grid_row = row // br if br > 1 else row
    assert q.scales is not None
    block_scales = [float(v) for v in np.asarray(q.scales, np.float64)[grid_row, :n_blocks]]
    codes_s = [] if q.scale_codes is None else [int(c) for c in q.scale_codes[grid_row, :n_blocks]]
    exponents = ([int(c) - 127 for c in codes_s] if rec.scale_format is ScaleFormat.E8M0 else [])
    tensor_scale: float | None = None
    if isinstance(q.tensor_scale, np.ndarray):
        tensor_scale = float(q.tensor_scale.reshape(-1)[row])
    elif q.tensor_scale is not None:
        tensor_scale = float(q.tensor_scale)
    scales = q.element_scales()[row, span]
    inp = x_in[row, span].astype(np.float64)
    dec = decoded_in[row, span]
    grid = formats.code_table(rec.fmt).value.astype(np.float64)
    values = np.unique(grid[np.isfinite(grid)]) * scales[0]
    reach = 1.05 * max(float(np.max(np.abs(inp))), float(np.nanmax(np.abs(dec))) if np.isfinite(dec).any() else 0.0,
                       1e-300)
    lattice = values[np.abs(values) <= reach] if np.isfinite(scales[0]) else np.empty(0)
    return ShownBlock(row, inp, dec, per_tensor_in[row, span], np.asarray(q.codes[row, span]), scales, codes_s,
                      block_scales, exponents, tensor_scale, reach, lattice)


def _transposed(x_in: np.ndarray, rows_q: QuantResult) -> TransposedView:
    """The column-blocked view of x_in (blocks along columns: the recipe's blocks of xᵀ) from the
    source and re-quantized from the row-blocked decoded data."""
    rec = rows_q.recipe
    rows_dec = np.asarray(rows_q.dequantize())
    cols_src = quantize(np.ascontiguousarray(x_in.T), rec)
    cols_two = quantize(np.ascontiguousarray(rows_dec.T), rec)
    e_rows = error_metrics(x_in, rows_dec).rms_rel_error
    e_src = error_metrics(x_in.T, cols_src.dequantize()).rms_rel_error
    e_two = error_metrics(x_in.T, cols_two.dequantize()).rms_rel_error
    return TransposedView(e_rows, e_src, e_two, float(np.mean(cols_src.codes != cols_two.codes)))


def simulate_blocks(config: BlocksConfig | None = None, *, progress: ProgressFn | None = None,
                    **knobs: Any) -> BlocksResult:
    """Run the comparison and the selected recipe for a BlocksConfig (or one made of `knobs`)."""
    cfg = config_or_knobs(BlocksConfig, config, knobs)
    x = sample_tensor(cfg.distribution, (cfg.rows, cfg.cols), cfg.seed)
    if cfg.outlier != 0:
        x[cfg.row, OUTLIER_COL] = np.float32(cfg.outlier)
    conv = get_block_convention(cfg.convention)
    if cfg.hadamard:
        h = rht_matrix(conv.rht, cfg.seed)
        x_in = apply_blockwise(x, h, axis=1).astype(np.float32)

        def back(z: np.ndarray) -> np.ndarray:
            return inverse_rht(z, h, axis=1)  # undo the transform: (x H) Hᵀ = x
    else:
        x_in = x

        def back(z: np.ndarray) -> np.ndarray:
            return np.asarray(z, dtype=np.float64)

    g32 = Granularity("block", (COMPARE_BLOCK,), -1)
    result = BlocksResult(cfg, x, x_in, np.abs(g32.to_groups(x)).max(axis=1).astype(np.float64),
                          scale_rule_example=mx_scale_rule_table())
    cases = _comparison(conv)
    total = len(cases) + 1
    for done, (label, block_format, rule, rec) in enumerate(cases, start=1):
        result.entries.append(_scheme_entry(label, block_format, rule, quantize(x_in, rec), x, back))
        if progress is not None:
            progress(done, total)

    rec = cfg.selected_recipe()
    rule = scale_rule_of(cfg.scale_rule).value if rec.scheme is Scheme.MX else _scale_kind(rec)
    q = quantize(x_in, rec)
    per_tensor = quantize_scaled(x_in, rec.element, "tensor")
    decoded_in = np.asarray(q.dequantize(), dtype=np.float64)
    per_tensor_in = per_tensor.dequantize()
    shown_block = cfg.row * (cfg.cols // COMPARE_BLOCK)
    result.selected = SelectedRecipe(
        cfg.recipe, rec, rule, q,
        error_metrics(x, back(decoded_in), groups=g32), error_metrics(x, back(per_tensor_in), groups=g32),
        _shown(q, x_in, decoded_in, per_tensor_in, cfg.row), shown_block,
        _transposed(x_in, q) if cfg.transposed_view else None,
    )
    if progress is not None:
        progress(total, total)
    return result


def summary_lines(result: BlocksResult) -> list[str]:
    if not isinstance(result, BlocksResult):
        raise TypeError(f"result must be a BlocksResult, got {type(result).__name__}")
    lines = [f"{e.scheme:>20}: {e.bits_per_element:.4g} bits/element, rms rel error {e.rms_rel_error:.4g}"
             for e in result.entries]
    s = result.selected
    if s is not None:
        lines.append(f"{s.name} ({s.scale_rule}, {result.config.convention} convention) in detail: "
                     f"rms rel error {s.error.rms_rel_error:.4g}, "
                     f"per-tensor scaling {s.error_per_tensor.rms_rel_error:.4g}")
        t = s.transposed
        if t is not None:
            lines.append(f"transposed view: rows {t.rows:.4g}, columns from the source {t.columns_from_source:.4g}, "
                         f"re-quantized {t.columns_requantized:.4g} (extra {t.extra:+.3g}; "
                         f"{t.codes_differ:.1%} of the codes differ)")
    return lines


SIMULATION: Simulation[BlocksConfig, BlocksResult] = Simulation(
    name="blocks",
    help="MXFP8/MXFP6/MXFP4 and NVFP4: error against bits per element, one recipe in detail",
    config=BlocksConfig,
    run=lambda cfg, progress: simulate_blocks(cfg, progress=progress),
    summary=summary_lines,
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
