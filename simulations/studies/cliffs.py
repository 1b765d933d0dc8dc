"""Precision cliffs: small, exact demonstrations of where low-precision arithmetic loses information.

Owns absorption (a representable addend that vanishes in a sum; weight updates that stall in a
low-precision weight while an FP32 master copy keeps them), softmax saturation (a probability that
rounds to exactly 1, so p − y loses its small negative gradient; the cancellation-aware form
−Σ_{k≠y} e_k / Σ_k e_k that keeps it), tie flips (a midpoint between neighbours and the tiny
perturbation that moves it across), fake quantization with the straight-through estimator, and loss
scaling against per-tensor scaling. Every operation "in a format" is one correctly rounded IEEE
operation: the exact result rounded once by `formats.encode` with round-to-nearest-even (sums are
formed exactly by rounding to odd in float64 first, which is innocuous for targets of at most 51
significand bits [Boldo & Melquiond, "Emulation of FMA and correctly rounded sums: proved
algorithms using rounding to odd", IEEE TC 2008]; quotients and exponentials are computed in float64
and then rounded, a double rounding that can differ from one correct rounding in the last place).
Fake quantization follows PyTorch's affine rule q = clamp(round_half_even(x / s) + z, qmin, qmax),
x̂ = (q − z)·s, with gradient 1 where round(x / s) + z lies in [qmin, qmax] and 0 elsewhere.
"""

from __future__ import annotations

import math
import sys
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import numpy as np

from lowprec.formats import CastPolicy, FloatFormat, Overflow, as_float_array, code_table, decode, encode, get_format

from ..framework.io import ArgumentParser, check_output_path, error_exit, write_json

# ------------------------------------------------------------------------------------------------
# correctly rounded arithmetic in a format
# ------------------------------------------------------------------------------------------------


def _float_format(fmt: Any) -> FloatFormat:
    f = get_format(fmt)
    if not isinstance(f, FloatFormat) or not f.signed:
        raise ValueError(f"{f} is not a signed floating-point format; use e.g. FP32, BF16, FP16")
    return f


def round_to(x: Any, fmt: Any) -> np.ndarray:
    """x rounded to `fmt` (nearest-even, overflow to Inf/NaN as IEEE), returned as float64."""
    f = _float_format(fmt)
    return decode(encode(as_float_array(x, "x").astype(np.float64), f), f).astype(np.float64)


def exact_sum_round_to_odd(a: Any, b: Any) -> np.ndarray:
    """a + b in float64 rounded to odd: exact when representable, else the neighbour with an odd last
    bit. Rounding that to a format with at most 51 significand bits equals rounding a + b once."""
    a64 = as_float_array(a, "a").astype(np.float64)  # object/text arrays: TypeError naming the operand
    b64 = as_float_array(b, "b").astype(np.float64)
    s = a64 + b64
    bb = s - a64
    err = (a64 - (s - bb)) + (b64 - bb)  # TwoSum: a + b = s + err exactly
    odd = (np.asarray(s).view(np.int64) & 1) == 1
    fix = (err != 0) & ~odd
    return np.where(fix, np.nextafter(s, np.where(err > 0, np.inf, -np.inf)), s)


def add_in(a: Any, b: Any, fmt: Any) -> np.ndarray:
    """fl(a + b) in `fmt`: the exact sum rounded once (nearest-even)."""
    return round_to(exact_sum_round_to_odd(a, b), fmt)


def _neighbour(value: float, f: FloatFormat, direction: int) -> float:
    """The next representable value above (direction=+1) or below (-1) a representable value."""
    code = int(encode(np.array([value]), f)[0])
    sign_bit = 1 << f.sign_shift
    magnitude = code & ~sign_bit
    negative = bool(code & sign_bit)
    if value == 0:
        return float(decode(np.array([1 if direction > 0 else sign_bit | 1], dtype=f.code_dtype), f)[0])
    step = direction if not negative else -direction
    new = (code & sign_bit) | (magnitude + step)
    return float(decode(np.array([new], dtype=f.code_dtype), f)[0])


