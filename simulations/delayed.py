"""Delayed scaling (an amax history) and current scaling: the two scalers and the metrics of one
scaled cast.

Semantics follow NVIDIA Transformer Engine's `DelayedScaling` recipe: the scaler holds an
`encode_scale` (TE's `scale`, initially 1.0) and a history of the last `history_len` recorded amaxes.
A step casts with the scale it holds, records the tensor's amax, then updates once: the amax it sizes
the next scale from is the history's maximum (`algo="max"`) or the newest entry
(`algo="most_recent"`), and `encode_scale = F / amax / 2^margin` (float32 arithmetic, as TE computes
it; F the format's largest finite value). If that amax is zero or not finite the previous scale is
kept; a quotient that overflows float32 is clamped to float32's max. So the scale used at step t
comes only from amaxes recorded before t, and one spike keeps the scale reduced for exactly
`history_len` steps under `max` and for one step under `most_recent`. `CurrentScaler` sizes each
scale from the tensor it casts (same formula; the safe scale 1.0 for a zero or non-finite amax).
The cast is TE's: x · encode_scale rounded to float32, then a saturating round-to-nearest-even cast
(`formats.encode`, policy `policy_for('ocp', fmt)` unless given). Per-step metrics (`METRICS`): the
encode scale used, the amax it was sized for (F / encode_scale / 2^margin), clipped fraction
(|x · scale| beyond the rounding bin of F, so saturated rather than rounded: `metrics.clips`),
flushed-to-zero fraction (x ≠ 0 decoding as 0) and RMS relative error ‖x̂ − x‖₂ / ‖x‖₂ with
x̂ = decode(codes) / encode_scale. The simulation that runs both over a stream is `simulations.spike`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, Format

from .metrics import clips
from .streams import positive_int

__all__ = ["ALGOS", "METRICS", "CastOutput", "CurrentScaler", "DelayedScaler", "block_metrics", "cast_metrics",
           "scale_from_amax", "tensor_amax"]

ALGOS = ("max", "most_recent")
METRICS = ("encode_scale", "amax_used", "clipped_fraction", "flushed_fraction", "rms_rel_error")
_F32_MAX = np.float32(np.finfo(np.float32).max)


def _cast_policy(fmt: Format, policy: CastPolicy | None) -> CastPolicy:
    if policy is None:
        return formats.policy_for("ocp", fmt)
    if not isinstance(policy, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(policy).__name__}")
    return policy


def tensor_amax(x: np.ndarray) -> float:
    """max |x| (NaN if x holds a NaN); two SIMD reductions, no temporary array."""
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "fiu":
        raise TypeError(f"x must be a real numpy array, got {type(x).__name__}"
                        f"{'' if not isinstance(x, np.ndarray) else ' of dtype ' + str(x.dtype)}")
    if x.size == 0:
        return 0.0
    hi = float(np.max(x))
    lo = float(np.min(x))
    if hi != hi or lo != lo:
        return float("nan")
    return max(hi, -lo)


def scale_from_amax(amax: float, fmt_max: float, margin: int, previous: float) -> float:
    """TE's rule: float32(F / amax) / 2^margin; the previous scale when amax is 0 or not finite."""
    if not (math.isfinite(amax) and amax > 0):
        return previous
    with np.errstate(over="ignore", divide="ignore"):
        s = np.float32(fmt_max) / np.float32(amax)
        s = np.float32(s / np.float32(2.0**margin))
    if not np.isfinite(s):
        s = _F32_MAX
    return float(s)


@dataclass
class CastOutput:
    """One scaled cast: codes, the encode scale it used and the tensor's amax."""

    codes: np.ndarray
    encode_scale: float
    amax: float


