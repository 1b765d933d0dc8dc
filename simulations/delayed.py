"""Delayed scaling (an amax history) against current scaling, over generated tensor streams.

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
(`formats.encode`, policy `policy_for('ocp', fmt)` unless given). Per-step metrics: the encode scale
used, the amax it was sized for (F / encode_scale / 2^margin), clipped fraction (|x · scale| beyond
the rounding bin of F, so saturated rather than rounded: `scaling.clips`),
flushed-to-zero fraction (x ≠ 0 decoding as 0) and RMS relative error ‖x̂ − x‖₂ / ‖x‖₂ with
x̂ = decode(codes) / encode_scale. Streams are seeded per step (a Philox stream keyed by the seed, counter block = step).
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from lowprec import formats
from lowprec.formats import CastPolicy, Format

from ._io import ArgumentParser, add_json_argument, run_main, write_text
from .scaling import _json_float, clips

ProgressFn = Callable[[int, int], None]

ALGOS = ("max", "most_recent")
STREAM_KINDS = ("steady", "spike", "drift", "bursts")
SPIKE_KINDS = ("tensor", "element")
METRICS = ("encode_scale", "amax_used", "clipped_fraction", "flushed_fraction", "rms_rel_error")
_F32_MAX = np.float32(np.finfo(np.float32).max)


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}={value} is too small; allowed: {minimum} or more")
    return int(value)


def _cast_policy(fmt: Format, policy: CastPolicy | None) -> CastPolicy:
    if policy is None:
        return formats.policy_for("ocp", fmt)
    if not isinstance(policy, CastPolicy):
        raise TypeError(f"policy must be a CastPolicy or None, got {type(policy).__name__}")
    return policy


def tensor_amax(x: np.ndarray) -> float:
    """max |x| (NaN if x holds a NaN); two SIMD reductions, no temporary array."""
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
        self.history_len = _positive_int("history_len", history_len)
        if algo not in ALGOS:
            raise ValueError(f"algo={algo!r} is not one of {', '.join(repr(a) for a in ALGOS)}")
        self.algo = algo
        if not (math.isfinite(initial_encode_scale) and initial_encode_scale > 0):
            raise ValueError(f"initial_encode_scale must be positive and finite, got {initial_encode_scale!r}")
        self.encode_scale = float(np.float32(initial_encode_scale))
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
        arr = np.asarray(x, dtype=np.float32)
        used = self.encode_scale
        codes = self._cast(arr, used)
        amax = tensor_amax(arr)
        self.update(amax)
        return CastOutput(codes, used, amax)


class CurrentScaler(_Scaler):
    """Sizes each cast's scale from the tensor it casts: F / amax(x) / 2^margin (1.0 if amax is 0
    or not finite)."""

    def quantize(self, x: Any) -> CastOutput:
        arr = np.asarray(x, dtype=np.float32)
        amax = tensor_amax(arr)
        used = scale_from_amax(amax, self.fmt.max, self.margin, 1.0)
        return CastOutput(self._cast(arr, used), used, amax)


# ------------------------------------------------------------------------------------------------
# streams
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorStream:
    """A seeded stream of float32 tensors, sigma_t · N(0, 1) with sigma_t set by `kind`:

    steady: sigma. spike: sigma, and at `spike_step` the whole tensor times `spike`
    (`spike_kind='tensor'`) or one element set to `spike` × the step's ordinary amax ('element').
    drift: sigma · exp(drift · t). bursts: sigma × burst_magnitude on the first `burst_length`
    steps of every `burst_period`."""

    kind: str = "spike"
    size: int = 4096
    sigma: float = 1.0
    spike_step: int = 100
    spike: float = 50.0
    spike_kind: str = "tensor"
    drift: float = 0.01
    burst_period: int = 50
    burst_length: int = 5
    burst_magnitude: float = 10.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in STREAM_KINDS:
            raise ValueError(f"stream kind {self.kind!r} is not one of {', '.join(STREAM_KINDS)}")
        if self.spike_kind not in SPIKE_KINDS:
            raise ValueError(f"spike_kind {self.spike_kind!r} is not one of {', '.join(SPIKE_KINDS)}")
        _positive_int("size", self.size)
        _positive_int("spike_step", self.spike_step, 0)
        _positive_int("burst_period", self.burst_period)
        _positive_int("burst_length", self.burst_length, 0)
        for name in ("sigma", "spike", "burst_magnitude"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
                raise ValueError(f"{name}={v!r} must be a positive finite number")
        if not math.isfinite(self.drift):
            raise ValueError(f"drift={self.drift!r} must be finite")

    def sigma_at(self, step: int) -> float:
        if self.kind == "drift":
            return self.sigma * math.exp(self.drift * step)
        if self.kind == "bursts" and step % self.burst_period < self.burst_length:
            return self.sigma * self.burst_magnitude
        return self.sigma

    def tensor(self, step: int) -> np.ndarray:
        # one Philox stream per step (key = seed, counter block = step): random access by step,
        # no overlap between steps, and no per-step seed hashing
        rng = np.random.Generator(np.random.Philox(key=self.seed, counter=[0, 0, step, 0]))
        x = rng.standard_normal(self.size, dtype=np.float32)  # float32 tensors, drawn directly
        x *= np.float32(self.sigma_at(step))
        if self.kind == "spike" and step == self.spike_step:
            if self.spike_kind == "tensor":
                x *= np.float32(self.spike)
            else:
                x[int(rng.integers(self.size))] = np.float32(self.spike * float(np.abs(x).max()))
        return x

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# ------------------------------------------------------------------------------------------------
# simulation
# ------------------------------------------------------------------------------------------------


def cast_metrics(x: np.ndarray, out: CastOutput, fmt: Format, margin: int,
                 x64: np.ndarray | None = None) -> dict[str, float]:
    """The per-step metrics of one scaled cast (module docstring). `x64` is x as float64, when
    the caller already has it (two scalers share one step's tensor)."""
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


def _block_metrics(xs: np.ndarray, x64: np.ndarray, encode_scales: np.ndarray, scaler: _Scaler,
                   fmt: Format) -> dict[str, np.ndarray]:
    """`cast_metrics` for a block of steps at once: row t is step t cast with encode_scales[t]."""
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


@dataclass
class StreamResult:
    """Per step: the tensor's amax, and the METRICS of delayed and current scaling side by side."""

    parameters: dict[str, Any]
    amax: np.ndarray
    delayed: dict[str, np.ndarray] = field(default_factory=dict)
    current: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(self.amax.size)

    def reduced_steps(self, factor: float = 2.0) -> int:
        """Steps whose delayed scale was sized, from recorded history, for an amax more than
        `factor` × the tensor's own. Step 0 has no history yet (it uses the initial scale) and is
        not counted."""
        return int(np.count_nonzero((self.delayed["amax_used"] > factor * self.amax)[1:]))

    def columns(self) -> dict[str, list[Any]]:
        """Flat per-step columns: step, amax, delayed_<metric>, current_<metric> (and the short
        aliases delayed_clipped / current_clipped)."""
        cols: dict[str, list[Any]] = {"step": list(range(self.steps)), "amax": self.amax.tolist()}
        for name, d in (("delayed", self.delayed), ("current", self.current)):
            for k in METRICS:
                cols[f"{name}_{k}"] = d[k].tolist()
            cols[f"{name}_clipped"] = d["clipped_fraction"].tolist()
        return cols

    def to_dict(self) -> dict[str, Any]:
        steps = []
        for t in range(self.steps):
            steps.append({
                "step": t,
                "amax": _json_float(float(self.amax[t])),
                "delayed": {k: _json_float(float(self.delayed[k][t])) for k in METRICS},
                "current": {k: _json_float(float(self.current[k][t])) for k in METRICS},
            })
        return {"simulation": "spike", "parameters": self.parameters, "steps": steps}

    def csv_text(self) -> str:
        cols = self.columns()
        keys = ["step", "amax"] + [f"{n}_{k}" for n in ("delayed", "current") for k in METRICS]
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(keys)
        for t in range(self.steps):
            w.writerow([cols[k][t] for k in keys])
        return buf.getvalue()


def simulate_stream(
    fmt: str | Format = "E4M3FN",
    history_len: int = 16,
    algo: str = "max",
    margin: int = 0,
    steps: int = 200,
    spike_step: int = 100,
    spike: float = 50.0,
    seed: int = 0,
    *,
    stream: str = "spike",
    size: int = 4096,
    spike_kind: str = "tensor",
    drift: float = 0.01,
    burst_period: int = 50,
    burst_length: int = 5,
    burst_magnitude: float = 10.0,
    policy: CastPolicy | None = None,
    progress: ProgressFn | None = None,
) -> StreamResult:
    """Run one stream through a DelayedScaler and a CurrentScaler side by side."""
    f = formats.get_format(fmt)
    n_steps = _positive_int("steps", steps)
    if stream == "spike" and not 0 <= spike_step < n_steps:
        raise ValueError(f"spike_step={spike_step} is outside the stream of {n_steps} steps; allowed 0..{n_steps - 1}")
    src = TensorStream(stream, size, 1.0, spike_step, spike, spike_kind, drift, burst_period, burst_length,
                       burst_magnitude, seed)
    delayed = DelayedScaler(f, history_len, algo, margin, policy)
    current = CurrentScaler(f, margin, policy)
    amax = np.empty(n_steps)
    d_rows: dict[str, np.ndarray] = {k: np.empty(n_steps) for k in METRICS}
    c_rows: dict[str, np.ndarray] = {k: np.empty(n_steps) for k in METRICS}
    # Batched: the scales depend on amaxes only, so a block of steps is generated, its scales taken
    # step by step from the same DelayedScaler/CurrentScaler state machines, and its casts and
    # metrics computed as one array per block (identical to stepping `quantize` one tensor at a time).
    block = max(1, min(n_steps, (1 << 20) // max(size, 1)))
    for t0 in range(0, n_steps, block):
        t1 = min(n_steps, t0 + block)
        xs = np.stack([src.tensor(t) for t in range(t0, t1)])
        block_amax = np.array([tensor_amax(x) for x in xs])
        d_used = np.empty(t1 - t0)
        c_used = np.empty(t1 - t0)
        for i, a in enumerate(block_amax):
            d_used[i] = delayed.encode_scale
            delayed.update(a)
            c_used[i] = scale_from_amax(a, f.max, current.margin, 1.0)
        amax[t0:t1] = block_amax
        x64 = xs.astype(np.float64)
        for rows, used, scaler in ((d_rows, d_used, delayed), (c_rows, c_used, current)):
            for k, v in _block_metrics(xs, x64, used, scaler, f).items():
                rows[k][t0:t1] = v
        if progress is not None:
            progress(t1, n_steps)
    params = {"format": f.name, "history_len": delayed.history_len, "algo": algo, "margin": delayed.margin,
              "steps": n_steps, "spike_step": int(spike_step), "spike": float(spike), "seed": int(seed),
              "stream": src.to_dict(), "policy": delayed.policy.to_dict()}
    return StreamResult(params, amax, d_rows, c_rows)


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m lowprec.simulations.delayed",
                                description="delayed vs current scaling over a tensor stream → JSON/CSV")
    p.add_argument("--format", default="E4M3FN")
    p.add_argument("--history", type=int, default=16)
    p.add_argument("--algo", default="max", choices=ALGOS)
    p.add_argument("--margin", type=int, default=0)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--spike-step", type=int, default=100)
    p.add_argument("--spike", type=float, default=50.0)
    p.add_argument("--stream", default="spike", choices=STREAM_KINDS)
    p.add_argument("--size", type=int, default=4096)
    p.add_argument("--seed", type=int, default=0)
    add_json_argument(p)
    p.add_argument("--csv", metavar="OUT", help="also write per-step CSV")

    def compute(a: argparse.Namespace) -> StreamResult:
        res = simulate_stream(a.format, a.history, a.algo, a.margin, a.steps, a.spike_step, a.spike, a.seed,
                              stream=a.stream, size=a.size)
        if a.csv:
            write_text(res.csv_text(), a.csv)
        return res

    return run_main(p, argv, compute)


if __name__ == "__main__":
    raise SystemExit(main())
