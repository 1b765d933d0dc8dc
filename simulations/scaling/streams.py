"""Seeded streams of float32 tensors for scaling simulations: steady, one spike, a drift, bursts.

Step t is drawn from its own Philox stream (key = seed, counter block = t), so a step can be drawn
alone, in any order, and no two steps overlap. The parameters (and their defaults) are declared by
the simulation that uses a stream (`simulations.studies.spike.SpikeConfig`); `TensorStream` checks its own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["SPIKE_KINDS", "STREAM_KINDS", "TensorStream", "positive_int"]

STREAM_KINDS = ("steady", "spike", "drift", "bursts")
SPIKE_KINDS = ("tensor", "element")


def positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """`value` as an int ≥ `minimum`; TypeError for a non-integer, ValueError below the minimum."""
    if isinstance(minimum, bool) or not isinstance(minimum, (int, np.integer)):
        raise TypeError(f"minimum must be an integer, got {minimum!r}")
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name}={value} is too small; allowed: {minimum} or more")
    return int(value)


@dataclass(frozen=True)
class TensorStream:
    """A seeded stream of float32 tensors, sigma_t · N(0, 1) with sigma_t set by `kind`:

    steady: sigma. spike: sigma, and at `spike_step` the whole tensor times `spike`
    (`spike_kind='tensor'`) or one element set to `spike` × the step's ordinary amax ('element').
    drift: sigma · exp(drift · t). bursts: sigma × burst_magnitude on the first `burst_length`
    steps of every `burst_period`."""

    kind: str  # one of STREAM_KINDS
    size: int  # elements per tensor
    sigma: float  # standard deviation of an ordinary step
    spike_step: int  # the step of the spike ('spike')
    spike: float  # spike magnitude: a multiple of the ordinary tensor ('spike')
    spike_kind: str  # 'tensor' (every element) or 'element' (one element)
    drift: float  # growth rate of sigma per step ('drift')
    burst_period: int  # steps from one burst to the next ('bursts')
    burst_length: int  # steps a burst lasts ('bursts')
    burst_magnitude: float  # sigma multiplier during a burst ('bursts')
    seed: int  # Philox key

    def __post_init__(self) -> None:
        if self.kind not in STREAM_KINDS:
            raise ValueError(f"stream kind {self.kind!r} is not one of {', '.join(STREAM_KINDS)}")
        if self.spike_kind not in SPIKE_KINDS:
            raise ValueError(f"spike_kind {self.spike_kind!r} is not one of {', '.join(SPIKE_KINDS)}")
        positive_int("size", self.size)
        positive_int("spike_step", self.spike_step, 0)
        positive_int("burst_period", self.burst_period)
        positive_int("burst_length", self.burst_length, 0)
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