# ------------------------------------------------------------------------------------------------
# absorption and stalled updates
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class AbsorptionResult:
    """base + x in `format`: whether x vanishes, and the threshold below which any addend does."""

    format: str
    base: float
    x: float
    x_in_format: float  # x cast alone (nonzero: x is representable-ish, not underflowing)
    total: float  # fl(base + x)
    absorbed: bool  # fl(base + x) == base although x_in_format != 0
    threshold: float  # half the gap above base: fl(base + x) == base for every 0 ≤ x ≤ threshold
    gap_above: float  # next representable value above base, minus base

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def absorption(fmt: Any = "FP32", x: float = 1e-8, base: float = 1.0) -> AbsorptionResult:
    """Add a small positive x to a representable positive base in `fmt` (RNE). At exactly
    half the gap the sum is a tie and goes to base when base's code is even (as for 1.0)."""
    f = _float_format(fmt)
    if not (math.isfinite(base) and base > 0 and float(round_to(base, f)) == base):
        raise ValueError(f"base={base!r} must be a positive value representable in {f.name}")
    if not (math.isfinite(x) and x >= 0):
        raise ValueError(f"x={x!r} must be a finite non-negative number")
    gap = _neighbour(base, f, +1) - base
    total = float(add_in(base, x, f))
    x_in = float(round_to(x, f))
    return AbsorptionResult(f.name, base, x, x_in, total, total == base and x_in != 0, gap / 2, gap)


@dataclass(frozen=True)
class StallResult:
    """Repeated w ← w − lr·g in a low-precision weight versus an FP32 master weight."""

    weight_format: str
    master_format: str
    weight: float
    grad: float
    steps: int
    lrs: np.ndarray
    update: np.ndarray  # lr·g rounded to the master format (the update actually applied)
    change_exact: np.ndarray  # steps · update
    change_low: np.ndarray  # w0 − w after `steps` updates applied to the low-precision weight
    change_master: np.ndarray  # w0 − master after `steps` updates (FP32)
    change_master_cast: np.ndarray  # w0 − (master cast to the weight format)
    stalled: np.ndarray  # change_low == 0
    stall_threshold: float  # an update ≤ this never moves the low-precision weight (half gap below w0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        return out


def update_stall_sweep(lrs: Any = None, *, grad: float = 1.0, weight: float = 1.0, steps: int = 100,
                       weight_format: Any = "BF16", master_format: Any = "FP32") -> StallResult:
    """For each learning rate, `steps` SGD updates w ← fl(w − fl32(lr·g)) applied to a weight stored in
    `weight_format`, and the same updates accumulated in an FP32 master weight."""
    fw, fm = _float_format(weight_format), _float_format(master_format)
    lr_arr = np.logspace(-6, -1, 26) if lrs is None else np.asarray(lrs, dtype=np.float64).reshape(-1)
    if lr_arr.size == 0 or not np.all(np.isfinite(lr_arr)) or np.any(lr_arr <= 0):
        raise ValueError("lrs must be a non-empty array of positive finite learning rates")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0:
        raise ValueError(f"steps must be a positive integer, got {steps!r}")
    if not (math.isfinite(grad) and grad > 0):
        raise ValueError(f"grad={grad!r} must be positive and finite (the weight moves down)")
    w0 = float(round_to(weight, fw))
    if w0 != weight or w0 <= 0:
        raise ValueError(f"weight={weight!r} must be a positive value representable in {fw.name}")
    update = round_to(lr_arr * grad, fm)
    low = np.full(lr_arr.shape, w0)
    master = np.full(lr_arr.shape, w0)
    for _ in range(steps):
        low = add_in(low, -update, fw)
        master = add_in(master, -update, fm)
    threshold = (w0 - _neighbour(w0, fw, -1)) / 2
    return StallResult(fw.name, fm.name, w0, grad, steps, lr_arr, update, steps * update, w0 - low,
                       w0 - master, w0 - round_to(master, fw), (w0 - low) == 0, threshold)


