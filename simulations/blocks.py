"""The block-formats simulation: every block format of `simulations.block_formats` on one tensor, and
one recipe in detail.

The tensor: `rows × cols` float32 values from `numpy.random.default_rng(seed)` (standard normal,
Student-t with 3 degrees of freedom, or a signed log-normal with σ = 2), optionally with one outlier
at column OUTLIER_COL of row `row`. With `hadamard` on, every run of 16 elements along a row is first
multiplied by the random Hadamard matrix of `simulations.hadamard` (signs from `seed`), and each
decoded tensor is transformed back, so errors are always measured against the original tensor.

- The comparison: MX (each element format × each scale rule, blocks of 32 along rows) and NVFP4
  (1×16 blocks and 16×16 tiles); per scheme the bits per element and the RMS relative error
  ‖x̂ − x‖₂ / ‖x‖₂ overall and per 32-element block along rows.
- The recipe in detail (`recipe`, and `scale_rule` for MX): against per-tensor scaling in the same
  element format (`simulations.scaling.quantize_scaled`, FP32 `encode_scale = F / amax`), the
  per-block errors, and the first 32 elements of `row` (one MX block, two NVFP4 blocks) with their
  codes, scales and the grid of values the first of them can decode to. With `transposed_view` on,
  also the two ways of making the column-blocked view (blocks along columns, as the weight-gradient
  product needs) of the tensor entering the cast: quantized from the source (one rounding) and
  re-quantized from the row-blocked decoded data (two roundings), with the same recipe; those errors
  are measured against the tensor entering the cast (with the transform on, the transformed one; the
  tensor-wide error of the row view is the same in either basis, the blockwise transform being
  orthogonal).

`BlocksConfig` declares every parameter once; `lowprec simulate blocks`, `python -m
lowprec.simulations.blocks`, the BlockFormats widget and its lesson directive are generated from it.
`convention` names whose arithmetic every cast follows (`simulations.block_conventions`: the OCP
reading, torchao 0.18 or Transformer Engine 2.20); the comparison covers the element formats, scale
rules and NVFP4 layouts that implementation has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence, Union

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import CastPolicy

from ._cli import ProgressFn, Simulation, config_or_knobs, config_values, run_module
from .block_conventions import BLOCK_CONVENTIONS, DEFAULT_CONVENTION, get_block_convention
from .block_formats import BLOCK_FORMATS, BlockFormat, ScaleRule, get_block_format, scale_rule_of
from .granularity import Granularity
from .hadamard import RHT_BLOCK, apply_blockwise, random_hadamard
from .metrics import ErrorReport, error_metrics
from .mx import MXTensor, mx_scale_rule_table, quantize_mx
from .nvfp4 import NVFP4Tensor, quantize_nvfp4
from .scaling import quantize_scaled

__all__ = [
    "BlockSchemeEntry",
    "BlocksConfig",
    "BlocksResult",
    "DISTRIBUTIONS",
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


def sample_tensor(distribution: str, shape: Sequence[int], seed: int) -> np.ndarray:
    """float32 samples: 'normal' N(0, 1), 'student_t' (3 dof), 'lognormal' ±exp(N(0, 2²))."""
    shp = tuple(int(s) for s in shape)
    rng = np.random.default_rng(seed)
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


@dataclass
class SelectedRecipe:
    """The recipe in detail, against per-tensor scaling in the same element format."""

    block_format: BlockFormat
    scale_rule: str  # "floor" …, or "e4m3_scale" for NVFP4
    quantized: BlockTensor  # of the tensor entering the cast (not written to JSON)
    error: ErrorReport  # against the original tensor, per 32-element block along rows
    error_per_tensor: ErrorReport
    shown: ShownBlock
    shown_block: int  # index of the first shown 32-element block (row-major)
    transposed: TransposedView | None

    @property
    def bits_per_element(self) -> float:
        return self.quantized.bits_per_element

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
            "block_format": self.block_format.to_dict(), "scale_rule": self.scale_rule,
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

    recipe: str = knob("MXFP8_E4M3", "block format shown in detail (the comparison covers every one)",
                       choices=tuple(BLOCK_FORMATS))
    scale_rule: str = knob("floor", "how an MX block's shared exponent follows from its amax (not NVFP4)",
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
                           "torchao 0.18 or Transformer Engine 2.20", choices=tuple(BLOCK_CONVENTIONS))

    def __post_init__(self) -> None:
        conv = get_block_convention(self.convention)
        bf = get_block_format(self.recipe)
        if bf.family == "MX":
            try:
                conv.check_mx(bf.element, bf.block_size)
            except ValueError as exc:
                raise ConfigError("recipe", str(exc)) from None
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

    def cost(self) -> Cost:
        n = self.rows * self.cols
        conv = get_block_convention(self.convention)
        casts = (len(conv.mx_elements) * len(conv.rules) + (2 if conv.nvfp4_tiles_2d else 1) + 2
                 + (3 if self.transposed_view else 0))
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


def _scheme_entry(label: str, bf: BlockFormat, rule: str, q: BlockTensor, x: np.ndarray,
                  back: Any) -> BlockSchemeEntry:
    rep = error_metrics(x, back(q.dequantize()), groups=Granularity("block", (COMPARE_BLOCK,), -1))
    return BlockSchemeEntry(label, bf.name, bf.element.name, rule, q.bits_per_element, rep.rms_rel_error,
                            rep.sqnr_db, rep.max_abs_error, rep.flushed_fraction, rep.group_rms_rel_error.reshape(-1))


def _shown(q: BlockTensor, x_in: np.ndarray, decoded_in: np.ndarray, per_tensor_in: np.ndarray,
           bf: BlockFormat, row: int) -> ShownBlock:
    span = slice(0, SHOWN)
    if isinstance(q, NVFP4Tensor):
        n_blocks = SHOWN // bf.block_size
        codes_s = [int(c) for c in q.scale_codes[row, :n_blocks]]
        block_scales = [float(v) for v in q.block_scales[row, :n_blocks]]
        per_block = np.asarray(block_scales) * q.tensor_scale
        tensor_scale: float | None = q.tensor_scale
        exponents: list[int] = []
    else:
        n_blocks = SHOWN // bf.block_size
        exps = q.scale_exponents[row, :n_blocks]
        codes_s = [int(c) for c in q.scale_codes[row, :n_blocks]]
        per_block = np.array([2.0 ** int(e) if e <= 127 else np.nan for e in exps])
        block_scales = [float(v) for v in per_block]
        tensor_scale = None
        exponents = [int(e) for e in exps]
    scales = np.repeat(per_block, bf.block_size)[:SHOWN]
    inp = x_in[row, span].astype(np.float64)
    dec = decoded_in[row, span]
    grid = formats.code_table(bf.element).value.astype(np.float64)
    values = np.unique(grid[np.isfinite(grid)]) * scales[0]
    reach = 1.05 * max(float(np.max(np.abs(inp))), float(np.nanmax(np.abs(dec))) if np.isfinite(dec).any() else 0.0,
                       1e-300)
    lattice = values[np.abs(values) <= reach] if np.isfinite(scales[0]) else np.empty(0)
    return ShownBlock(row, inp, dec, per_tensor_in[row, span], np.asarray(q.codes[row, span]), scales, codes_s,
                      block_scales, exponents, tensor_scale, reach, lattice)


def _transposed(x_in: np.ndarray, rows_q: BlockTensor, bf: BlockFormat, rule: str, convention: str) -> TransposedView:
    cols_src = quantize_block(x_in, bf, rule, axis=0, convention=convention)
    cols_two = quantize_block(rows_q.dequantize(), bf, rule, axis=0, convention=convention)
    e_rows = error_metrics(x_in, rows_q.dequantize()).rms_rel_error
    e_src = error_metrics(x_in, cols_src.dequantize()).rms_rel_error
    e_two = error_metrics(x_in, cols_two.dequantize()).rms_rel_error
    return TransposedView(e_rows, e_src, e_two, float(np.mean(cols_src.codes != cols_two.codes)))


def simulate_blocks(config: BlocksConfig | None = None, *, progress: ProgressFn | None = None,
                    **knobs: Any) -> BlocksResult:
    """Run the comparison and the selected recipe for a BlocksConfig (or one made of `knobs`)."""
    cfg = config_or_knobs(BlocksConfig, config, knobs)
    x = sample_tensor(cfg.distribution, (cfg.rows, cfg.cols), cfg.seed)
    if cfg.outlier != 0:
        x[cfg.row, OUTLIER_COL] = np.float32(cfg.outlier)
    if cfg.hadamard:
        h = random_hadamard(RHT_BLOCK, cfg.seed)
        x_in = apply_blockwise(x, h, axis=1).astype(np.float32)

        def back(z: np.ndarray) -> np.ndarray:
            return apply_blockwise(z, h.T, axis=1)  # undo the transform: (x H) Hᵀ = x
    else:
        x_in = x

        def back(z: np.ndarray) -> np.ndarray:
            return np.asarray(z, dtype=np.float64)

    g32 = Granularity("block", (COMPARE_BLOCK,), -1)
    result = BlocksResult(cfg, x, x_in, np.abs(g32.to_groups(x)).max(axis=1).astype(np.float64),
                          scale_rule_example=mx_scale_rule_table())
    conv = get_block_convention(cfg.convention)
    mx = [bf for bf in BLOCK_FORMATS.values() if bf.family == "MX" and bf.element.name in conv.mx_elements]
    rules = [r.value for r in ScaleRule if r.value in conv.rules]
    layouts = (False, True) if conv.nvfp4_tiles_2d else (False,)
    total = len(mx) * len(rules) + len(layouts) + 1
    done = 0
    for bf in mx:
        for mx_rule in rules:
            q_mx = quantize_block(x_in, bf, mx_rule, convention=conv.name)
            result.entries.append(_scheme_entry(f"{bf.name} {mx_rule}", bf, mx_rule, q_mx, x, back))
            done += 1
            if progress is not None:
                progress(done, total)
    nv = BLOCK_FORMATS["NVFP4"]
    for two_d in layouts:
        q4 = quantize_nvfp4(x_in, block_2d=two_d, convention=conv.name)
        result.entries.append(_scheme_entry("NVFP4 16x16" if two_d else "NVFP4 1x16", nv, "e4m3_scale", q4, x, back))
        done += 1
        if progress is not None:
            progress(done, total)

    bf = get_block_format(cfg.recipe)
    rule = scale_rule_of(cfg.scale_rule).value if bf.family == "MX" else "e4m3_scale"
    q = quantize_block(x_in, bf, cfg.scale_rule, convention=conv.name)
    per_tensor = quantize_scaled(x_in, bf.element, "tensor")
    decoded_in = np.asarray(q.dequantize(), dtype=np.float64)
    per_tensor_in = per_tensor.dequantize()
    shown_block = cfg.row * (cfg.cols // COMPARE_BLOCK)
    result.selected = SelectedRecipe(
        bf, rule, q,
        error_metrics(x, back(decoded_in), groups=g32), error_metrics(x, back(per_tensor_in), groups=g32),
        _shown(q, x_in, decoded_in, per_tensor_in, bf, cfg.row), shown_block,
        _transposed(x_in, q, bf, cfg.scale_rule, conv.name) if cfg.transposed_view else None,
    )
    if progress is not None:
        progress(total, total)
    return result


def summary_lines(result: BlocksResult) -> list[str]:
    lines = [f"{e.scheme:>20}: {e.bits_per_element:.4g} bits/element, rms rel error {e.rms_rel_error:.4g}"
             for e in result.entries]
    s = result.selected
    if s is not None:
        lines.append(f"{s.block_format.name} ({s.scale_rule}, {result.config.convention} convention) in detail: "
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