class _Scaler:
    def __init__(self, fmt: str | Format, margin: int = 0, policy: CastPolicy | None = None) -> None:
        self.fmt = formats.get_format(fmt)
        if not self.fmt.signed:
            raise ValueError(f"format {self.fmt.name} is unsigned and cannot hold signed tensors; "
                             "use a signed format such as E4M3FN, E5M2, E2M1, INT8")
        if isinstance(margin, bool) or not isinstance(margin, (int, np.integer)):
            raise TypeError(f"margin must be an integer number of binades, got {margin!r}")
        if margin < 0:
            raise ValueError(f"margin={margin} is negative; allowed: 0, 1, 2, …")
        self.margin = int(margin)
        self.policy = _cast_policy(self.fmt, policy)
        self._buf: np.ndarray | None = None

    def _cast(self, x: np.ndarray, encode_scale: float) -> np.ndarray:
        """x · encode_scale rounded to float32 (TE's kernels), then the format cast."""
        if self._buf is None or self._buf.shape != x.shape:
            self._buf = np.empty(x.shape, np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            np.multiply(x, np.float32(encode_scale), out=self._buf, casting="same_kind")
        return formats.encode(self._buf, self.fmt, self.policy)

    def amax_used(self, encode_scale: float) -> float:
        """The amax an encode scale was sized for: F / encode_scale / 2^margin."""
        return self.fmt.max / encode_scale / 2.0**self.margin


class DelayedScaler(_Scaler):
    """Amax-history scaler with Transformer Engine semantics (see the module docstring)."""

    def __init__(self, fmt: str | Format, history_len: int = 16, algo: str = "max", margin: int = 0,
                 policy: CastPolicy | None = None, initial_encode_scale: float = 1.0) -> None:
        super().__init__(fmt, margin, policy)
        self.history_len = positive_int("history_len", history_len)
        if algo not in ALGOS:
            raise ValueError(f"algo={algo!r} is not one of {', '.join(repr(a) for a in ALGOS)}")
        self.algo = algo
        if isinstance(initial_encode_scale, bool) or not isinstance(initial_encode_scale, (int, float, np.number)) \
                or isinstance(initial_encode_scale, (complex, np.complexfloating)):
            raise TypeError(f"initial_encode_scale must be a real number, got {initial_encode_scale!r}")
        scale32 = float(np.float32(initial_encode_scale)) if abs(float(initial_encode_scale)) < 2.0**128 else math.inf
        if not (math.isfinite(scale32) and scale32 > 0):
            raise ValueError(f"initial_encode_scale must be a positive number that float32 holds "
                             f"(≈ 1.4e-45 … 3.4e38), got {initial_encode_scale!r}")
        self.encode_scale = scale32
        self.history: deque[float] = deque(maxlen=self.history_len)
        self.updates = 0

    def amax_from_history(self) -> float:
        """The amax the next scale is sized from (0.0 before any record)."""
        if not self.history:
            return 0.0
        if self.algo == "most_recent":
            return self.history[-1]
        vals = np.fromiter(self.history, np.float64, len(self.history))
        return float("nan") if np.isnan(vals).any() else float(vals.max())

    def update(self, amax: float) -> float:
        """Record one amax and advance once; returns the new encode scale."""
        a = float(amax)
        if a < 0:
            raise ValueError(f"amax={amax!r} is negative; an amax is a maximum magnitude")
        self.history.append(a)
        self.encode_scale = scale_from_amax(self.amax_from_history(), self.fmt.max, self.margin, self.encode_scale)
        self.updates += 1
        return self.encode_scale

    def quantize(self, x: Any) -> CastOutput:
        """Cast with the held scale, then record x's amax and update (one step)."""
        arr = formats.as_float_array(x).astype(np.float32, copy=False)
        used = self.encode_scale
        codes = self._cast(arr, used)
        amax = tensor_amax(arr)
        self.update(amax)
        return CastOutput(codes, used, amax)


class CurrentScaler(_Scaler):
    """Sizes each cast's scale from the tensor it casts: F / amax(x) / 2^margin (1.0 if amax is 0
    or not finite)."""

    def quantize(self, x: Any) -> CastOutput:
        arr = formats.as_float_array(x).astype(np.float32, copy=False)
        amax = tensor_amax(arr)
        used = scale_from_amax(amax, self.fmt.max, self.margin, 1.0)
        return CastOutput(self._cast(arr, used), used, amax)


# ------------------------------------------------------------------------------------------------
# metrics of a scaled cast
# ------------------------------------------------------------------------------------------------


def cast_metrics(x: np.ndarray, out: CastOutput, fmt: Format, margin: int,
                 x64: np.ndarray | None = None) -> dict[str, float]:
    """The per-step metrics of one scaled cast (module docstring). `x64` is x as float64, when
    the caller already has it (two scalers share one step's tensor)."""
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "fiu":
        raise TypeError(f"x must be a real numpy array, got {x!r:.80}")
    if not isinstance(out, CastOutput):
        raise TypeError(f"out must be a CastOutput (a scaler's cast), got {type(out).__name__}")
    if not isinstance(fmt, (formats.FloatFormat, formats.IntFormat)):
        raise TypeError(f"fmt must be a Format, got {fmt!r:.80}")
    if x64 is None:
        x64 = x.astype(np.float64)
    s = out.encode_scale
    x_hat = formats.decode(out.codes, fmt).astype(np.float64) / s
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.abs(x.astype(np.float32) * np.float32(s))
        err = float(np.sum((x_hat - x64) ** 2))
    sig = float(np.sum(x64 * x64))
    n = max(x.size, 1)
    return {
        "encode_scale": s,
        "amax_used": fmt.max / s / 2.0**margin,
        "clipped_fraction": float(np.count_nonzero(clips(scaled, fmt))) / n,
        "flushed_fraction": float(np.count_nonzero((x64 != 0) & (x_hat == 0))) / n,
        "rms_rel_error": 0.0 if err == 0 else (math.sqrt(err / sig) if sig > 0 else float("inf")),
    }


def block_metrics(xs: np.ndarray, x64: np.ndarray, encode_scales: np.ndarray, scaler: _Scaler,
                  fmt: Format) -> dict[str, np.ndarray]:
    """`cast_metrics` for a block of steps at once: row t is step t cast with encode_scales[t]."""
    if not isinstance(scaler, _Scaler):
        raise TypeError(f"scaler must be a DelayedScaler or CurrentScaler, got {type(scaler).__name__}")
    fmt = formats.get_format(fmt)
    xs = formats.as_float_array(xs, "xs")
    x64 = formats.as_float_array(x64, "x64").astype(np.float64, copy=False)
    encode_scales = formats.as_float_array(encode_scales, "encode_scales")
    if xs.ndim != 2 or x64.shape != xs.shape or encode_scales.shape != (xs.shape[0],):
        raise ValueError(f"xs and x64 must be steps × elements of one shape and encode_scales one per step; "
                         f"got {xs.shape}, {x64.shape}, {encode_scales.shape}")
    s32 = encode_scales.astype(np.float32)[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        scaled32 = xs * s32  # x · encode_scale rounded to float32, as `_Scaler._cast`
    codes = formats.encode(scaled32, fmt, scaler.policy)
    x_hat = formats.decode(codes, fmt).astype(np.float64) / encode_scales[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        err = np.sum((x_hat - x64) ** 2, axis=1)
        sig = np.sum(x64 * x64, axis=1)
        rms = np.where(err == 0, 0.0, np.where(sig > 0, np.sqrt(err / np.where(sig > 0, sig, 1)), np.inf))
    n = max(xs.shape[1], 1)
    return {
        "encode_scale": encode_scales.copy(),
        "amax_used": fmt.max / encode_scales / 2.0**scaler.margin,
        "clipped_fraction": np.count_nonzero(clips(np.abs(scaled32), fmt), axis=1) / n,
        "flushed_fraction": np.count_nonzero((x64 != 0) & (x_hat == 0), axis=1) / n,
        "rms_rel_error": rms,
    }
