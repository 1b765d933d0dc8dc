"""Attention-probability rounding: what storing softmax probabilities P in a low-precision format does
to the attention output O = P·V.

Scores become P by a stable softmax in float64 (the row maximum is subtracted before `exp`); P is
rounded in a chosen format by `formats.encode`, round-to-nearest-even or stochastic, optionally after
a per-row decode scale `decode_scale = row_amax / fmt.max` (the row maximum maps onto the format's
largest value; casts saturate); V may be rounded too (`v_format`, nearest-even). Stochastic rounding
uses the rule of `formats`' stochastic mode — up to the upper grid neighbour when 32 random bits
(numpy SFC64) are below floor(2^32·(x − lo)/(hi − lo)) — with the neighbours lo ≤ x ≤ hi found once
by `formats` rounding down and up, so a Monte-Carlo trial costs one comparison per entry; trials are
evaluated in float32 around their float64 expectation, single results and expectations in float64.
With ΔP = P̃ − P and ΔV = Ṽ − V the exact error is ΔO = ΔP·V + P·ΔV + ΔP·ΔV (the first two terms
are the first-order estimate). Entry errors of stochastic rounding are independent with
Var(e_j) = (x − lo)(hi − x), so Var(ΔO) = Σ_j Ṽ_j² Var(e_j). Renormalising a rounded row divides by
its random mass S; expanding X/S to second order about E[S] = 1 predicts the bias
E[P̃_j/S] − P_j ≈ P_j·Σ_k Var(e_k) − Var(e_j). Relative error is ‖ΔO‖_F / max(‖O‖_F,
REL_ERROR_FLOOR). A fully masked row raises (`masked_rows="raise"`, the default) or becomes P = 0 and
O = 0 (`"zero"`, what FlashAttention-style kernels return for an empty softmax denominator); the
row-mass error is ΣP̃ − ΣP, i.e. ΣP̃ − 1 on ordinary rows.

The P·V product itself is exact unless `pv_accumulator` names a tensor core (`simulations.framework.knobs.
ACCUMULATOR_CHOICES`; `simulations.gemm.accumulators`): then Õ = P̃·Ṽ of trial 0 and of the nearest
rounding is the FP32 result of the bit-exact tensor-core model (P̃'s codes times Ṽ through the
architecture's instruction for their two formats, K padded with zeros to the instruction's K, the
row decode scale applied to the FP32 result in float64), so ΔO also holds the accumulation error
(`accumulation_error`: max |Õ − P̃·Ṽ exact|); V enters the tensor core rounded (nearest even) to
`v_format`, or to P's format when `v_format` is none, as an FP8 attention kernel casts it. The
Monte-Carlo statistics of stochastic rounding keep exact
accumulation: they study the rounding of P.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Sequence

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, from_mapping, knob
from lowprec.formats import CastPolicy, FloatFormat, IntFormat, Overflow, Rounding, decode, encode, get_format

from ..framework.cli import ProgressFn, Simulation, config_values, run_module
from ..framework.knobs import accumulator_knob

ROUNDINGS = ("nearest_even", "stochastic")
SCALES = ("none", "row")
MASKS = ("none", "causal")
MASKED_ROW_POLICIES = ("raise", "zero")
PRESETS = ("random", "three_probs")
SUGGESTED_FORMATS = ("E4M3FN", "E5M2", "BF16", "FP16", "E2M1")
#: formats P (and V) may be rounded to: every signed floating-point format
ATTENTION_FORMATS = tuple(f.name for f in formats.CORE_FORMATS if isinstance(f, formats.FloatFormat) and f.signed)
NO_V_FORMAT = "none"  # the v_format that leaves V exact
REL_ERROR_FLOOR = 1e-30  # ε in max(‖O‖, ε): only matters when O is exactly zero
_TRIAL_ELEMENTS = 1 << 20  # entries of P̃ per Monte-Carlo block (bounds scratch memory to ~10 MB)
#: the most Monte-Carlo trials one run takes (the API, the CLI, widgets and lessons: one bound)
MAX_TRIALS = 100_000
THREE_PROBS = (0.6, 0.3, 0.1)  # the "three_probs" preset: one query's softmax …
THREE_VALUES = (0.0, 2.0, 10.0)  # … over these values


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionInputs:
    """Scores (queries × keys), values (keys × head_dim) and an optional mask (True = may attend)."""

    scores: np.ndarray
    values: np.ndarray
    mask: np.ndarray | None = None
    description: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scores": self.scores,
            "values": self.values,
            "mask": None if self.mask is None else self.mask.astype(bool).tolist(),
            "description": dict(self.description),
        }


def _positive_int(name: str, value: Any, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return int(value)


def _real_array(name: str, value: Any) -> np.ndarray:
    """`value` as a float64 array; TypeError naming `name` for anything that is not real numbers
    (object, text, complex, bool arrays …)."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} must be an array of real numbers, got dtype {arr.dtype}")
    return arr.astype(np.float64)


