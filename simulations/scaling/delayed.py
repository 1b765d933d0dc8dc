"""Delayed scaling (an amax history) and current scaling: the one model of Transformer Engine's
delayed-scaling rule in lowprec, the two scalers built on it, and the metrics of one scaled cast.

`DelayedScaling` is the rule, used by the spike simulation (`DelayedScaler`, here; `simulations.studies.spike`)
and by the recompute simulation's quantizer state (`recompute.state.DelayedScaleState`, whose history
entries also name the layer and step that recorded them). Semantics follow NVIDIA Transformer
Engine's `DelayedScaling` recipe:

- the state is an `encode_scale` (TE's `scale`, initially 1.0) and the last `history_len` recorded
  amaxes; a step casts with the scale it holds, then records its tensor's amax and updates once;
- the amax the next scale is sized from is the history's maximum (`algo="max"`) or its newest entry
  (`algo="most_recent"`); the maximum propagates a NaN (TE's PyTorch reference reduces the history
  with `torch.max`; its fused CUDA kernel uses `fmaxf`, which would skip it);
- `encode_scale = float32(scaled_max / amax)` with `scaled_max = float32(F · 2^-margin)`, in float32
  arithmetic as TE's `delayed_scaling.cu` computes it (F the format's largest finite value; the
  amax is held as float32, as TE's history is);
- an amax that is zero or not finite keeps the previous scale; a quotient beyond float32 (a tiny
  amax, or a wide format such as BF16 with amax < 1) is clamped to float32's max, as TE does; a
  quotient that rounds to 0 (a huge amax with a margin of tens of binades) also keeps the previous
  scale — lowprec's rule, where TE would store 0 and an infinite decode scale;
- `decode_scale = float32(1 / encode_scale)` (TE's `scale_inv`).

So the scale used at step t comes only from amaxes recorded before t, and one spike keeps the scale
reduced for exactly `history_len` steps under `max` and for one step under `most_recent`. The knobs
have one set of bounds, here (`HISTORY_BOUNDS`, `MARGIN_BOUNDS`, `AMAX_ALGOS`), which the model checks
and the config records declare through `simulations.framework.knobs`. `CurrentScaler` sizes each scale from
the tensor it casts (same formula; the safe scale 1.0 for a zero or non-finite amax).

The cast is TE's: x · encode_scale rounded to float32, then a saturating round-to-nearest-even cast
(`formats.encode`, policy `policy_for('ocp', fmt)` unless given). Per-step metrics (`METRICS`): the
encode scale used, the amax it was sized for (F / encode_scale / 2^margin), clipped fraction
(|x · scale| beyond the rounding bin of F, so saturated rather than rounded: `metrics.clips`),
flushed-to-zero fraction (x ≠ 0 decoding as 0) and RMS relative error ‖x̂ − x‖₂ / ‖x‖₂ with
x̂ = decode(codes) / encode_scale. The simulation that runs both over a stream is `simulations.studies.spike`.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, Format

from .metrics import clips

__all__ = ["ALGOS", "AMAX_ALGOS", "HISTORY_BOUNDS", "MARGIN_BOUNDS", "METRICS", "CastOutput", "CurrentScaler",
           "DelayedScaler", "DelayedScaling", "block_metrics", "cast_metrics", "check_algo", "check_history_len",
           "check_margin", "scale_from_amax", "tensor_amax"]

#: how the history becomes the amax the next scale is sized for: its maximum, or its newest entry
AMAX_ALGOS = ("max", "most_recent")
ALGOS = AMAX_ALGOS  # the older name (simulations.studies.spike, lessons)
#: amax history length H, in steps (inclusive; TE's default is 1024)
HISTORY_BOUNDS = (1, 1024)
#: margin, in binades of headroom: the scale is divided by 2^margin (inclusive)
MARGIN_BOUNDS = (0, 64)
METRICS = ("encode_scale", "amax_used", "clipped_fraction", "flushed_fraction", "rms_rel_error")
_F32_MAX = np.float32(np.finfo(np.float32).max)

E = TypeVar("E")


def _bounded_int(name: str, value: Any, bounds: tuple[int, int], unit: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer number of {unit}, got {value!r:.60}")
    lo, hi = bounds
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value} is outside the allowed {lo} … {hi} ({unit})")
    return int(value)


def check_history_len(history_len: Any, name: str = "history_len") -> int:
    """`history_len` as an int within HISTORY_BOUNDS; TypeError / ValueError naming `name` otherwise."""
    return _bounded_int(name, history_len, HISTORY_BOUNDS, "steps")


def check_margin(margin: Any, name: str = "margin") -> int:
    """`margin` as an int within MARGIN_BOUNDS; TypeError / ValueError naming `name` otherwise."""
    return _bounded_int(name, margin, MARGIN_BOUNDS, "binades")


def check_algo(algo: Any, name: str = "algo") -> str:
    """`algo` if it is one of AMAX_ALGOS; ValueError naming `name` otherwise."""
    if not isinstance(algo, str) or algo not in AMAX_ALGOS:
        raise ValueError(f"{name}={algo!r} is not one of {', '.join(repr(a) for a in AMAX_ALGOS)}")
    return algo


def _check_initial_scale(scale: Any) -> float:
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.number)) \
            or isinstance(scale, (complex, np.complexfloating)):
        raise TypeError(f"initial_encode_scale must be a real number, got {scale!r}")
    scale32 = float(np.float32(scale)) if abs(float(scale)) < 2.0**128 else math.inf
    if not (math.isfinite(scale32) and scale32 > 0):
        raise ValueError(f"initial_encode_scale must be a positive number that float32 holds "
                         f"(≈ 1.4e-45 … 3.4e38), got {scale!r}")
    return scale32


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


def _te_scale(amax: float, fmt_max: float, margin: int) -> float | None:
    """TE's scale for `amax`, or None where the rule keeps the previous scale (module docstring)."""
    with np.errstate(over="ignore", divide="ignore"):
        a = np.float32(amax)  # the history holds float32 amaxes
        if not (np.isfinite(a) and a > 0):
            return None
        scaled_max = np.float32(fmt_max) * np.float32(2.0 ** -margin)  # exact: a power of two
        s = np.float32(scaled_max / a)
    if np.isinf(s):  # the amax is so small that F / amax is beyond float32
        s = _F32_MAX
    if s == 0:  # rounds to 0: a zero scale would decode every code to Inf or NaN
        return None
    return float(s)