# ------------------------------------------------------------------------------------------------
# softmax saturation
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SaturationResult:
    """Cross-entropy gradient p − y with softmax computed op by op in `format`."""

    format: str
    logits: list[float]
    target: int
    probs: list[float]  # p_k = fl(e_k / S) in the format
    grad_naive: list[float]  # fl(p − y)
    grad_rewritten: list[float]  # p_k for k ≠ y; −fl(fl(Σ_{k≠y} e_k) / S) for k = y
    grad_reference: list[float]  # float64: −(Σ_{k≠y} e_k)/S and e_k/S
    saturated: bool  # the target's probability rounded to exactly 1

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def saturating_logits(fmt: Any, n_classes: int = 3) -> list[float]:
    """[d, 0, …, 0] with d the smallest integer gap for which the other classes' mass
    (n − 1)·e^−d is below eps/4, half the spacing below 1, so the top probability rounds to 1."""
    f = _float_format(fmt)
    if isinstance(n_classes, bool) or not isinstance(n_classes, int) or n_classes < 2:
        raise ValueError(f"n_classes must be an integer ≥ 2, got {n_classes!r}")
    d = math.floor(math.log((n_classes - 1) * 4 / f.eps)) + 1
    return [float(d)] + [0.0] * (n_classes - 1)


def softmax_saturation(fmt: Any = "FP32", logits: Sequence[float] | None = None,
                       target: int = 0) -> SaturationResult:
    """Softmax and its cross-entropy gradient for one example, every operation rounded to `fmt`:
    e_k = fl(exp(z_k − max z)), S = fl(Σ e_k) summed left to right, p_k = fl(e_k / S)."""
    f = _float_format(fmt)
    z = np.asarray(saturating_logits(f) if logits is None else logits, dtype=np.float64).reshape(-1)
    if z.size < 2 or not np.all(np.isfinite(z)):
        raise ValueError("logits must hold at least two finite values")
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < z.size:
        raise ValueError(f"target={target!r} must be a class index in [0, {z.size - 1}]")
    zf = round_to(z, f)
    e = round_to(np.exp(zf - zf.max()), f)
    total = 0.0
    others = 0.0
    for k in range(z.size):
        total = float(add_in(total, e[k], f))
        if k != target:
            others = float(add_in(others, e[k], f))
    p = round_to(e / total, f)
    y = np.zeros_like(p)
    y[target] = 1.0
    naive = add_in(p, -y, f)
    rewritten = p.copy()
    rewritten[target] = -float(round_to(others / total, f))
    e64 = np.exp(zf - zf.max())
    ref = e64 / math.fsum(e64)
    ref[target] = -math.fsum(np.delete(e64, target)) / math.fsum(e64)
    return SaturationResult(f.name, zf.tolist(), target, p.tolist(), naive.tolist(), rewritten.tolist(),
                            ref.tolist(), bool(p[target] == 1.0))


# ------------------------------------------------------------------------------------------------
# tie flips
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TieFlipResult:
    """The midpoint between `lower` and the next value up, rounded with and without a perturbation."""

    format: str
    lower: float
    upper: float
    lower_code: int
    lower_is_even: bool  # last mantissa bit of lower's code is 0
    midpoint: float
    rounded_midpoint: float  # ties-to-even: lower if lower is even, else upper
    perturbation: float
    rounded_plus: float  # fl(midpoint + perturbation)
    rounded_minus: float  # fl(midpoint − perturbation)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tie_flip(fmt: Any = "BF16", lower: float = 1.0, perturbation: float = 2.0 ** -16) -> TieFlipResult:
    """Round the midpoint of two neighbours, then the midpoint ± a perturbation (sums exact)."""
    f = _float_format(fmt)
    if not math.isfinite(lower) or float(round_to(lower, f)) != lower:
        raise ValueError(f"lower={lower!r} must be a finite value representable in {f.name}")
    if not (math.isfinite(perturbation) and perturbation > 0):
        raise ValueError(f"perturbation={perturbation!r} must be positive and finite")
    upper = _neighbour(lower, f, +1)
    if not math.isfinite(upper):
        raise ValueError(f"lower={lower!r} is the largest finite value of {f.name}; no tie above it")
    code = int(encode(np.array([lower]), f)[0])
    mid = float(exact_sum_round_to_odd(lower, (upper - lower) / 2))  # exact: a few bits wider than f
    return TieFlipResult(f.name, lower, upper, code, code % 2 == 0, mid, float(round_to(mid, f)),
                         perturbation, float(add_in(mid, perturbation, f)),
                         float(add_in(mid, -perturbation, f)))


