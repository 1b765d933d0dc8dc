"""The accumulator study (`lowprec simulate gemm`, `python -m lowprec.simulations.gemm`): the error of
a tensor core's accumulation against K, with and without promotion, against the exact reference.

For one architecture and instruction (`GemmConfig.arch`, `.instruction`; "default": the
architecture's own, FP8 where it has it), A (rows × k_max) and B (k_max × cols) are drawn from a distribution
(`normal`: N(0, 1); `outliers`: N(0, 1) with every 64th K-channel of A (k ≡ 7 mod 64) times 50, as
activation outlier features; `positive`: |N(0, 1)| both, every product ≥ 0, as a row of P ≥ 0 times
a column of V of one sign; `heavy_tailed`: Student-t, 3 degrees of freedom) and cast to the
instruction's operand formats, round to nearest even with saturation and no scale (block-scaled
instructions: their recipe — MX blocks with UE8M0 scales (`quant.mx`, OCP floor rule) or NVFP4 with
UE4M3 block scales (`quant.nvfp4`, its FP32 tensor scale left out: a common factor) — along K).
For K = the instruction's K, 2×, 4×, … up to `k_max` (and `k_max` itself), the first K columns of A
and rows of B are multiplied by `gemm.matmul` (C = `c` on every output) once per curve:

- the instruction with the whole K chained through it (no promotion);
- the same with promotion every n elements for each n of `promote_every`;
- the instruction of another architecture for the same operand formats (`compare`), no promotion;

and each output's error against the exact reference (`matmul`'s: every product and the sum exact)
is summarised per K: `max_rel` = max |d − exact| / |exact| over outputs with exact ≠ 0,
`median_rel`, and `max_norm` = max |d − exact| / (Σ_k |a_k·b_k| + |c|) — the error relative to
the magnitudes summed, which a cancelling sum cannot inflate.

Also: the bit picture of one fused step of the first dot product (row 0 of A, column 0 of B) through
the instruction without promotion (`picture.bit_picture` of `scalar.dot`), and, with `table`, the
per-role table of real stacks (`stacks.STACKS`) each modelled on Hopper's FP8 wgmma at K = k_max
(rounded down to a multiple of 32) for the same distribution, on the first 32 rows and 8 columns.

DeepSeek-V3 (arXiv:2412.19437 §3.3.2) reports for "GEMM operations of two random matrices with
K = 4096" a maximum relative error near 2 % from the tensor cores' limited accumulation, removed by
promoting every N_C = 128 elements; it states neither the distribution nor the measure.
`deepseek_v3_setup()` runs that setup here (Hopper `wgmma.m64n8k32.f32.e4m3.e4m3`, K = 4096, no
promotion vs every 128) for each distribution; see its docstring for what it finds.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import CastPolicy, Overflow

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, config_values
from ..framework.knobs import seed_knob
from .accumulators import default_instruction, dense_instruction
from .core import EXACT_FIXED_RATE, MODEL_RATE, matmul
from .isa import ARCHS, Instruction, get_instruction, instructions
from .operands import require_representable
from .picture import BitPicture, bit_picture
from .scalar import dot
from .stacks import STACKS, StackRow
from lowprec.numtext import percent

__all__ = ["DISTRIBUTIONS", "GemmConfig", "GemmCurve", "GemmStudy", "K_LIMIT", "METRICS", "SIMULATION",
           "StackError", "deepseek_v3_setup", "draw_inputs", "simulate_gemm", "summary_lines"]

DISTRIBUTIONS = ("normal", "outliers", "positive", "heavy_tailed")
METRICS = ("max_norm", "max_rel", "median_rel")
K_LIMIT = 16384  # the longest K a study runs (the "up to 16384")
OUTLIER_PERIOD, OUTLIER_CHANNEL, OUTLIER_FACTOR = 64, 7, 50.0
MAX_INTERVALS = 4
DEFAULT = "default"  # the instruction knob's value for the architecture's default instruction
SATURATE = CastPolicy(overflow=Overflow.SATURATE)
TABLE_ROWS, TABLE_COLS = 32, 8  # outputs the per-role table models (the first rows and columns)


def _instruction_error(arch: str, name: str) -> str:
    """A one-line refusal of an unknown instruction (shorter than get_instruction's full list)."""
    import difflib

    known = instructions(arch)
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.8)
    elsewhere = [a for a in ARCHS if a != arch and name in instructions(a)]
    parts = [f"{name!r} is not an instruction of {arch}"]
    if elsewhere:
        parts.append(f"it exists on {', '.join(elsewhere)}")
    if close:
        parts.append(f"did you mean {' or '.join(close)}?")
    parts.append(f"'{DEFAULT}' gives {arch}'s own, {default_instruction(arch)}; "
                 f"lowprec.simulations.gemm.instructions({arch!r}) lists all {len(known)}")
    return "; ".join(parts)


