"""The grouping simulation: what the choice of scale groups does to a tensor, as four studies.

- `outlier`: a standard-normal float32 tensor (`numpy.random.default_rng(seed)`) with one outlier,
  cast under each granularity of a list (`simulations.scaling.quantize_scaled`: FP32 `encode_scale =
  F / amax_group`, nearest-even, saturating). Per granularity: the overall error, the error of the
  ordinary elements that share the outlier's scale (its neighbours) against the median of the other
  groups, the error of all ordinary elements, bits per element (element bits plus the FP32 scales
  amortised), and per element the decode scale and relative error.
- `scale_choice`: x = σ · N(0, 1) for σ from 1e-12 to 1e8, cast per tensor with a fixed encode scale
  (1.0) and with the amax scale, in E4M3FN and E5M2.
- `transpose`: Student-t (3 dof) data in blocks of `block` along rows; the column-blocked view made
  from the source (one rounding) vs from the row-blocked rounded data (two roundings).
- `hadamard`: the random Hadamard transform study of `simulations.studies.hadamard`.

`GroupingConfig` declares every parameter once; `lowprec simulate grouping`, `python -m
lowprec.simulations.studies.grouping`, the ScaleGrouping widget and its lesson directive are generated from it.
Each study reads the parameters it names in its help (`scale_choice` reads only `seed`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Sequence, Union

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import Format

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, config_values, run_module
from ..scaling.granularity import Granularity, parse_granularity
from .hadamard import HadamardStudy, hadamard_study
from .hadamard import summary_lines as hadamard_summary_lines
from ..scaling.metrics import ErrorReport, element_rel_error, error_metrics
from ..scaling import ScaledTensor, error_report, quantize_scaled
from lowprec.numtext import general

__all__ = [
    "DEFAULT_GRANULARITIES",
    "GroupingConfig",
    "GroupingResult",
    "OutlierEntry",
    "OutlierStudy",
    "SCALED_FORMATS",
    "STUDIES",
    "SIMULATION",
    "ScaleChoiceStudy",
    "TransposeStudy",
    "outlier_study",
    "scale_choice_study",
    "simulate_grouping",
    "transpose_study",
]

STUDIES = ("outlier", "scale_choice", "transpose", "hadamard")
DEFAULT_GRANULARITIES = ("tensor", "row", "column", "block32", "block16x16")
#: element formats a scaled cast of signed data can use (up to 16 bits: the clipped fraction needs
#: the rounding bin of the largest value, from the format's code table)
SCALED_FORMATS = tuple(f.name for f in formats.CORE_FORMATS if f.signed and f.bits <= 16)
#: granularities one outlier study compares at most
MAX_GRANULARITIES = 8
#: the most elements the scale-choice study casts in one call (formats × magnitudes × n, each cast
#: twice): a few seconds; the simulation's own run is 2 × 41 × 4096
MAX_SCALE_CHOICE_ELEMENTS = 1 << 24


def _progress(progress: ProgressFn | None, done: int, total: int) -> None:
    if progress is not None:
        progress(done, total)


# ------------------------------------------------------------------------------------------------
# outlier
# ------------------------------------------------------------------------------------------------


def _int_pair(value: Any, name: str, minimum: int, maximum: int) -> tuple[int, int]:
    """`value` as two ints in [minimum, maximum]; TypeError/ValueError naming `name` otherwise."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be two integers (a tuple), got {value!r}")
    items = list(value)
    if len(items) != 2 or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        raise TypeError(f"{name} must be two integers (a tuple), got {value!r}")
    pair = (int(items[0]), int(items[1]))
    if not all(minimum <= v <= maximum for v in pair):
        raise ValueError(f"{name}={pair} is out of range; allowed: each in [{minimum}, {maximum}]")
    return pair