@dataclass(frozen=True)
class TiePoints:
    """Every midpoint between neighbouring positive values of a format inside [lo, hi]."""

    format: str
    lower: np.ndarray  # the neighbour below each midpoint
    upper: np.ndarray  # the neighbour above
    midpoint: np.ndarray
    rounds_up: np.ndarray  # ties-to-even sends the midpoint to `upper` (lower's code is odd)

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "lower": self.lower.tolist(), "upper": self.upper.tolist(),
                "midpoint": self.midpoint.tolist(), "rounds_up": self.rounds_up.tolist()}


def tie_points(fmt: Any, lo: float, hi: float, *, limit: int = 4096) -> TiePoints:
    """For any format of up to 16 bits: the midpoints in [lo, hi] (0 < lo < hi), where an input
    perturbation of any size flips the output bin, and which way ties-to-even sends each."""
    f = _float_format(fmt)
    if f.bits > 16:
        raise ValueError(f"{f.name} has {f.bits}-bit codes; tie_points lists formats up to 16 bits")
    if not (math.isfinite(lo) and math.isfinite(hi) and 0 < lo < hi):
        raise ValueError(f"need 0 < lo < hi, both finite; got lo={lo!r}, hi={hi!r}")
    table = code_table(f)
    pos = np.isfinite(table.value) & (table.value > 0) & (table.sign == 0)
    values = table.value[pos]
    codes = table.codes[pos]
    order = np.argsort(values)
    values, codes = values[order], codes[order]
    mids = (values[:-1] + values[1:]) / 2  # exact in float64 for formats of ≤ 16 bits
    keep = (mids >= lo) & (mids <= hi)
    if int(keep.sum()) > limit:
        raise ValueError(f"{int(keep.sum())} midpoints in [{lo}, {hi}] exceed limit={limit}")
    lower, upper = values[:-1][keep], values[1:][keep]
    return TiePoints(f.name, lower, upper, mids[keep], (codes[:-1][keep] % 2) == 1)


def flip_sensitive(x: Any, fmt: Any, perturbation: float) -> np.ndarray:
    """For any format: True where x ± perturbation rounds to a different value than x (the inputs
    within `perturbation` of a rounding boundary, i.e. of a midpoint under nearest rounding)."""
    f = _float_format(fmt)
    if not (math.isfinite(perturbation) and perturbation >= 0):
        raise ValueError(f"perturbation={perturbation!r} must be finite and non-negative")
    xs = np.asarray(x, dtype=np.float64)
    here = round_to(xs, f)
    up = add_in(xs, perturbation, f)
    down = add_in(xs, -perturbation, f)
    return (up != here) | (down != here)


# ------------------------------------------------------------------------------------------------
# fake quantization and the straight-through estimator
# ------------------------------------------------------------------------------------------------


def _check_quant_params(scale: Any, zero_point: Any, qmin: int, qmax: int) -> np.ndarray:
    s = np.asarray(scale, dtype=np.float64)
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise ValueError(f"scale must be positive and finite, got {scale!r}")
    for name, v in (("qmin", qmin), ("qmax", qmax)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {v!r}")
    if qmin >= qmax:
        raise ValueError(f"qmin={qmin} must be below qmax={qmax}")
    z = np.asarray(zero_point)
    if z.dtype.kind not in "iu":
        raise TypeError(f"zero_point must be an integer (or integer array), got {zero_point!r}")
    if np.any(z < qmin) or np.any(z > qmax):
        raise ValueError(f"zero_point={zero_point!r} must lie in [qmin, qmax] = [{qmin}, {qmax}]")
    return s


def fake_quant_scalar(x: float, scale: float, zero_point: int = 0, qmin: int = -7, qmax: int = 7) -> float:
    """The readable one-value rule: q = clamp(round(x / s) + z, qmin, qmax); return (q − z)·s.
    Python's round() is round-half-to-even."""
    _check_quant_params(scale, zero_point, qmin, qmax)
    q = min(max(round(x / scale) + zero_point, qmin), qmax)
    return (q - zero_point) * scale


def fake_quant(x: Any, scale: Any, zero_point: Any = 0, qmin: int = -7, qmax: int = 7) -> np.ndarray:
    """Tensor fake quantization (float64); scale and zero_point broadcast against x (e.g. one per
    channel with shape (C, 1))."""
    s = _check_quant_params(scale, zero_point, qmin, qmax)
    xs = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(xs)):
        raise ValueError("x contains non-finite values")
    z = np.asarray(zero_point, dtype=np.float64)
    q = np.clip(np.rint(xs / s) + z, qmin, qmax)
    return (q - z) * s