def scale_from_amax(amax: float, fmt_max: float, margin: int, previous: float) -> float:
    """TE's rule: float32(float32(F · 2^-margin) / amax), clamped to float32's max; `previous`
    when amax is 0 or not finite (or the quotient rounds to 0). `margin` is checked (MARGIN_BOUNDS)."""
    s = _te_scale(amax, fmt_max, check_margin(margin))
    return previous if s is None else s


class DelayedScaling(Generic[E]):
    """Transformer Engine's delayed-scaling state and update rule (the module docstring), over a
    history of entries of type E: floats here, or records that carry an amax (`_amax_of` reads it).

    `record(entry)` appends one entry and advances the scale once; `next_scale()` is what the
    history says now, without moving; `source` is the entry whose amax set the held scale (None:
    the initial scale). Bad parameters raise TypeError/ValueError naming them and their bounds."""

    def __init__(self, fmt_max: float, history_len: int = 16, algo: str = "max", margin: int = 0,
                 initial_encode_scale: float = 1.0) -> None:
        if isinstance(fmt_max, bool) or not isinstance(fmt_max, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(float(fmt_max)) and fmt_max > 0):
            raise ValueError(f"fmt_max must be a format's largest finite value (a positive number), got {fmt_max!r:.60}")
        self.fmt_max = float(fmt_max)
        self.history_len = check_history_len(history_len)
        self.algo = check_algo(algo)
        self.margin = check_margin(margin)
        self.encode_scale = _check_initial_scale(initial_encode_scale)
        self.history: deque[E] = deque(maxlen=self.history_len)
        self.source: E | None = None
        self.updates = 0

    def _amax_of(self, entry: E) -> float:
        """The amax an entry records (subclasses with record entries override)."""
        return float(cast(float, entry))

    def chosen(self) -> tuple[float, E | None]:
        """(amax, entry): what the next scale is sized from — the newest entry, or the first
        maximal one; (0.0, None) before any record, (NaN, None) under `max` with a NaN in the window."""
        if not self.history:
            return 0.0, None
        if self.algo == "most_recent":
            newest = self.history[-1]
            return self._amax_of(newest), newest
        vals = np.fromiter((self._amax_of(e) for e in self.history), np.float64, len(self.history))
        if np.isnan(vals).any():
            return float("nan"), None  # torch.max propagates NaN
        i = int(np.argmax(vals))  # the first maximal entry
        return float(vals[i]), self.history[i]

    def amax_from_history(self) -> float:
        """The amax the next scale is sized from (0.0 before any record)."""
        return self.chosen()[0]

    def next_scale(self) -> tuple[float, E | None]:
        """(encode scale, the entry whose amax sets it) as the history says now; the held scale and
        its source where the rule keeps it (a zero or non-finite amax, a quotient rounding to 0)."""
        amax, entry = self.chosen()
        scale = _te_scale(amax, self.fmt_max, self.margin)
        if scale is None:
            return self.encode_scale, self.source
        return scale, entry

    def record(self, entry: E) -> float:
        """Append one entry to the history and advance the scale once; returns the new encode scale."""
        self.history.append(entry)
        self.encode_scale, self.source = self.next_scale()
        self.updates += 1
        return self.encode_scale

    @property
    def decode_scale(self) -> float:
        """float32(1 / encode_scale): what a consumer multiplies the decoded codes by (TE's scale_inv)."""
        return float(np.float32(1.0 / self.encode_scale))


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
        self.margin = check_margin(margin)
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


class DelayedScaler(_Scaler, DelayedScaling[float]):
    """Amax-history scaler with Transformer Engine semantics (`DelayedScaling` over float amaxes)
    that also casts: `quantize(x)` casts with the held scale, then records x's amax."""

    def __init__(self, fmt: str | Format, history_len: int = 16, algo: str = "max", margin: int = 0,
                 policy: CastPolicy | None = None, initial_encode_scale: float = 1.0) -> None:
        _Scaler.__init__(self, fmt, margin, policy)
        DelayedScaling.__init__(self, self.fmt.max, history_len, algo, margin, initial_encode_scale)

    def update(self, amax: float) -> float:
        """Record one amax and advance once; returns the new encode scale."""
        a = float(amax)
        if a < 0:
            raise ValueError(f"amax={amax!r} is negative; an amax is a maximum magnitude")
        return self.record(a)

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
