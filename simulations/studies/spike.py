"""The spike simulation: delayed scaling (an amax history) against current scaling over a generated
tensor stream, step by step.

One `TensorStream` (`simulations.scaling.streams`: σ_t · N(0, 1) float32 tensors, a spike, a drift or bursts)
goes through a `DelayedScaler` and a `CurrentScaler` (`simulations.scaling.delayed`: Transformer Engine
semantics) side by side; per step the tensor's amax and, for each scaler, the METRICS of its cast
(encode scale used, the amax it was sized for, clipped and flushed fractions, RMS relative error).
Steps are processed in blocks: the scales depend on amaxes only, so a block of steps is generated, its
scales taken step by step from the two scalers' state, and its casts and metrics computed as one
array per block (identical to stepping `quantize` one tensor at a time).

`SpikeConfig` declares every parameter once; `lowprec simulate spike`, `python -m
lowprec.simulations.studies.spike`, the DelayedSpike widget and its lesson directive are generated from it.
Its delayed-scaling knobs (history, algo, margin), seed and format are the shared declarations of
`simulations.framework.knobs` (the same as the recompute simulation's). Summaries give shares as percentages
(`percent`), as the widget and the lessons do.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.config import ConfigError, Cost, config_record, knob
from lowprec.formats import CastPolicy

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, config_values, run_module
from ..scaling.delayed import METRICS, CurrentScaler, DelayedScaler, block_metrics, scale_from_amax, tensor_amax
from ..framework.knobs import algo_knob, format_knob, history_knob, margin_knob, seed_knob
from ..scaling.streams import SPIKE_KINDS, STREAM_KINDS, TensorStream

__all__ = ["SIMULATION", "SPIKE_FORMATS", "SpikeConfig", "StreamResult", "percent", "simulate_spike", "simulate_stream",
           "summary_lines"]

#: formats a scaled cast of signed tensors can use (up to 16 bits: the clipped fraction needs the
#: rounding bin of the largest value, from the format's code table)
SPIKE_FORMATS = tuple(f.name for f in formats.CORE_FORMATS if f.signed and f.bits <= 16)
_BLOCK_ELEMENTS = 1 << 20  # elements generated and cast at once


@config_record
class SpikeConfig:
    """The spike simulation's parameters."""

    format: str = format_knob(SPIKE_FORMATS, "element format of the cast")
    history: int = history_knob()
    algo: str = algo_knob()
    margin: int = margin_knob()
    steps: int = knob(200, "steps in the stream", bounds=(2, 100_000), widget="input")
    spike_step: int = knob(100, "step at which the spike occurs (spike stream)", bounds=(0, 99_999), widget="input")
    spike: float = knob(50.0, "spike magnitude: a multiple of the ordinary tensor", bounds=(1.0, 1e6), widget="input")
    stream: str = knob("spike", "the stream: steady, one spike, an exponential drift, periodic bursts",
                       choices=STREAM_KINDS)
    size: int = knob(4096, "elements per step", bounds=(1, 1 << 24), widget="input")
    seed: int = seed_knob("seed of the stream")
    spike_kind: str = knob("tensor", "the spike scales the whole tensor, or sets one element (spike stream)",
                           choices=SPIKE_KINDS)
    drift: float = knob(0.01, "growth of σ per step, σ_t = exp(drift · t) (drift stream)", bounds=(-0.1, 0.1),
                        widget="input")
    burst_period: int = knob(50, "steps from one burst to the next (bursts stream)", bounds=(1, 100_000),
                             widget="input")
    burst_length: int = knob(5, "steps a burst lasts (bursts stream)", bounds=(0, 100_000), widget="input")
    burst_magnitude: float = knob(10.0, "σ multiplier during a burst (bursts stream)", bounds=(1e-3, 1e6),
                                  widget="input")

    def __post_init__(self) -> None:
        if self.stream == "spike" and self.spike_step >= self.steps:
            raise ConfigError("spike_step", f"{self.spike_step} is outside the stream of {self.steps} steps; "
                                            f"allowed 0..{self.steps - 1}")
        if self.stream == "drift" and abs(self.drift) * (self.steps - 1) > 80:
            raise ConfigError("drift", f"|drift| × (steps − 1) must be ≤ 80 (σ stays within float32), got "
                                       f"{abs(self.drift) * (self.steps - 1):.4g}")

    def tensor_stream(self) -> TensorStream:
        """The stream these parameters describe (σ = 1)."""
        return TensorStream(self.stream, self.size, 1.0, self.spike_step, self.spike, self.spike_kind, self.drift,
                            self.burst_period, self.burst_length, self.burst_magnitude, self.seed)

    def cost(self) -> Cost:
        n = self.steps * self.size
        block = min(self.steps, max(1, _BLOCK_ELEMENTS // self.size)) * self.size
        return Cost(bytes=block * 40.0, seconds=n * 8e-8, note=f"{self.steps} steps × {self.size} elements, cast twice")


@dataclass
class StreamResult:
    """Per step: the tensor's amax, and the METRICS of delayed and current scaling side by side."""

    config: SpikeConfig
    policy: CastPolicy
    amax: np.ndarray
    delayed: dict[str, np.ndarray] = field(default_factory=dict)
    current: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def steps(self) -> int:
        return int(self.amax.size)

    @property
    def parameters(self) -> dict[str, Any]:
        """The config's values and the cast policy (what the JSON's `parameters` holds)."""
        return {**config_values(self.config), "policy": self.policy.to_dict()}

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
        steps = [{"step": t, "amax": float(self.amax[t]),
                  "delayed": {k: float(self.delayed[k][t]) for k in METRICS},
                  "current": {k: float(self.current[k][t]) for k in METRICS}} for t in range(self.steps)]
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


def simulate_spike(config: SpikeConfig, *, policy: CastPolicy | None = None,
                   progress: ProgressFn | None = None) -> StreamResult:
    """Run the stream of `config` through a DelayedScaler and a CurrentScaler side by side; `policy`
    is the element cast policy (default `policy_for('ocp', format)`)."""
    if not isinstance(config, SpikeConfig):
        raise TypeError(f"config must be a SpikeConfig, got {type(config).__name__}")
    f = formats.get_format(config.format)
    n_steps = config.steps
    src = config.tensor_stream()
    delayed = DelayedScaler(f, config.history, config.algo, config.margin, policy)
    current = CurrentScaler(f, config.margin, policy)
    amax = np.empty(n_steps)
    d_rows: dict[str, np.ndarray] = {k: np.empty(n_steps) for k in METRICS}
    c_rows: dict[str, np.ndarray] = {k: np.empty(n_steps) for k in METRICS}
    block = max(1, min(n_steps, _BLOCK_ELEMENTS // config.size))
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
            for k, v in block_metrics(xs, x64, used, scaler, f).items():
                rows[k][t0:t1] = v
        if progress is not None:
            progress(t1, n_steps)
    return StreamResult(config, delayed.policy, amax, d_rows, c_rows)


def simulate_stream(config: SpikeConfig | None = None, *, policy: CastPolicy | None = None,
                    progress: ProgressFn | None = None, **knobs: Any) -> StreamResult:
    """`simulate_spike` for a SpikeConfig, or for one made of keyword parameters named as its
    fields (`simulate_stream(history=4, steps=50, spike_step=20)`)."""
    return simulate_spike(config_or_knobs(SpikeConfig, config, knobs), policy=policy, progress=progress)


def percent(fraction: float) -> str:
    """A fraction as the summaries and lessons write it: a percentage with two decimals ("53.12 %")."""
    return f"{100.0 * float(fraction):.2f} %"


def summary_lines(result: StreamResult) -> list[str]:
    if not isinstance(result, StreamResult):
        raise TypeError(f"result must be a StreamResult, got {type(result).__name__}")
    cfg = result.config
    c = result.columns()
    at = cfg.spike_step if cfg.stream == "spike" else int(np.argmax(result.amax))
    where = f"at step {at}" + ("" if cfg.stream == "spike" else " (the largest amax)")
    return [f"steps: {result.steps}; {where}: delayed clipped {percent(c['delayed_clipped_fraction'][at])}, "
            f"current clipped {percent(c['current_clipped_fraction'][at])}; delayed scale sized for >2× the amax on "
            f"{result.reduced_steps()} steps"]


SIMULATION: Simulation[SpikeConfig, StreamResult] = Simulation(
    name="spike",
    help="delayed (amax history) vs current scaling through a spike",
    config=SpikeConfig,
    run=lambda cfg, progress: simulate_spike(cfg, progress=progress),
    summary=summary_lines,
    csv=lambda result: result.csv_text(),
    html_help="write standalone HTML plots of amax, clipped fraction and error per step (open offline)",
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