def _real(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int beyond float64
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None


def _int(value: Any, name: str, minimum: int, maximum: int) -> int:
    """`value` as an int in [minimum, maximum]; TypeError/ValueError naming `name` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name}={value} is out of range; allowed: {minimum} … {maximum}")
    return int(value)


def _seed(value: Any) -> int:
    """A seed for `numpy.random.default_rng`: an integer 0 … 2^63 − 1 (TypeError/ValueError naming `seed`)."""
    return _int(value, "seed", 0, 2**63 - 1)


def _format_names(value: Any, name: str) -> list[str]:
    """A non-empty sequence of format names (or Format records) as canonical names."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (Sequence, np.ndarray)):
        raise TypeError(f"{name} must be a sequence of format names such as ('E4M3FN', 'E5M2'), got {value!r}")
    items = list(value)
    if not items or not all(isinstance(v, (str, formats.FloatFormat, formats.IntFormat)) for v in items):
        raise TypeError(f"{name} must be a non-empty sequence of format names such as ('E4M3FN', 'E5M2'), "
                        f"got {value!r}")
    return [_scaled_format(v, name).name for v in items]


def _scaled_format(fmt: Any, name: str) -> Format:
    """`fmt` as a Format that a scaled cast of signed data can use (SCALED_FORMATS)."""
    f = formats.get_format(fmt)
    if f.name not in SCALED_FORMATS:
        raise ValueError(f"{name}={f.name} cannot hold a scaled cast of signed data here; allowed: "
                         f"{', '.join(SCALED_FORMATS)}")
    return f


@dataclass
class OutlierEntry:
    """One granularity of the outlier study."""

    granularity: str
    bits_per_element: float
    report: ErrorReport  # every element, the outlier included
    outlier_group_rms_rel_error: float  # the ordinary elements that share the outlier's scale
    other_groups_rms_rel_error: float  # median over the other groups (NaN when there is one group)
    ordinary_rms_rel_error: float  # every element but the outlier
    groups_affected_fraction: float  # groups whose scale the outlier set
    scaled: ScaledTensor  # codes and scales (not written to JSON)
    dequantized: np.ndarray  # x̂, float64, the tensor's shape (not written to JSON)

    @property
    def n_groups(self) -> int:
        return self.scaled.n_groups

    @property
    def other_groups(self) -> int:
        """Groups that do not hold the outlier."""
        return self.n_groups - round(self.groups_affected_fraction * self.n_groups)

    def element_groups(self) -> np.ndarray:
        """The group index of every element (the tensor's shape)."""
        return self.scaled.granularity.element_groups(self.scaled.shape)

    def to_dict(self) -> dict[str, Any]:
        return {
            "granularity": self.granularity,
            "n_groups": self.n_groups,
            "bits_per_element": self.bits_per_element,
            "outlier_group_rms_rel_error": self.outlier_group_rms_rel_error,
            "other_groups_rms_rel_error": self.other_groups_rms_rel_error,
            "ordinary_rms_rel_error": self.ordinary_rms_rel_error,
            "groups_affected_fraction": self.groups_affected_fraction,
            "report": self.report.to_dict(),
        }


@dataclass
class OutlierStudy:
    """One large value in an otherwise Gaussian tensor, quantized under several granularities."""

    fmt: str
    shape: tuple[int, ...]
    outlier_index: tuple[int, ...]
    outlier_value: float
    seed: int
    baseline_rms_rel_error: float  # per-tensor scaling of the same tensor without the outlier
    per_tensor_rms_rel_error: float  # per-tensor scaling of the tensor with the outlier
    x: np.ndarray  # the tensor, float32 (not written to JSON)
    entries: list[OutlierEntry] = field(default_factory=list)

    study = "outlier"

    def element_rel_error(self, entry: OutlierEntry) -> np.ndarray:
        """|x̂ − x| / |x| of every element under one entry's granularity (0 exact, inf for x = 0)."""
        return element_rel_error(self.x, entry.dequantized)

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": "outlier",
            "format": self.fmt,
            "shape": list(self.shape),
            "outlier_index": list(self.outlier_index),
            "outlier_value": self.outlier_value,
            "seed": self.seed,
            "baseline_rms_rel_error": self.baseline_rms_rel_error,
            "per_tensor_rms_rel_error": self.per_tensor_rms_rel_error,
            "entries": [e.to_dict() for e in self.entries],
        }