def fake_quant_grad_mask(x: Any, scale: Any, zero_point: Any = 0, qmin: int = -7,
                         qmax: int = 7) -> np.ndarray:
    """Straight-through estimator: d x̂ / d x ≈ 1 where round(x / s) + z ∈ [qmin, qmax], else 0."""
    s = _check_quant_params(scale, zero_point, qmin, qmax)
    xs = np.asarray(x, dtype=np.float64)
    q = np.rint(xs / s) + np.asarray(zero_point, dtype=np.float64)
    return (q >= qmin) & (q <= qmax)


@dataclass(frozen=True)
class QatFitResult:
    """Gradient descent on a linear regression whose weights pass through fake quantization."""

    steps: int
    scale: float
    qmin: int
    qmax: int
    loss: np.ndarray  # per step, with fake-quantized weights
    loss_float: np.ndarray  # the same descent without quantization
    clipped_fraction: np.ndarray  # per step: fraction of weights outside the unclipped range
    w_true: np.ndarray
    w_latent: np.ndarray  # final float weights
    w_quantized: np.ndarray  # fake_quant(w_latent)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in asdict(self).items():
            out[k] = v.tolist() if isinstance(v, np.ndarray) else v
        return out


def qat_linear_fit(n_samples: int = 256, n_features: int = 8, steps: int = 200, lr: float = 0.1,
                   scale: float = 0.25, qmin: int = -7, qmax: int = 7, seed: int = 0) -> QatFitResult:
    """Fit y = X·w_true + noise with loss ½·mean((X·x̂(w) − y)²), gradient through the STE. One true
    weight (3.0) lies beyond the grid's reach ((qmax + ½)·s = 1.875 for the defaults), so its latent
    weight walks out of the unclipped range and then receives zero gradient."""
    for name, v in (("n_samples", n_samples), ("n_features", n_features), ("steps", steps)):
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not (math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr={lr!r} must be positive and finite")
    _check_quant_params(scale, 0, qmin, qmax)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_samples, n_features))
    w_true = rng.uniform(-1.0, 1.0, n_features)
    w_true[0] = 3.0
    y = x @ w_true + 0.1 * rng.standard_normal(n_samples)
    w = np.zeros(n_features)
    w_f = np.zeros(n_features)
    loss, loss_f, clipped = np.empty(steps), np.empty(steps), np.empty(steps)
    for t in range(steps):
        w_hat = fake_quant(w, scale, 0, qmin, qmax)
        r = x @ w_hat - y
        loss[t] = 0.5 * float(np.mean(r ** 2))
        mask = fake_quant_grad_mask(w, scale, 0, qmin, qmax)
        clipped[t] = 1.0 - float(np.mean(mask))
        w = w - lr * (x.T @ r / n_samples) * mask
        r_f = x @ w_f - y
        loss_f[t] = 0.5 * float(np.mean(r_f ** 2))
        w_f = w_f - lr * (x.T @ r_f / n_samples)
    return QatFitResult(steps, float(scale), qmin, qmax, loss, loss_f, clipped, w_true, w,
                        fake_quant(w, scale, 0, qmin, qmax))


# ------------------------------------------------------------------------------------------------
# loss scaling versus tensor scaling
# ------------------------------------------------------------------------------------------------

DEFAULT_GRADIENTS: tuple[tuple[str, float, float], ...] = (
    # (name, log10 of the median magnitude, log10 spread (standard deviation))
    ("embedding.grad", -9.0, 0.5),
    ("attention.grad", -5.0, 0.5),
    ("mlp.grad", -1.0, 0.5),
)