def _intervals(text: str) -> list[int]:
    out: list[int] = []
    for part in text.replace(" ", "").split(","):
        if part in ("", "none", "0"):
            continue
        try:
            n = int(part)
        except ValueError:
            raise ConfigError("promote_every", f"must be comma-separated integers, got {part!r}") from None
        if n < 1:
            raise ConfigError("promote_every", f"intervals must be positive, got {n}")
        if n not in out:
            out.append(n)
    if len(out) > MAX_INTERVALS:
        raise ConfigError("promote_every", f"at most {MAX_INTERVALS} intervals, got {len(out)}")
    return out


@config_record
class GemmConfig:
    """The accumulator study's parameters (see the module docstring)."""

    arch: str = knob("hopper", "GPU architecture", choices=ARCHS)
    instruction: str = knob(DEFAULT, "tensor-core instruction as PTX writes it, e.g. wgmma.m64n8k32.f32.e4m3.e4m3; "
                                     "default: the architecture's own (FP8 where it has FP8)")
    promote_every: str = knob("128", "promotion intervals drawn beside no promotion: comma-separated multiples "
                                     "of the instruction's K (empty: none)")
    compare: str = knob("blackwell", "another architecture's instruction for the same operand formats, drawn "
                                     "beside without promotion (ignored when it is the architecture itself)",
                        choices=("none",) + ARCHS)
    distribution: str = knob("normal", "inputs: normal N(0, 1); outliers (every 64th K-channel of A × 50); "
                                       "positive |N(0, 1)| (every product ≥ 0, as in P·V); heavy_tailed "
                                       "(Student-t, 3 dof)", choices=DISTRIBUTIONS)
    k_max: int = knob(4096, "longest K: errors at the instruction's K, twice it, … up to k_max (a multiple of "
                            "the instruction's K)", bounds=(1, K_LIMIT), widget="input")
    rows: int = knob(32, "rows M of A (dot products per column)", bounds=(1, 1024), widget="input")
    cols: int = knob(16, "columns N of B", bounds=(1, 1024), widget="input")
    c: float = knob(0.0, "C, the accumulator input of every output (exact in the instruction's C type)",
                    widget="input")
    metric: str = knob("max_norm", "error drawn against K: max |d − exact| / Σ|a·b| (the error against the "
                                "magnitudes summed), or max or median |d − exact| / |exact|", choices=METRICS)
    picture_step: int = knob(-1, "fused step of the first dot product drawn bit by bit (0: the first; -1: the "
                                 "last, at K = k_max)", bounds=(-1, K_LIMIT - 1), widget="input")
    table: bool = knob(True, "also model every row of the per-role table (Hopper FP8, K = k_max)")
    seed: int = seed_knob("seed of A and B")

    def __post_init__(self) -> None:
        ins = self.resolved()
        if self.k_max % ins.k:
            raise ConfigError("k_max", f"K = {self.k_max} is not a multiple of {ins.name}'s K = {ins.k}")
        for n in _intervals(self.promote_every):
            if n % ins.k:
                raise ConfigError("promote_every", f"{n} is not a multiple of {ins.name}'s K = {ins.k}")
        if not ins.chains and (_intervals(self.promote_every) != [ins.k] or self.k_max > ins.k):
            raise ConfigError("instruction", f"{ins.name} takes C as .{ins.c_type} but returns D as .{ins.d_type}: "
                                             f"D cannot be chained into the next C; pick one whose C and D agree")
        other = self.compared()
        if other is not None and self.k_max % other.k:
            raise ConfigError("k_max", f"K = {self.k_max} is not a multiple of {other.name}'s K = {other.k}")
        try:
            require_representable(np.array(self.c), ins.c_format, "c", f"the C type .{ins.c_type} of {ins.name}")
        except ValueError as exc:
            raise ConfigError("c", str(exc).removeprefix("c = ")) from None
        steps = self.steps()
        if self.picture_step >= steps:
            raise ConfigError("picture_step", f"must be < {steps}: a dot product of K = {self.k_max} runs "
                                              f"{steps} fused steps of {ins.unit.step(ins.k)} products")

    def resolved(self) -> Instruction:
        """The instruction record (the architecture's default for an empty `instruction`)."""
        name = self.instruction.strip()
        name = default_instruction(self.arch) if name in ("", DEFAULT) else name
        try:
            return get_instruction(self.arch, name)
        except ValueError:
            raise ConfigError("instruction", _instruction_error(self.arch, name)) from None

    def compared(self) -> Instruction | None:
        """The instruction of `compare` for the same operand formats, or None."""
        if self.compare in ("none", self.arch):
            return None
        ins = self.resolved()
        if ins.block_scaled:
            raise ConfigError("compare", f"{ins.name} is block-scaled: compare instructions by picking each as "
                                         f"the instruction (set compare to none)")
        try:
            return get_instruction(self.compare, dense_instruction(self.compare, ins.a_format, ins.b_format))
        except ValueError as exc:
            raise ConfigError("compare", str(exc)) from None

    def steps(self) -> int:
        """Fused steps of a dot product of K = k_max."""
        ins = self.resolved()
        return self.k_max // ins.unit.step(ins.k)

    def pictured_step(self) -> int:
        """The fused step the bit picture draws (picture_step, -1 resolved to the last)."""
        return self.steps() - 1 if self.picture_step < 0 else self.picture_step

    def intervals(self) -> list[int]:
        return _intervals(self.promote_every)

    def k_values(self) -> list[int]:
        """K = the instruction's K, doubled up to k_max, and k_max."""
        k0 = self.resolved().k
        other = self.compared()
        if other is not None:
            k0 = int(np.lcm(k0, other.k))
        ks = []
        k = k0
        while k < self.k_max:
            ks.append(k)
            k *= 2
        ks.append(self.k_max)
        return ks

    def cost(self) -> Cost:
        outputs = self.rows * self.cols
        ks = sum(self.k_values())
        curves = 1 + len(self.intervals()) + (self.compare not in ("none", self.arch))
        macs = outputs * ks * curves
        exact = outputs * ks * (1 + (self.compare not in ("none", self.arch)))
        table = min(self.rows, TABLE_ROWS) * min(self.cols, TABLE_COLS) * self.k_max * 6 * (2 if self.table else 0)
        seconds = (macs + table / 2) / MODEL_RATE + (exact + table / 2) / EXACT_FIXED_RATE + self.k_max * 3e-5
        return Cost(bytes=(self.rows + self.cols) * self.k_max * 8 * 8 + outputs * 64 * 8,
                    seconds=seconds, note=f"{curves} curve(s) over K up to {self.k_max}, {outputs} outputs")


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------