def outlier_study(
    fmt: str | Format = "E4M3FN",
    shape: Sequence[int] = (32, 64),
    outlier_value: float = 100.0,
    outlier_index: Sequence[int] = (3, 5),
    granularities: Sequence[str] = DEFAULT_GRANULARITIES,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> OutlierStudy:
    """Standard-normal tensor with x[outlier_index] = outlier_value, quantized per granularity.

    For each granularity: overall error, the error of the ordinary elements that share the
    outlier's scale against the median of the other groups (which groups lose resolution and by how
    much), the error of all ordinary elements, and the fraction of groups the outlier sizes."""
    f = _scaled_format(fmt, "fmt")
    shp = _int_pair(shape, "shape", 1, 4096)
    outlier_value = _real(outlier_value, "outlier_value")
    if (isinstance(granularities, (str, bytes)) or not isinstance(granularities, Sequence)
            or not all(isinstance(g, str) for g in granularities)):
        raise TypeError(f"granularities must be a sequence of granularity names, got {granularities!r}")
    if not math.isfinite(outlier_value):
        raise ValueError(f"outlier_value must be finite, got {outlier_value!r}")
    seed = _seed(seed)
    x = np.random.default_rng(seed).standard_normal(shp).astype(np.float32)
    base = error_report(x, quantize_scaled(x, f, "tensor")).rms_rel_error
    idx = _int_pair(outlier_index, "outlier_index", 0, 4095)
    if not all(0 <= i < s for i, s in zip(idx, shp)):
        raise ValueError(f"outlier_index {tuple(outlier_index)!r} is outside shape {shp}")
    x[idx] = np.float32(outlier_value)
    per_tensor = error_report(x, quantize_scaled(x, f, "tensor")).rms_rel_error
    study = OutlierStudy(f.name, shp, idx, float(np.float32(outlier_value)), seed, base, per_tensor, x)
    marker = np.zeros(shp, bool)
    marker[idx] = True
    for i, spec in enumerate(granularities):
        g = parse_granularity(spec)
        st = quantize_scaled(x, f, g)
        x_hat = st.dequantize()
        rep = error_report(x, st)
        in_group = g.to_groups(marker).any(axis=1)
        xg, hg, mg = g.to_groups(x.astype(np.float64)), g.to_groups(x_hat), g.to_groups(marker)
        own = ~mg[in_group]
        rel = rep.group_rms_rel_error.reshape(-1)
        others = rel[~in_group]
        study.entries.append(OutlierEntry(
            g.label, st.bits_per_element, rep,
            error_metrics(xg[in_group][own], hg[in_group][own]).rms_rel_error,
            float(np.median(others)) if others.size else float("nan"),
            error_metrics(x[~marker], x_hat[~marker]).rms_rel_error,
            float(in_group.mean()), st, x_hat,
        ))
        _progress(progress, i + 1, len(granularities))
    return study


# ------------------------------------------------------------------------------------------------
# scale choice
# ------------------------------------------------------------------------------------------------


@dataclass
class ScaleChoiceStudy:
    """Error of a fixed encode scale against the amax scale as the tensor's magnitude varies."""

    formats: list[str]
    magnitudes: np.ndarray
    fixed_encode_scale: float
    n: int
    seed: int
    rms_rel_error_fixed: dict[str, np.ndarray]
    rms_rel_error_amax: dict[str, np.ndarray]
    clipped_fixed: dict[str, np.ndarray]
    flushed_fixed: dict[str, np.ndarray]

    study = "scale_choice"

    def usable_range(self, name: str, tolerance: float = 0.1) -> tuple[float, float] | None:
        """(smallest, largest) magnitude whose fixed-scale RMS relative error is below `tolerance`,
        or None when none is."""
        ok = self.rms_rel_error_fixed[name] < tolerance
        if not ok.any():
            return None
        return float(self.magnitudes[ok].min()), float(self.magnitudes[ok].max())

    def to_dict(self) -> dict[str, Any]:
        return {
            "study": "scale_choice",
            "formats": self.formats,
            "magnitudes": self.magnitudes,
            "fixed_encode_scale": self.fixed_encode_scale,
            "n": self.n,
            "seed": self.seed,
            "rms_rel_error_fixed": self.rms_rel_error_fixed,
            "rms_rel_error_amax": self.rms_rel_error_amax,
            "clipped_fixed": self.clipped_fixed,
            "flushed_fixed": self.flushed_fixed,
        }


def scale_choice_study(
    fmts: Sequence[str] = ("E4M3FN", "E5M2"),
    magnitudes: Sequence[float] | None = None,
    fixed_encode_scale: float = 1.0,
    n: int = 4096,
    seed: int = 0,
    progress: ProgressFn | None = None,
) -> ScaleChoiceStudy:
    """x = magnitude · N(0, 1) (the same draw for every magnitude), cast per tensor with the fixed
    encode scale and with the amax scale; RMS relative error, clipped and flushed fractions.

    Every argument is checked before any work (TypeError/ValueError naming it); formats × magnitudes
    × n is at most MAX_SCALE_CHOICE_ELEMENTS."""
    names = _format_names(fmts, "fmts")
    if magnitudes is None:
        mags = np.logspace(-12, 8, 41)
    else:
        raw = np.asarray(magnitudes) if not isinstance(magnitudes, (str, bytes)) else np.asarray([magnitudes])
        if raw.dtype.kind not in "fiu":
            raise TypeError(f"magnitudes must be a list of positive finite numbers, got dtype {raw.dtype}")
        mags = raw.astype(np.float64)
    if mags.ndim != 1 or mags.size == 0 or np.any(~np.isfinite(mags)) or np.any(mags <= 0):
        raise ValueError("magnitudes must be a non-empty list of positive finite numbers")
    scale = _real(fixed_encode_scale, "fixed_encode_scale")
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(f"fixed_encode_scale must be positive and finite, got {fixed_encode_scale!r}")
    n = _int(n, "n", 1, MAX_SCALE_CHOICE_ELEMENTS)
    seed = _seed(seed)
    work = len(names) * mags.size * n
    if work > MAX_SCALE_CHOICE_ELEMENTS:
        raise ValueError(f"{len(names)} formats × {mags.size} magnitudes × n={n} is {work} elements, over the "
                         f"{MAX_SCALE_CHOICE_ELEMENTS} one study casts; lower n or give fewer magnitudes")
    base = np.random.default_rng(seed).standard_normal(n)
    out_f: dict[str, np.ndarray] = {}
    out_a: dict[str, np.ndarray] = {}
    clip: dict[str, np.ndarray] = {}
    flush: dict[str, np.ndarray] = {}
    total = len(names) * mags.size
    done = 0
    for name in names:
        f = formats.get_format(name)
        fixed_amax = f.max / scale  # the amax for which F / amax = fixed scale
        rf, ra, cf, ff = (np.empty(mags.size) for _ in range(4))
        for i, mag in enumerate(mags):
            x = (base * mag).astype(np.float32)
            st = quantize_scaled(x, f, "tensor", amax=fixed_amax)
            rep = error_report(x, st)
            rf[i], cf[i], ff[i] = rep.rms_rel_error, rep.clipped_fraction, rep.flushed_fraction
            ra[i] = error_report(x, quantize_scaled(x, f, "tensor")).rms_rel_error
            done += 1
            _progress(progress, done, total)
        out_f[name], out_a[name], clip[name], flush[name] = rf, ra, cf, ff
    return ScaleChoiceStudy(names, mags, scale, n, seed, out_f, out_a, clip, flush)


# ------------------------------------------------------------------------------------------------
# transpose
# ------------------------------------------------------------------------------------------------


@dataclass
class TransposeStudy:
    """Column-grouped view: quantized from the source vs re-quantized from row-grouped rounded data."""

    fmt: str
    scale_format: str
    block: int
    shape: tuple[int, int]
    seed: int
    rms_rel_error_row: float  # row-grouped cast of the source
    rms_rel_error_col_from_source: float  # column-grouped cast of the source
    rms_rel_error_col_from_rows: float  # column-grouped cast of the dequantized row-grouped data
    extra_rms_rel_error: float  # from_rows − from_source
    codes_differ_fraction: float  # column codes that differ between the two routes

    study = "transpose"

    def to_dict(self) -> dict[str, Any]:
        return {"study": "transpose", **{k: (list(v) if isinstance(v, tuple) else v)
                                         for k, v in self.__dict__.items()}}


def transpose_study(
    fmt: str | Format = "E4M3FN",
    shape: Sequence[int] = (256, 256),
    block: int = 32,
    scale_format: str | Format | None = None,
    seed: int = 0,
) -> TransposeStudy:
    """Blocks of `block` along rows (axis 1) for the forward operand; the backward pass needs blocks
    along columns (axis 0). Quantizing the column view from the source is one rounding; making it
    from the already-rounded row-blocked data is two. Heavy-tailed data (Student t, 3 dof) so blocks
    differ in scale. With FP32 amax scales (the default) the second rounding adds error; with
    power-of-two scales (scale_format='E8M0') a rounded value mostly stays on the new grid, so the
    extra error nearly vanishes although some codes still differ."""
    f = _scaled_format(fmt, "fmt")
    shp = _int_pair(shape, "shape", 1, 4096)
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise TypeError(f"block must be an integer, got {block!r}")
    seed = _seed(seed)
    x = np.random.default_rng(seed).standard_t(3, size=shp).astype(np.float32)
    rows = quantize_scaled(x, f, Granularity("block", (block,), 1), scale_format=scale_format)
    cols_src = quantize_scaled(x, f, Granularity("block", (block,), 0), scale_format=scale_format)
    cols_rows = quantize_scaled(rows.dequantize(), f, Granularity("block", (block,), 0), scale_format=scale_format)
    e_row = error_report(x, rows).rms_rel_error
    e_src = error_report(x, cols_src).rms_rel_error
    e_two = error_report(x, cols_rows).rms_rel_error
    return TransposeStudy(
        f.name, "FP32" if scale_format is None else formats.get_format(scale_format).name, int(block),
        (shp[0], shp[1]), seed, e_row, e_src, e_two, e_two - e_src,
        float(np.mean(cols_src.codes != cols_rows.codes)),
    )


# ------------------------------------------------------------------------------------------------
# the simulation: one config, every face
# ------------------------------------------------------------------------------------------------


@config_record
class GroupingConfig:
    """The grouping simulation's parameters (see the module docstring for what each study reads)."""

    study: str = knob("outlier", "which study: one outlier under several groupings, a fixed vs the amax "
                      "scale over magnitudes, the transposed view re-quantized, the random Hadamard transform",
                      choices=STUDIES)
    format: str = knob("E4M3FN", "element format of the scaled cast (outlier, transpose)", choices=SCALED_FORMATS)
    granularities: str = knob(",".join(DEFAULT_GRANULARITIES),
                              "comma-separated groupings the outlier study compares: tensor, row, column, "
                              "blockK (along rows), blockK@0 (along columns), blockRxC (2-D tiles)")
    outlier: float = knob(100.0, "value of the outlier element (outlier; hadamard: one per row)",
                          bounds=(-1e6, 1e6), widget="input")
    outlier_row: int = knob(3, "row of the outlier (outlier)", bounds=(0, 4095), widget="input")
    outlier_col: int = knob(5, "column of the outlier (outlier)", bounds=(0, 4095), widget="input")
    rows: int = knob(32, "rows of the tensor (outlier, transpose, hadamard)", bounds=(1, 4096), widget="input")
    cols: int = knob(64, "columns of the tensor (outlier, transpose; hadamard: K, a multiple of 32)",
                     bounds=(1, 4096), widget="input")
    block: int = knob(32, "elements per block of the transpose study (divides rows and cols)",
                      bounds=(1, 4096), widget="input")
    seed: int = knob(0, "seed of the random tensor", bounds=(0, 2**31 - 1), widget="input")

    def __post_init__(self) -> None:
        if self.study == "outlier":
            if self.outlier_row >= self.rows:
                raise ConfigError("outlier_row", f"must be < rows ({self.rows}), got {self.outlier_row}")
            if self.outlier_col >= self.cols:
                raise ConfigError("outlier_col", f"must be < cols ({self.cols}), got {self.outlier_col}")
            self.granularity_list()  # raises ConfigError naming `granularities`
        elif self.study == "transpose":
            if self.rows % self.block or self.cols % self.block:
                raise ConfigError("block", f"block size {self.block} must divide rows ({self.rows}) and "
                                           f"cols ({self.cols})")
        elif self.study == "hadamard" and self.cols % 32:
            raise ConfigError("cols", f"the hadamard study needs a multiple of 32 (MXFP4 blocks), got {self.cols}")

    def granularity_list(self) -> list[Granularity]:
        """The parsed `granularities`, each checked against the tensor's shape."""
        specs = [s.strip() for s in self.granularities.split(",") if s.strip()]
        if not specs:
            raise ConfigError("granularities", "must name at least one granularity")
        if len(specs) > MAX_GRANULARITIES:
            raise ConfigError("granularities", f"at most {MAX_GRANULARITIES} granularities, got {len(specs)}")
        out: list[Granularity] = []
        for spec in specs:
            try:
                g = parse_granularity(spec)
                g.grid_shape((self.rows, self.cols))
            except ValueError as exc:
                raise ConfigError("granularities", str(exc)) from None
            if any(g.label == h.label for h in out):
                raise ConfigError("granularities", f"{g.label} is given twice")
            out.append(g)
        return out

    def cost(self) -> Cost:
        n = self.rows * self.cols
        if self.study == "scale_choice":
            return Cost(bytes=4096 * 8 * 8, seconds=0.5, note="2 formats × 41 magnitudes × 4096 elements")
        casts = {"outlier": len(self.granularity_list()) + 2, "transpose": 3, "hadamard": 4}[self.study]
        # 16 float64-sized arrays of the tensor at once: `lowprec bench budgets` measured 2.0 GiB of
        # peak extra memory for the largest request (4096 × 4096, outlier study) against 8 assumed
        return Cost(bytes=n * 8 * 16, seconds=casts * n * 1e-7, note=f"{casts} scaled casts of {n} elements")


Study = Union[OutlierStudy, ScaleChoiceStudy, TransposeStudy, HadamardStudy]


@dataclass
class GroupingResult:
    """One study's result with the parameters that made it."""

    config: GroupingConfig
    study: Study

    def to_dict(self) -> dict[str, Any]:
        return {"config": config_values(self.config), **self.study.to_dict()}


def simulate_grouping(config: GroupingConfig | None = None, *, progress: ProgressFn | None = None,
                      **knobs: Any) -> GroupingResult:
    """Run the study `config` names (or a GroupingConfig made of `knobs`)."""
    cfg = config_or_knobs(GroupingConfig, config, knobs)
    study: Study
    if cfg.study == "outlier":
        study = outlier_study(cfg.format, (cfg.rows, cfg.cols), cfg.outlier, (cfg.outlier_row, cfg.outlier_col),
                              [g.label for g in cfg.granularity_list()], cfg.seed, progress)
    elif cfg.study == "scale_choice":
        study = scale_choice_study(seed=cfg.seed, progress=progress)
    elif cfg.study == "transpose":
        study = transpose_study(cfg.format, (cfg.rows, cfg.cols), cfg.block, seed=cfg.seed)
    else:
        study = hadamard_study((cfg.rows, cfg.cols), cfg.outlier, cfg.seed)
    return GroupingResult(cfg, study)


def summary_lines(result: GroupingResult) -> list[str]:
    """The study in a few lines of text."""
    if not isinstance(result, GroupingResult):
        raise TypeError(f"result must be a GroupingResult, got {type(result).__name__}")
    s = result.study
    if isinstance(s, OutlierStudy):
        tensor = next((e for e in s.entries if e.n_groups == 1), None)
        ordinary = (f"; its other elements {general(tensor.ordinary_rms_rel_error, 4)}" if tensor is not None else "")
        lines = [f"{s.fmt} {s.shape[0]}×{s.shape[1]} standard normal, one outlier {s.outlier_value:g} at "
                 f"{s.outlier_index}; rms rel error = ‖x̂ − x‖ / ‖x‖ over the elements named:",
                 f"  one scale per tensor, without the outlier: {general(s.baseline_rms_rel_error, 4)} (the baseline)",
                 f"  one scale per tensor, with it: {general(s.per_tensor_rms_rel_error, 4)} over the whole tensor "
                 f"(the outlier is most of ‖x‖){ordinary}"]
        for e in s.entries:
            others = (f"the other groups' median {general(e.other_groups_rms_rel_error, 4)}" if e.n_groups > 1
                      else "no other group")
            lines.append(f"{e.granularity:>12}: whole tensor {general(e.report.rms_rel_error, 4)}, the outlier's group "
                         f"(its other elements) {general(e.outlier_group_rms_rel_error, 4)}, {others}, "
                         f"{e.bits_per_element:.4g} bits/element")
        return lines
    if isinstance(s, ScaleChoiceStudy):
        lines = []
        for name in s.formats:
            span = s.usable_range(name)
            usable = "never" if span is None else f"σ from {span[0]:.3g} to {span[1]:.3g}"
            lines.append(f"{name}: fixed encode scale {s.fixed_encode_scale:g} keeps the rms rel error below 0.1 "
                         f"for {usable}; the amax scale's worst is {general(float(np.max(s.rms_rel_error_amax[name])), 4)}")
        return lines
    if isinstance(s, TransposeStudy):
        return [f"{s.fmt}, blocks of {s.block}: rms rel error {general(s.rms_rel_error_row, 4)} (row blocks), "
                f"{general(s.rms_rel_error_col_from_source, 4)} (column blocks from the source), "
                f"{general(s.rms_rel_error_col_from_rows, 4)} (re-quantized from the row blocks): extra "
                f"{s.extra_rms_rel_error:+.3g}; {s.codes_differ_fraction:.1%} of the column codes differ"]
    return hadamard_summary_lines(s)


SIMULATION: Simulation[GroupingConfig, GroupingResult] = Simulation(
    name="grouping",
    help="scale granularity studies: outlier, scale choice, transpose, hadamard",
    config=GroupingConfig,
    run=lambda cfg, progress: simulate_grouping(cfg, progress=progress),
    summary=summary_lines,
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