@dataclass(frozen=True)
class ScalingComparison:
    """Per gradient tensor and per method: the fractions lost and the error after the round trip."""

    format: str
    methods: list[str]  # "none", "loss_scale", "tensor_scale"
    tensors: list[str]
    loss_scale: float  # one power of two for all tensors: the largest with global amax·S ≤ max
    tensor_scales: list[float]  # encode_scale = fmt.max / amax per tensor (decode_scale = 1/that)
    underflow_fraction: dict[str, list[float]]  # nonzero values that became 0, per method
    overflow_fraction: dict[str, list[float]]  # values beyond ±max once scaled (saturated to ±max)
    rms_rel_error: dict[str, list[float]]  # sqrt(mean(((x̂ − x)/x)²)) over all values

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def scaling_comparison(fmt: Any = "E5M2", gradients: Sequence[tuple[str, float, float]] = DEFAULT_GRADIENTS,
                       n: int = 4096, seed: int = 0) -> ScalingComparison:
    """Cast log-normal gradients (random signs) to `fmt` three ways: as they are; multiplied by one
    loss scale S = 2^k (the largest k with S·amax_global ≤ max), cast, divided by S; and with one
    encode scale per tensor (max / amax). Loss scaling shifts the whole gradient out of underflow;
    only per-tensor scales fit tensors whose ranges are further apart than the format spans."""
    f = _float_format(fmt)
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if not gradients:
        raise ValueError("gradients must list at least one (name, log10_median, log10_spread)")
    rng = np.random.default_rng(seed)
    data = []
    for name, centre, spread in gradients:
        if not (math.isfinite(centre) and math.isfinite(spread) and spread >= 0):
            raise ValueError(f"gradient {name!r}: centre and spread must be finite, spread ≥ 0")
        mags = 10.0 ** (centre + spread * rng.standard_normal(n))
        data.append(mags * rng.choice([-1.0, 1.0], n))
    amax_global = max(float(np.max(np.abs(d))) for d in data)
    k = math.floor(math.log2(f.max / amax_global))
    loss_scale = 2.0 ** k
    while loss_scale * amax_global > f.max:  # guard against log2 rounding
        loss_scale /= 2
    sat = CastPolicy(overflow=Overflow.SATURATE)
    methods = ["none", "loss_scale", "tensor_scale"]
    under: dict[str, list[float]] = {m: [] for m in methods}
    over: dict[str, list[float]] = {m: [] for m in methods}
    rel: dict[str, list[float]] = {m: [] for m in methods}
    tensor_scales = []
    for d in data:
        amax = float(np.max(np.abs(d)))
        encode_scale = f.max / amax
        tensor_scales.append(encode_scale)
        for m, es in (("none", 1.0), ("loss_scale", loss_scale), ("tensor_scale", encode_scale)):
            codes = encode(d * es, f, sat)
            back = decode(codes, f).astype(np.float64) / es
            under[m].append(float(np.mean(back == 0)))
            over[m].append(float(np.mean(np.abs(d * es) > f.max)))
            rel[m].append(float(np.sqrt(np.mean(((back - d) / d) ** 2))))
    return ScalingComparison(f.name, methods, [g[0] for g in gradients], loss_scale, tensor_scales,
                             under, over, rel)


# ------------------------------------------------------------------------------------------------
# python -m lowprec.simulations.studies.cliffs
# ------------------------------------------------------------------------------------------------


def all_cliffs() -> dict[str, Any]:
    """Every demonstration with its defaults, as JSON-ready data."""
    return {
        "absorption": [absorption(f).to_dict() for f in ("FP32", "BF16", "FP16")],
        "update_stall": update_stall_sweep().to_dict(),
        "softmax_saturation": [softmax_saturation(f).to_dict() for f in ("FP32", "BF16", "FP16")],
        "tie_flip": [tie_flip("BF16", 1.0).to_dict(), tie_flip("BF16", 1.0 + 2 ** -7).to_dict()],
        "fake_quant": {"0.6": fake_quant_scalar(0.6, 0.25), "2.0": fake_quant_scalar(2.0, 0.25)},
        "qat_fit": qat_linear_fit().to_dict(),
        "scaling": scaling_comparison().to_dict(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m lowprec.simulations.studies.cliffs`: every demonstration with its defaults (no parameters),
    as strict JSON to --json (default: stdout)."""
    parser = ArgumentParser(prog="python -m lowprec.simulations.studies.cliffs",
                            description="Precision cliffs, each with its defaults; writes JSON.")
    parser.add_argument("--json", metavar="OUT", default="-", help='write the JSON here ("-": stdout) (default: -)')
    args = parser.parse_args(argv)
    try:
        check_output_path(args.json, "--json")
    except ValueError as exc:
        return error_exit(parser.prog, exc)
    write_json(all_cliffs(), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