def draw_inputs(distribution: str, rows: int, cols: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A (rows × k) and B (k × cols), float64, before any cast (see the module docstring)."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
    rng = np.random.default_rng(seed)
    if distribution == "heavy_tailed":
        return rng.standard_t(3, (rows, k)), rng.standard_t(3, (k, cols))
    a = rng.standard_normal((rows, k))
    b = rng.standard_normal((k, cols))
    if distribution == "positive":
        return np.abs(a), np.abs(b)
    if distribution == "outliers":
        a[:, OUTLIER_CHANNEL::OUTLIER_PERIOD] *= OUTLIER_FACTOR
    return a, b


@dataclass(frozen=True)
class _Operands:
    a: np.ndarray
    b: np.ndarray
    scale_a: np.ndarray | None
    scale_b: np.ndarray | None
    block: int

    def prefix(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
        if self.scale_a is None or self.scale_b is None:
            return self.a[:, :k], self.b[:k], None, None
        nb = k // self.block
        return self.a[:, :k], self.b[:k], self.scale_a[:, :nb], self.scale_b[:nb]

    def magnitudes(self, k: int, c: float) -> np.ndarray:
        """Σ_k |a_k·b_k| (with the block scales) + |c| per output, float64."""
        a, b, sa, sb = self.prefix(k)
        if sa is None or sb is None:
            return np.abs(a) @ np.abs(b) + abs(c)
        return (np.abs(a) * np.repeat(sa, self.block, axis=1)) @ (np.abs(b) * np.repeat(sb, self.block, axis=0)) + abs(c)


def _cast(x: np.ndarray, fmt: formats.FloatFormat) -> np.ndarray:
    return np.asarray(formats.quantize(x, fmt, SATURATE), np.float64)


def _operands(ins: Instruction, xa: np.ndarray, xb: np.ndarray) -> _Operands:
    """A and B in the instruction's operand formats (block-scaled: quantized by their recipe along K)."""
    if not ins.block_scaled:
        return _Operands(_cast(xa, ins.a_format), _cast(xb, ins.b_format), None, None, 0)
    from ..quant.mx import quantize_mx
    from ..quant.nvfp4 import quantize_nvfp4

    def one(x: np.ndarray, fmt: formats.FloatFormat, axis: int) -> tuple[np.ndarray, np.ndarray]:
        x32 = x.astype(np.float32)
        if ins.scale_type == "ue4m3":
            t = quantize_nvfp4(x32, axis=axis)
            return formats.decode(t.codes, formats.E2M1).astype(np.float64), t.block_scales.astype(np.float64)
        m = quantize_mx(x32, fmt.name, ins.block, axis=axis)
        return (formats.decode(m.codes, fmt).astype(np.float64),
                formats.decode(m.scale_codes, formats.E8M0).astype(np.float64))

    a, sa = one(xa, ins.a_format, 1)
    b, sb = one(xb, ins.b_format, 0)
    return _Operands(a, b, sa, sb, ins.block)


# ------------------------------------------------------------------------------------------------
# the result
# ------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GemmCurve:
    """The error of one accumulation (instruction, promotion) at each K."""

    label: str
    arch: str
    instruction: str
    promote_every: int | None
    k: list[int]
    max_rel: list[float]
    median_rel: list[float]
    max_norm: list[float]

    def values(self, metric: str) -> list[float]:
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
        out: list[float] = getattr(self, metric)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "arch": self.arch, "instruction": self.instruction,
                "promote_every": self.promote_every, "k": self.k, "max_rel": self.max_rel,
                "median_rel": self.median_rel, "max_norm": self.max_norm}


@dataclass(frozen=True)
class StackError:
    """One row of the per-role table, modelled: its instruction and errors at K = k_max."""

    row: StackRow
    instruction: str
    k: int
    max_rel: float
    median_rel: float
    max_norm: float

    def to_dict(self) -> dict[str, Any]:
        return {**self.row.to_dict(), "instruction": self.instruction, "k": self.k, "max_rel": self.max_rel,
                "median_rel": self.median_rel, "max_norm": self.max_norm}


@dataclass(frozen=True)
class GemmStudy:
    """The accumulator study's result (see the module docstring)."""

    config: GemmConfig
    instruction: str  # the resolved instruction
    description: str  # Instruction.describe()
    k_values: list[int]
    curves: tuple[GemmCurve, ...]
    picture: BitPicture
    stacks: tuple[StackError, ...] = field(default_factory=tuple)

    def curve(self, promote_every: int | None = None, arch: str | None = None) -> GemmCurve:
        """The curve of `arch` (default: the study's) with this promotion."""
        arch = arch or self.config.arch
        for c in self.curves:
            if c.arch == arch and c.promote_every == promote_every:
                return c
        raise ValueError(f"no curve of {arch} with promote_every={promote_every}; curves: "
                         f"{', '.join(c.label for c in self.curves)}")

    def to_dict(self) -> dict[str, Any]:
        return {"simulation": "gemm", "config": config_values(self.config), "instruction": self.instruction,
                "description": self.description, "k_values": self.k_values,
                "curves": [c.to_dict() for c in self.curves], "picture": self.picture.to_dict(),
                "stacks": [s.to_dict() for s in self.stacks]}


def _metrics(d: np.ndarray, exact: np.ndarray, mags: np.ndarray) -> tuple[float, float, float]:
    err = np.abs(d - exact)
    ok = np.isfinite(exact) & (exact != 0) & np.isfinite(d)
    rel = err[ok] / np.abs(exact[ok])
    good = np.isfinite(d) & (mags > 0)
    norm = err[good] / mags[good]
    nan = float("nan")
    return (float(rel.max()) if rel.size else nan, float(np.median(rel)) if rel.size else nan,
            float(norm.max()) if norm.size else nan)


def _label(ins: Instruction, promote: int | None) -> str:
    return f"{ins.arch}, " + ("no promotion" if promote is None else f"promoted every {promote}")


def simulate_gemm(config: GemmConfig | None = None, *, progress: ProgressFn | None = None,
                  **knobs: Any) -> GemmStudy:
    """Run the accumulator study for a GemmConfig (or one made of `knobs`)."""
    cfg = config_or_knobs(GemmConfig, config, knobs)
    ins = cfg.resolved()
    other = cfg.compared()
    ks = cfg.k_values()
    xa, xb = draw_inputs(cfg.distribution, cfg.rows, cfg.cols, cfg.k_max, cfg.seed)
    ops = {ins.name: _operands(ins, xa, xb)}
    plan: list[tuple[Instruction, int | None]] = [(ins, None)] + [(ins, n) for n in cfg.intervals()]
    if other is not None:
        ops[other.name] = _operands(other, xa, xb)
        plan.append((other, None))
    c = np.full((cfg.rows, cfg.cols), cfg.c)
    exact_of: dict[tuple[str, int], np.ndarray] = {}
    mags_of: dict[tuple[str, int], np.ndarray] = {}
    total = len(plan) * len(ks) + (1 if cfg.table else 0)
    done = 0
    curves = []
    for which, promote in plan:
        op = ops[which.name]
        key_fmt = f"{which.a_type}.{which.b_type}.{which.scale_type}"
        rows: list[tuple[float, float, float]] = []
        for k in ks:
            a, b, sa, sb = op.prefix(k)
            key = (key_fmt, k)
            need = key not in exact_of
            r = matmul(a, b, c, arch=which.arch, instruction=which.name, promote_every=promote, scale_a=sa,
                       scale_b=sb, reference=need, budget=None)
            if need:
                assert r.exact is not None
                exact_of[key] = r.exact
                mags_of[key] = op.magnitudes(k, cfg.c)
            rows.append(_metrics(r.d_values, exact_of[key], mags_of[key]))
            done += 1
            if progress is not None:
                progress(done, total)
        curves.append(GemmCurve(_label(which, promote), which.arch, which.name, promote, list(ks),
                                [m[0] for m in rows], [m[1] for m in rows], [m[2] for m in rows]))
    picture = _picture(cfg, ins, ops[ins.name])
    stacks: tuple[StackError, ...] = ()
    if cfg.table:
        stacks = _stack_errors(cfg, xa, xb)
        if progress is not None:
            progress(total, total)
    return GemmStudy(cfg, ins.name, ins.describe(), list(ks), tuple(curves), picture, stacks)


def _picture(cfg: GemmConfig, ins: Instruction, op: _Operands) -> BitPicture:
    """The bit picture of step `cfg.pictured_step()` of dot product (0, 0), no promotion: the chain up
    to the instruction that holds the step runs compiled (`matmul`, bit-identical to chaining), that
    one instruction is traced by `scalar.dot`."""
    step = cfg.pictured_step()
    length = ins.unit.step(ins.k)
    k0 = (step * length // ins.k) * ins.k
    c = cfg.c
    if k0:
        a, b, sa, sb = op.prefix(k0)
        r = matmul(a[:1], b[:, :1], np.array([[c]]), arch=ins.arch, instruction=ins.name,
                   scale_a=None if sa is None else sa[:1], scale_b=None if sb is None else sb[:, :1],
                   reference=False, budget=None)
        c = float(r.d_values[0, 0])
    a, b, sa, sb = op.prefix(k0 + ins.k)
    blk = slice(k0 // op.block, (k0 + ins.k) // op.block) if op.block else slice(0)
    trace = dot(a[0, k0:], b[k0:, 0], c, arch=ins.arch, instruction=ins.name,
                scale_a=None if sa is None else sa[0, blk], scale_b=None if sb is None else sb[blk, 0])
    return bit_picture(trace, step - k0 // length, first_step=k0 // length, k_offset=k0, steps=cfg.steps())


def _stack_errors(cfg: GemmConfig, xa: np.ndarray, xb: np.ndarray) -> tuple[StackError, ...]:
    """Each row of `stacks.STACKS` on Hopper FP8 wgmma at K = k_max (one run per distinct setting)."""
    k = cfg.k_max - cfg.k_max % 32
    if k == 0:
        return ()
    xa, xb = xa[:TABLE_ROWS], xb[:, :TABLE_COLS]
    c = np.zeros((xa.shape[0], xb.shape[1]))
    runs: dict[tuple[str, int | None], tuple[float, float, float]] = {}
    exact: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for row in STACKS:
        name = dense_instruction("hopper", row.a_format, row.b_format)
        key = (name, row.promote_every)
        if key not in runs:
            ins = get_instruction("hopper", name)
            op = _operands(ins, xa[:, :k], xb[:k])
            need = name not in exact
            r = matmul(op.a, op.b, c, arch="hopper", instruction=name, promote_every=row.promote_every,
                       reference=need, budget=None)
            if need:
                assert r.exact is not None
                exact[name] = (r.exact, op.magnitudes(k, 0.0))
            runs[key] = _metrics(r.d_values, *exact[name])
        m = runs[key]
        out.append(StackError(row, name, k, m[0], m[1], m[2]))
    return tuple(out)


# ------------------------------------------------------------------------------------------------
# faces
# ------------------------------------------------------------------------------------------------

def summary_lines(s: GemmStudy) -> list[str]:
    if not isinstance(s, GemmStudy):
        raise TypeError(f"s must be a GemmStudy, got {type(s).__name__}")
    cfg = s.config
    k = s.k_values[-1]
    lines = [s.description, f"{cfg.distribution} inputs, {cfg.rows} × {cfg.cols} outputs, C = {cfg.c:g}; "
                            f"error at K = {k} (max rel / median rel / max vs Σ|a·b|):"]
    for cv in s.curves:
        lines.append(f"  {cv.label:<34} {percent(cv.max_rel[-1])} / {percent(cv.median_rel[-1])} / {percent(cv.max_norm[-1])}")
    p = s.picture
    lines.append(f"step {p.step} of dot product (0, 0): C = {p.c_in!r}, D = {p.d_out!r}; the alignment to 2^{p.e_max} "
                 f"with {p.frac_bits} fraction bits dropped {p.dropped_sum!r} of the step's exact {p.step_exact!r}")
    if s.stacks:
        lines.append(f"per-role table (Hopper FP8 wgmma, K = {s.stacks[0].k}, {cfg.metric.replace('_', ' ')} error):")
        for e in s.stacks:
            lines.append(f"  {e.row.stack} {e.row.recipe} {e.row.role}: {e.row.accumulation} → "
                         f"{percent(getattr(e, cfg.metric))}")
    return lines


def csv_text(s: GemmStudy) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["curve", "arch", "instruction", "promote_every", "k", "max_rel", "median_rel", "max_norm"])
    for cv in s.curves:
        for i, k in enumerate(cv.k):
            w.writerow([cv.label, cv.arch, cv.instruction, "" if cv.promote_every is None else cv.promote_every, k,
                        repr(cv.max_rel[i]), repr(cv.median_rel[i]), repr(cv.max_norm[i])])
    return buf.getvalue()


SIMULATION: Simulation[GemmConfig, GemmStudy] = Simulation(
    name="gemm",
    help="tensor-core accumulation: error against K with and without promotion, bit by bit",
    config=GemmConfig,
    run=lambda cfg, progress: simulate_gemm(cfg, progress=progress),
    summary=summary_lines,
    csv=csv_text,
    html_help="write a standalone HTML page of the error against K, the bit picture and the per-role table "
              "(open offline)",
)


# ------------------------------------------------------------------------------------------------
# DeepSeek-V3's test
# ------------------------------------------------------------------------------------------------

def deepseek_v3_setup(seed: int = 0, rows: int = 128, cols: int = 128, k: int = 4096,
                      distributions: tuple[str, ...] = DISTRIBUTIONS) -> dict[str, dict[str, float]]:
    """DeepSeek-V3's test (§3.3.2): two random matrices, K = 4096, through Hopper's FP8 wgmma
    (`wgmma.m64n8k32.f32.e4m3.e4m3`, operands N(0, 1)-family values cast to E4M3FN, no scale), the
    whole K in the tensor core vs promotion to FP32 every 128. Per distribution: the max and median
    relative error of the outputs and the max error relative to Σ|a·b|, both ways.

    What it finds (seed 0, 128 × 128 outputs): without promotion the all-positive inputs lose about
    7 % (every truncation has the same sign), zero-mean inputs a median 0.1 % (their max relative
    error is set by the outputs that nearly cancel); promotion every 128 cuts every measure by about
    two orders of magnitude. The report's "nearly 2 %" lies between the two: its inputs and measure
    are not stated, so no single setting here is "the" reproduction — the mechanism and the size of
    the fix are."""
    out: dict[str, dict[str, float]] = {}
    name = "wgmma.m64n8k32.f32.e4m3.e4m3"
    for dist in distributions:
        xa, xb = draw_inputs(dist, rows, cols, k, seed)
        a, b = _cast(xa, formats.E4M3FN), _cast(xb, formats.E4M3FN)
        mags = np.abs(a) @ np.abs(b)
        row: dict[str, float] = {}
        exact = None
        for promote in (None, 128):
            r = matmul(a, b, arch="hopper", instruction=name, promote_every=promote, reference=exact is None,
                       budget=None)
            if exact is None:
                exact = r.exact
            assert exact is not None
            mr, md, mn = _metrics(r.d_values, exact, mags)
            tag = "none" if promote is None else "every_128"
            row.update({f"max_rel_{tag}": mr, f"median_rel_{tag}": md, f"max_norm_{tag}": mn})
        out[dist] = row
    return out