def _finite_float(name: str, value: Any, *, positive: bool = False, lo: float | None = None,
                  hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not np.isfinite(v) or (positive and v <= 0):
        raise ValueError(f"{name} must be a {'positive ' if positive else ''}finite number, got {value!r}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise ValueError(f"{name} must lie in [{lo}, {hi}], got {value!r}")
    return v


def make_inputs(seq: int = 128, head_dim: int = 64, *, temperature: float = 1.0,
                v_outlier_fraction: float = 0.0, v_outlier_scale: float = 20.0,
                mask: str = "none", seed: int = 0) -> AttentionInputs:
    """Random attention inputs: `seq` queries and keys, scores z / temperature with z ~ N(0, 1)
    (what q·k/√d gives for unit-variance q, k), V ~ N(0, 1) with a fraction of its elements multiplied
    by `v_outlier_scale`. Lower temperature concentrates each row's probability on fewer keys.
    `mask`: "none" or "causal" (query i attends to keys 0..i)."""
    seq = _positive_int("seq", seq)
    head_dim = _positive_int("head_dim", head_dim)
    temperature = _finite_float("temperature", temperature, positive=True)
    v_outlier_fraction = _finite_float("v_outlier_fraction", v_outlier_fraction, lo=0.0, hi=1.0)
    v_outlier_scale = _finite_float("v_outlier_scale", v_outlier_scale)
    if mask not in MASKS:
        raise ValueError(f"mask={mask!r} is not one of {', '.join(map(repr, MASKS))}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be ≥ 0, got {seed}")
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((seq, seq)) / temperature
    values = rng.standard_normal((seq, head_dim))
    if v_outlier_fraction > 0:
        outliers = rng.random((seq, head_dim)) < v_outlier_fraction
        values = np.where(outliers, values * v_outlier_scale, values)
    mask_arr = np.tril(np.ones((seq, seq), dtype=bool)) if mask == "causal" else None
    desc = {"seq": seq, "head_dim": head_dim, "temperature": temperature,
            "v_outlier_fraction": v_outlier_fraction, "v_outlier_scale": v_outlier_scale,
            "mask": mask, "seed": seed}
    return AttentionInputs(scores, values, mask_arr, desc)


# ------------------------------------------------------------------------------------------------
# softmax and rounding
# ------------------------------------------------------------------------------------------------


def _check_mask(mask: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    if mask is None:
        return None
    m = np.asarray(mask)
    if m.dtype != bool:
        raise TypeError(f"mask must be a boolean array (True = may attend), got dtype {m.dtype}")
    if m.shape != shape:
        raise ValueError(f"mask has shape {m.shape}; the scores have shape {shape}")
    return m


def softmax_probs(scores: Any, mask: Any = None, *, masked_rows: str = "raise") -> np.ndarray:
    """Row softmax in float64, stable: exp(s - max) / Σ exp(s - max) over the unmasked keys.

    Scores must be finite where the mask allows attention (masked entries are ignored, -inf
    included). A row with no keys raises; a fully masked row raises or becomes zeros
    (`masked_rows="zero"`)."""
    s = np.asarray(scores)
    if s.dtype.kind not in "fiu" or s.dtype == bool:
        raise TypeError(f"scores must be a real array, got dtype {s.dtype}")
    s = s.astype(np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores must be 2-D (queries × keys), got shape {s.shape}")
    if s.shape[0] == 0 or s.shape[1] == 0:
        raise ValueError(f"scores have an empty dimension (shape {s.shape}); each row needs keys")
    if masked_rows not in MASKED_ROW_POLICIES:
        raise ValueError(f"masked_rows={masked_rows!r} is not one of "
                         f"{', '.join(map(repr, MASKED_ROW_POLICIES))}")
    m = _check_mask(mask, s.shape)
    allowed = np.ones(s.shape, dtype=bool) if m is None else m
    bad = allowed & ~np.isfinite(s)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise ValueError(f"score[{i}, {j}] = {s[i, j]} is not finite; mask it out instead "
                         f"(scores must be finite where attention is allowed)")
    empty = ~allowed.any(axis=1)
    if empty.any() and masked_rows == "raise":
        raise ValueError(f"row {int(np.argmax(empty))} is fully masked ({int(empty.sum())} such rows); "
                         f"pass masked_rows='zero' to give such rows P = 0 and O = 0")
    s = np.where(allowed, s, -np.inf)
    row_max = np.where(empty, 0.0, s.max(axis=1, initial=-np.inf))
    e = np.where(allowed, np.exp(s - row_max[:, None]), 0.0)
    denom = e.sum(axis=1)
    denom = np.where(empty, 1.0, denom)
    return e / denom[:, None]


def _check_format(fmt: Any) -> FloatFormat:
    f = get_format(fmt)
    if isinstance(f, IntFormat) or not isinstance(f, FloatFormat) or not f.signed:
        raise ValueError(f"format {f} cannot hold probabilities here; use a signed float format "
                         f"such as {', '.join(SUGGESTED_FORMATS)}")
    return f


def _row_decode_scale(probs: np.ndarray, f: FloatFormat, scale: str) -> np.ndarray:
    """decode_scale per row: row_amax / fmt.max ("row") or 1 ("none"); 1 for all-zero rows."""
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r} is not one of {', '.join(map(repr, SCALES))}")
    if scale == "none":
        return np.ones(probs.shape[0])
    amax = probs.max(axis=1)
    return np.where(amax > 0, amax / f.max, 1.0)


def round_probs(probs: np.ndarray, fmt: Any, rounding: str = "nearest_even", *, scale: str = "none",
                rng: np.random.Generator | None = None) -> np.ndarray:
    """P rounded onto the format's grid (times the row's decode scale), saturating at ±max."""
    f = _check_format(fmt)
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding={rounding!r} is not one of {', '.join(map(repr, ROUNDINGS))}")
    p = formats.as_float_array(probs, "probs").astype(np.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be a 2-D array (rows × keys), got shape {p.shape}")
    ds = _row_decode_scale(p, f, scale)
    if rounding == "stochastic":
        if not isinstance(rng, np.random.Generator):
            raise TypeError("stochastic rounding needs rng=numpy.random.Generator (e.g. default_rng(0))")
        lo, hi = _grid_neighbours(p, f, ds)
        gap = hi - lo
        prob_up = np.divide(p - lo, gap, out=np.zeros_like(p), where=gap > 0)
        return np.where(rng.random(p.shape) < prob_up, hi, lo)
    scaled = p / ds[:, None]
    codes = encode(scaled, f, CastPolicy(overflow=Overflow.SATURATE))
    return decode(codes, f).astype(np.float64) * ds[:, None]


def _grid_neighbours(probs: np.ndarray, f: FloatFormat, decode_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """lo ≤ P ≤ hi: the scaled grid values either side of each entry (`formats` rounding down / up,
    saturating), times the row's decode scale."""
    x = probs / decode_scale[:, None]
    lo = decode(encode(x, f, CastPolicy(rounding=Rounding.DOWN, overflow=Overflow.SATURATE)), f).astype(np.float64)
    hi = decode(encode(x, f, CastPolicy(rounding=Rounding.UP, overflow=Overflow.SATURATE)), f).astype(np.float64)
    return lo * decode_scale[:, None], hi * decode_scale[:, None]


def stochastic_variance(probs: np.ndarray, fmt: Any, *, scale: str = "none") -> np.ndarray:
    """Var(e_j) of stochastic rounding per entry: (P − lo)(hi − P), with lo ≤ P ≤ hi the scaled grid
    neighbours (a Bernoulli choice between them with P(up) = (P − lo)/(hi − lo))."""
    f = _check_format(fmt)
    p = _real_array("probs", probs)
    if p.ndim != 2:
        raise ValueError(f"probs must be a 2-D array (rows × keys), got shape {p.shape}")
    lo, hi = _grid_neighbours(p, f, _row_decode_scale(p, f, scale))
    return (p - lo) * (hi - p)


# ------------------------------------------------------------------------------------------------
# the simulation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionResult:
    """One attention-rounding experiment; arrays are float64 (queries × keys or queries × head_dim).

    Single-trial fields (`probs_rounded`, `delta_o`, …) are trial 0; `mc_*` fields are over all
    trials (for nearest rounding every trial is identical and the variance is 0)."""

    config: dict[str, Any]
    probs: np.ndarray  # exact softmax P
    probs_rounded: np.ndarray  # P̃ of trial 0
    decode_scale: np.ndarray  # per query row
    values: np.ndarray  # V (exact)
    values_rounded: np.ndarray  # Ṽ (== V when v_format is None)
    out_exact: np.ndarray  # O = P·V
    out_rounded: np.ndarray  # Õ = P̃·Ṽ, trial 0
    delta_p: np.ndarray  # P̃ − P, trial 0
    delta_o: np.ndarray  # Õ − O, trial 0 (exact)
    delta_o_first_order: np.ndarray  # ΔP·V + P·ΔV, trial 0
    delta_o_nearest: np.ndarray  # Õ − O with round-to-nearest-even on the same inputs
    row_mass_error: np.ndarray  # ΣP̃ − ΣP per row, trial 0
    rel_error: float  # ‖ΔO‖_F / max(‖O‖_F, REL_ERROR_FLOOR), trial 0
    abs_error: float  # max |ΔO|, trial 0
    mc_mean_error: np.ndarray  # mean over trials of ΔO (the bias)
    mc_variance: np.ndarray  # variance over trials of ΔO (ddof = 1; 0 for one trial)
    analytic_mean_error: np.ndarray  # P·ΔV for stochastic rounding; ΔO for nearest
    analytic_variance: np.ndarray  # Σ_j Ṽ_j² Var(e_j) (0 for nearest)
    mc_mean_error_renorm: np.ndarray | None = None  # mean of ΔO with each rounded row renormalised
    mc_variance_renorm: np.ndarray | None = None
    renorm_bias_first_order: np.ndarray | None = None  # Σ_j Ṽ_j (P_j ΣVar − Var_j)
    accumulation_error: float = 0.0  # max |Õ − P̃·Ṽ exact| of trial 0 (0 with exact accumulation)

    @property
    def trials(self) -> int:
        return int(self.config["trials"])

    def mean_error_band(self, k: float = 3.0) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper): the analytic mean error ± k standard errors of a trial mean,
        √(analytic variance / trials), per output element."""
        se = np.sqrt(self.analytic_variance / max(self.trials, 1))
        return self.analytic_mean_error - k * se, self.analytic_mean_error + k * se

    def summary(self) -> dict[str, float]:
        """Scalar figures for a table or a widget readout."""
        out = {
            "rel_error": self.rel_error,
            "abs_error": self.abs_error,
            "max_abs_row_mass_error": float(np.max(np.abs(self.row_mass_error))),
            "first_order_residual": float(np.max(np.abs(self.delta_o - self.delta_o_first_order))),
            "rms_bias": float(np.sqrt(np.mean(self.mc_mean_error ** 2))),
            "rms_nearest_error": float(np.sqrt(np.mean(self.delta_o_nearest ** 2))),
            "mean_mc_variance": float(np.mean(self.mc_variance)),
            "mean_analytic_variance": float(np.mean(self.analytic_variance)),
        }
        out["mc_to_analytic_variance"] = (out["mean_mc_variance"] / out["mean_analytic_variance"]
                                          if out["mean_analytic_variance"] > 0 else float("nan"))
        out["accumulation_error"] = self.accumulation_error
        if self.mc_mean_error_renorm is not None:
            out["rms_bias_renorm"] = float(np.sqrt(np.mean(self.mc_mean_error_renorm ** 2)))
        return out

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"config": dict(self.config), "summary": self.summary()}
        for name in ("probs", "probs_rounded", "decode_scale", "values", "values_rounded", "out_exact",
                     "out_rounded", "delta_p", "delta_o", "delta_o_first_order", "delta_o_nearest",
                     "row_mass_error", "mc_mean_error", "mc_variance", "analytic_mean_error",
                     "analytic_variance", "mc_mean_error_renorm", "mc_variance_renorm",
                     "renorm_bias_first_order"):
            value = getattr(self, name)
            out[name] = value
        out["rel_error"] = self.rel_error
        out["abs_error"] = self.abs_error
        out["accumulation_error"] = self.accumulation_error
        return out


class _Sums:
    """Σ x and Σ x² over trials, accumulated in float64, for samples centred near their mean
    (so the one-pass variance formula has no cancellation to fear)."""

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.n = 0
        self.s1 = np.zeros(shape)
        self.s2 = np.zeros(shape)

    def add(self, block: np.ndarray) -> None:
        self.n += block.shape[0]
        self.s1 += block.sum(axis=0, dtype=np.float64)
        self.s2 += np.square(block).sum(axis=0, dtype=np.float64)

    @property
    def mean(self) -> np.ndarray:
        return self.s1 / self.n

    @property
    def variance(self) -> np.ndarray:
        if self.n < 2:
            return np.zeros_like(self.s1)
        return np.maximum(self.s2 - self.s1 * self.s1 / self.n, 0.0) / (self.n - 1)


def run_attention(inputs: AttentionInputs, fmt: Any = "E4M3FN", rounding: str = "nearest_even", *,
                  scale: str = "none", trials: int = 200, v_format: Any = None,
                  renormalize: bool = False, masked_rows: str = "raise", seed: int = 0,
                  pv_accumulator: str = "exact", progress: ProgressFn | None = None) -> AttentionResult:
    """Round P (and V if `v_format`) and measure the error of O = P·V; see the module docstring."""
    if not isinstance(inputs, AttentionInputs):
        raise TypeError(f"inputs must be AttentionInputs (make_inputs(…) or three_probs_inputs()), "
                        f"got {type(inputs).__name__}")
    f = _check_format(fmt)
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding={rounding!r} is not one of {', '.join(map(repr, ROUNDINGS))}")
    trials = _positive_int("trials", trials, MAX_TRIALS)
    if not isinstance(renormalize, bool):
        raise TypeError(f"renormalize must be a bool, got {renormalize!r}")
    probs = softmax_probs(inputs.scores, inputs.mask, masked_rows=masked_rows)
    v = _real_array("values", inputs.values)
    if v.ndim != 2 or v.shape[0] != probs.shape[1]:
        raise ValueError(f"values must be keys × head_dim = {probs.shape[1]} × d, got shape {v.shape}")
    if not np.isfinite(v).all():
        raise ValueError("values contain non-finite entries")
    if v_format is None and pv_accumulator != "exact":
        v_format = f.name  # a tensor core multiplies V in an operand format: P's, unless v_format says
    if v_format is None:
        v_rounded = v
        v_name = None
    else:
        fv = get_format(v_format)
        v_rounded = decode(encode(v, fv, CastPolicy(overflow=Overflow.SATURATE)), fv).astype(np.float64)
        v_name = fv.name
    dv = v_rounded - v
    ds = _row_decode_scale(probs, f, scale)
    out_exact = probs @ v
    p_dv = probs @ dv  # the deterministic part of ΔO
    product = _pv_product(pv_accumulator, f, v_name, ds)

    p_nearest = round_probs(probs, f, "nearest_even", scale=scale)
    delta_o_nearest = product(p_nearest, v_rounded) - out_exact
    row_mass = probs.sum(axis=1)

    rng = np.random.Generator(np.random.SFC64(seed))
    n_q, n_k = probs.shape
    sums = _Sums(out_exact.shape)
    sums_renorm = _Sums(out_exact.shape) if renormalize else None
    if rounding == "nearest_even":
        # deterministic: every trial is the same rounding; mean = ΔO, variance 0
        p_tilde0 = p_nearest
        mc_mean, mc_var = delta_o_nearest, np.zeros_like(out_exact)
        if sums_renorm is not None:
            mass = p_nearest.sum(axis=1, keepdims=True)
            renorm = np.divide(p_nearest, mass, out=np.zeros_like(p_nearest), where=mass > 0)
            sums_renorm.add((renorm @ v_rounded - out_exact)[None])
        if progress is not None:
            progress(1, 1)
    else:
        lo, hi = _grid_neighbours(probs, f, ds)
        gap = hi - lo
        prob_up = np.divide(probs - lo, gap, out=np.zeros_like(probs), where=gap > 0)
        # Trials run in float32: ΔO_t = (lo − P)·Ṽ + P·ΔV + (U_t ⊙ gap)·Ṽ with U_t the up/down
        # choices; the deterministic part is added back in float64, and (U_t ⊙ gap)·Ṽ is centred on
        # its expectation (prob_up ⊙ gap)·Ṽ before the sums, so their variance formula is exact.
        # formats' stochastic-rounding rule: up iff 32 random bits < floor(2^32 · prob_up)
        threshold = np.minimum(np.floor(prob_up * 2.0 ** 32), 2.0 ** 32 - 1).astype(np.uint32)
        gap32 = gap.astype(np.float32)
        v32 = v_rounded.astype(np.float32)
        centre32 = ((prob_up * gap) @ v_rounded).astype(np.float32)
        p_tilde0 = np.empty(0)
        done = 0
        while done < trials:
            nb = min(max(1, _TRIAL_ELEMENTS // (n_q * n_k)), trials - done)
            bits = rng.bit_generator.random_raw((nb * n_q * n_k + 1) // 2).view(np.uint32)
            up = bits[: nb * n_q * n_k].reshape(nb, n_q, n_k) < threshold
            if done == 0:
                p_tilde0 = np.where(up[0], hi, lo)
            step32 = np.multiply(up, gap32, dtype=np.float32)
            x = (step32.reshape(nb * n_q, n_k) @ v32).reshape(nb, n_q, -1)
            x -= centre32
            sums.add(x)
            if sums_renorm is not None:  # float64: the renormalisation bias is tiny for wide formats
                p_tilde = np.where(up, hi, lo)
                mass = p_tilde.sum(axis=2, keepdims=True)
                renorm = np.divide(p_tilde, mass, out=np.zeros_like(p_tilde), where=mass > 0)
                o_renorm = (renorm.reshape(nb * n_q, n_k) @ v_rounded).reshape(nb, n_q, -1)
                sums_renorm.add(o_renorm - out_exact)
            done += nb
            if progress is not None:
                progress(done, trials)
        mc_mean, mc_var = p_dv + sums.mean, sums.variance
    delta_p = p_tilde0 - probs
    out_rounded = product(p_tilde0, v_rounded)
    accumulation_error = float(np.max(np.abs(out_rounded - p_tilde0 @ v_rounded))) if pv_accumulator != "exact" else 0.0
    delta_o = out_rounded - out_exact
    norm_o = float(np.linalg.norm(out_exact))
    if rounding == "stochastic":
        var_e = stochastic_variance(probs, f, scale=scale)
        analytic_var = var_e @ (v_rounded ** 2)
        analytic_mean = p_dv
    else:
        var_e = np.zeros_like(probs)
        analytic_var = np.zeros_like(out_exact)
        analytic_mean = delta_o_nearest
    renorm_pred = None
    if renormalize:
        total_var = var_e.sum(axis=1, keepdims=True)
        renorm_pred = (probs * total_var - var_e) @ v_rounded
    config = {
        "format": f.name, "rounding": rounding, "scale": scale, "trials": trials,
        "v_format": v_name, "renormalize": renormalize, "masked_rows": masked_rows, "seed": seed,
        "pv_accumulator": pv_accumulator,
        "queries": int(probs.shape[0]), "keys": int(probs.shape[1]), "head_dim": int(v.shape[1]),
        "inputs": dict(inputs.description), "rel_error_floor": REL_ERROR_FLOOR,
    }
    return AttentionResult(
        config=config, probs=probs, probs_rounded=p_tilde0, decode_scale=ds, values=v,
        values_rounded=v_rounded, out_exact=out_exact, out_rounded=out_rounded, delta_p=delta_p,
        delta_o=delta_o, delta_o_first_order=delta_p @ v + probs @ dv,
        delta_o_nearest=delta_o_nearest, row_mass_error=p_tilde0.sum(axis=1) - row_mass,
        rel_error=float(np.linalg.norm(delta_o)) / max(norm_o, REL_ERROR_FLOOR),
        abs_error=float(np.max(np.abs(delta_o))),
        mc_mean_error=mc_mean, mc_variance=mc_var,
        analytic_mean_error=analytic_mean, analytic_variance=analytic_var,
        mc_mean_error_renorm=None if sums_renorm is None else sums_renorm.mean,
        mc_variance_renorm=None if sums_renorm is None else sums_renorm.variance,
        renorm_bias_first_order=renorm_pred, accumulation_error=accumulation_error,
    )


def _pv_product(name: str, f: FloatFormat, v_format: str | None, ds: np.ndarray) -> Any:
    """P̃·Ṽ as the named accumulator computes it (a function of P̃ and Ṽ; see the module docstring)."""
    from ..framework.knobs import ACCUMULATOR_CHOICES

    if name not in ACCUMULATOR_CHOICES:
        raise ValueError(f"pv_accumulator must be one of {', '.join(ACCUMULATOR_CHOICES)}, got {name!r}")
    if name == "exact":
        return lambda p, v: p @ v
    assert v_format is not None  # run_attention rounds V to P's format for a tensor core
    from ..gemm.accumulators import ACCUMULATORS, accumulate, dense_instruction

    acc = ACCUMULATORS[name]
    assert acc.arch is not None
    dense_instruction(acc.arch, f, v_format)  # a pair the architecture cannot multiply: ValueError naming it

    def product(p: np.ndarray, v: np.ndarray) -> np.ndarray:
        codes = np.asarray(formats.quantize(p / ds[:, None], f), np.float64)  # P̃'s code values
        return accumulate(codes, v, name, f, v_format) * ds[:, None]

    return product


def three_probs_inputs() -> AttentionInputs:
    """The "three_probs" preset: one query over three keys with softmax THREE_PROBS = [0.6, 0.3, 0.1]
    (scores = log P) and V = THREE_VALUES = [0, 2, 10] (head dim 1)."""
    scores = np.log(np.array([THREE_PROBS], dtype=np.float64))
    values = np.array(THREE_VALUES, dtype=np.float64).reshape(3, 1)
    return AttentionInputs(scores, values, None, {"preset": "three_probs"})


@config_record
class AttentionConfig:
    """The attention-rounding simulation's parameters."""

    format: str = knob("E4M3FN", "format P is rounded to", choices=ATTENTION_FORMATS)
    rounding: str = knob("nearest_even", "round to nearest (ties to even) or stochastic rounding", choices=ROUNDINGS)
    scale: str = knob("none", "'row': divide each row by decode_scale = row_amax / F before rounding", choices=SCALES)
    seq: int = knob(128, "sequence length: queries = keys (random preset)", bounds=(1, 2048), widget="input")
    temperature: float = knob(1.0, "softmax temperature, scores = N(0, 1) / temperature: lower concentrates "
                                   "each row on fewer keys (random preset)", bounds=(0.01, 100.0), widget="input")
    trials: int = knob(200, "Monte-Carlo trials of stochastic rounding", bounds=(1, MAX_TRIALS), widget="input")
    renormalize: bool = knob(False, "also renormalise each rounded row to sum 1 (shows its bias)")
    preset: str = knob("random", "'random' scores, or one query with P = [0.6, 0.3, 0.1] over V = [0, 2, 10]",
                       choices=PRESETS)
    seed: int = knob(0, "seed of the inputs (the rounding uses seed + 1)", bounds=(0, 2**31 - 2), widget="input")
    head_dim: int = knob(64, "head dimension: columns of V (random preset)", bounds=(1, 1024), widget="input")
    v_outlier_fraction: float = knob(0.0, "fraction of V's elements scaled by v_outlier_scale (random preset)",
                                     bounds=(0.0, 1.0))
    v_outlier_scale: float = knob(20.0, "factor of V's outlier elements (random preset)", bounds=(-1e6, 1e6),
                                  widget="input")
    mask: str = knob("none", "attention mask: none, or causal (query i attends to keys 0..i; random preset)",
                     choices=MASKS)
    v_format: str = knob(NO_V_FORMAT, "also round V (nearest-even) in this format; none: V exact",
                         choices=(NO_V_FORMAT,) + ATTENTION_FORMATS)
    pv_accumulator: str = accumulator_knob("how P·V is accumulated: exact, or the bit-exact tensor-core model "
                                           "(hopper: the whole K in the tensor core; hopper_promote128: promoted "
                                           "to FP32 every 128; blackwell); a tensor core rounds V to v_format, or to "
                                           "P's format when v_format is none")

    def __post_init__(self) -> None:
        if self.pv_accumulator == "exact":
            return
        from ..gemm.accumulators import ACCUMULATORS, dense_instruction

        arch = ACCUMULATORS[self.pv_accumulator].arch
        assert arch is not None
        try:
            dense_instruction(arch, self.format, self.format if self.v_format == NO_V_FORMAT else self.v_format)
        except ValueError as exc:
            raise ConfigError("pv_accumulator", str(exc)) from None

    def inputs(self) -> AttentionInputs:
        """The scores and values these parameters describe."""
        if self.preset == "three_probs":
            return three_probs_inputs()
        return make_inputs(self.seq, self.head_dim, temperature=self.temperature,
                           v_outlier_fraction=self.v_outlier_fraction, v_outlier_scale=self.v_outlier_scale,
                           mask=self.mask, seed=self.seed)

    def cost(self) -> Cost:
        q = 1 if self.preset == "three_probs" else self.seq
        d = 1 if self.preset == "three_probs" else self.head_dim
        trials = self.trials if self.rounding == "stochastic" else 1
        # a tensor-core P·V: two products (nearest, trial 0) through the model, K padded to 32,
        # at the model's conservative 40 M multiply-adds per second (simulations.gemm.core.MODEL_RATE)
        tensor_core = 0.0 if self.pv_accumulator == "exact" else 2 * q * (q + 31) * d / 40e6
        return Cost(bytes=q * q * 8 * 24.0 + min(q * q * trials, _TRIAL_ELEMENTS) * 16.0,
                    # per trial and entry: the product's share (d MACs) and the draw and compare of
                    # stochastic rounding (3e-8 s: measured, issue 16, the machine at load ≈ 3.5 / 2 cores
                    # scaled to a quiet core)
                    seconds=trials * q * q * (d * 2e-10 + (3e-8 if trials > 1 else 0.0)) + q * q * 2e-7 + tensor_core,
                    note=f"{trials} trial(s) of a {q}×{q} by {q}×{d} product")


def run_attention_config(config: AttentionConfig, *, progress: ProgressFn | None = None) -> AttentionResult:
    """The experiment `config` describes: its inputs (`seed`), rounded with seed + 1."""
    if not isinstance(config, AttentionConfig):
        raise TypeError(f"config must be an AttentionConfig, got {type(config).__name__}")
    v_format = None if config.v_format == NO_V_FORMAT else config.v_format
    result = run_attention(config.inputs(), config.format, config.rounding, scale=config.scale, trials=config.trials,
                           v_format=v_format, renormalize=config.renormalize, seed=config.seed + 1,
                           pv_accumulator=config.pv_accumulator, progress=progress)
    return replace(result, config={**result.config, "parameters": config_values(config)})


def simulate_attention(seq: int | AttentionConfig | None = None, head_dim: int | None = None,
                       format: str | None = None, rounding: str | None = None, *,
                       progress: ProgressFn | None = None, **knobs: Any) -> AttentionResult:
    """`run_attention_config` for an AttentionConfig, or for one made of parameters named as its
    fields (the first four may be positional: `simulate_attention(128, 64, "E4M3FN", "stochastic",
    trials=200)`); parameters left out take the record's defaults."""
    if isinstance(seq, AttentionConfig):
        if head_dim is not None or format is not None or rounding is not None or knobs:
            raise TypeError("give an AttentionConfig or keyword parameters, not both")
        return run_attention_config(seq, progress=progress)
    given = {"seq": seq, "head_dim": head_dim, "format": format, "rounding": rounding}
    values = {k: v for k, v in given.items() if v is not None}
    return run_attention_config(from_mapping(AttentionConfig, {**values, **knobs}), progress=progress)


def summary_lines(result: AttentionResult) -> list[str]:
    if not isinstance(result, AttentionResult):
        raise TypeError(f"result must be an AttentionResult, got {type(result).__name__}")
    return [f"{key}: {value:.6g}" for key, value in result.summary().items()]


# ------------------------------------------------------------------------------------------------
# the deterministic worked example
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProductExample:
    """P on a uniform grid of step `grid_step`, times V: the information lost before accumulation."""

    probs: list[float]
    probs_rounded: list[float]
    values: list[float]
    grid_step: float
    exact_product: Fraction
    rounded_product: Fraction  # Σ P̃_j V_j accumulated exactly (Fractions)

    def to_dict(self) -> dict[str, Any]:
        return {"probs": list(self.probs), "probs_rounded": list(self.probs_rounded),
                "values": list(self.values), "grid_step": self.grid_step,
                "exact_product": float(self.exact_product),
                "rounded_product": float(self.rounded_product)}


def _exact_numbers(name: str, texts: Any) -> list[Fraction]:
    """Decimal strings (or finite numbers) as exact fractions; ValueError/TypeError naming `name`."""
    if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
        raise TypeError(f"{name} must be a sequence of decimal strings such as ('0.6', '0.3'), got {texts!r:.60}")
    out = []
    for s in texts:
        if isinstance(s, bool) or not isinstance(s, (str, int, float, Fraction)):
            raise TypeError(f"{name}: {s!r:.60} is not a decimal string or a number")
        try:
            out.append(Fraction(s))
        except (ValueError, OverflowError, ZeroDivisionError):
            raise ValueError(f"{name}: {s!r:.60} is not a finite decimal number") from None
    return out


def attention_product_example(probs: Sequence[str] = ("0.6", "0.3", "0.1"),
                              values: Sequence[str] = ("0", "2", "10"),
                              grid_step: float = 0.25) -> ProductExample:
    """Round P to multiples of `grid_step` (an INT8 grid times the step, nearest-even via `formats`)
    and compare P·V with P̃·V, both summed exactly. Inputs are decimal strings so the exact product is
    the decimal one (0.6·0 + 0.3·2 + 0.1·10 = 8/5)."""
    p_exact = _exact_numbers("probs", probs)
    v_exact = _exact_numbers("values", values)
    if len(p_exact) != len(v_exact) or not p_exact:
        raise ValueError(f"probs and values must be non-empty and of equal length, got "
                         f"{len(p_exact)} and {len(v_exact)}")
    step = _finite_float("grid_step", grid_step, positive=True)
    p_float = np.array([float(p) for p in p_exact])
    codes = encode(p_float / step, get_format("INT8"), CastPolicy(overflow=Overflow.SATURATE))
    p_rounded = decode(codes, "INT8").astype(np.float64) * step
    exact = sum((p * v for p, v in zip(p_exact, v_exact)), Fraction(0))
    rounded = sum((Fraction(float(p)) * v for p, v in zip(p_rounded, v_exact)), Fraction(0))
    return ProductExample([float(p) for p in p_float], [float(p) for p in p_rounded],
                          [float(v) for v in v_exact], step, exact, rounded)


SIMULATION: Simulation[AttentionConfig, AttentionResult] = Simulation(
    name="attention",
    help="round softmax probabilities and measure the output error",
    config=AttentionConfig,
    run=lambda cfg, progress: run_attention_config(cfg, progress=progress),
    summary=summary_lines,
    html_help="write standalone HTML plots of ΔP, ΔO, variance and bias (open offline)",
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
