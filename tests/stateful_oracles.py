"""Independent oracles for lesson 26's answers ("Whose amax?"), merged into
`tests/test_exercise_answers.ORACLES`. Each recomputes its answer without the example code and without
the stateful simulation's engine: the lesson's inputs regenerated (`stateful.layer_input`,
`initial_weights`: the data, not the model), casts through ml_dtypes, Transformer Engine's
delayed-scaling rule re-implemented here and replayed over the amaxes each design inserts, and the
closed forms written out with `math.erfc` and numpy float32 arithmetic.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Callable

import ml_dtypes
import numpy as np

F32 = np.float32
E4M3 = ml_dtypes.float8_e4m3fn
EDGE = 464.0  # the top of 448's rounding bin in E4M3FN


def te_scale(amaxes: list[float], previous: float) -> float:
    """TE's rule (max history, margin 0): float32(448 / max), the previous scale for a zero max."""
    a = F32(max(amaxes)) if amaxes else F32(0)
    return float(F32(F32(448.0) / a)) if a > 0 else previous


def held_scales(inserts: list[float], history: int) -> list[float]:
    """The scale held before each window, starting from 1."""
    hist: deque[float] = deque(maxlen=history)
    scale, out = 1.0, []
    for v in inserts:
        out.append(scale)
        hist.append(v)
        scale = te_scale(list(hist), scale)
    return out


def _defaults() -> Any:
    from lowprec.simulations.stateful import StatefulConfig

    return StatefulConfig()


def _shard_rows(c: Any) -> list[np.ndarray]:
    return np.array_split(np.arange(c.rows), c.ranks)


def accumulation_outcome() -> str:
    """accum-last-microbatch: the gathered input's history inserts, per step, the max over ranks of
    the last microbatch's input; count the recurrences whose spiked shard has an element beyond 464."""
    from lowprec.simulations.stateful import layer_input

    c = _defaults()
    last = [float(np.abs(layer_input(c, t, c.microbatches - 1)).max()) for t in range(c.steps)]
    held = held_scales(last, c.history)
    spikes = [t for t in range(c.steps) if c.spike_at(t, c.spike_microbatch)]
    rows = _shard_rows(c)[c.spike_rank]
    hit = [t for t in spikes
           if (np.abs(layer_input(c, t, c.spike_microbatch)[rows] * F32(held[t])) > F32(EDGE)).any()]
    return {0: "none of them", len(spikes): "every one of them"}.get(len(hit), "only the first one")


def idle_insertions() -> int:
    """A history that rolls at every window: one insertion per microbatch of every step."""
    c = _defaults()
    return c.steps * c.microbatches


def rank_ratio_label() -> str:
    """dist-local-amax: each rank's gathered-input history holds its own shard amaxes, one per
    microbatch; rank 1's scale over rank 0's at microbatch 0 of the step after the first spike."""
    from lowprec.simulations.stateful import layer_input

    c = _defaults()
    rows = _shard_rows(c)
    windows = [(t, k) for t in range(c.steps) for k in range(c.microbatches)]
    amax = {w: [float(np.abs(layer_input(c, *w)[r]).max()) for r in rows] for w in windows}
    target = windows.index((c.spike_step + 1, 0))
    scales = [held_scales([amax[w][r] for w in windows], c.history)[target] for r in range(c.ranks)]
    ratio = scales[1] / scales[0]
    labels = {"1 (equal)": 1.0, "about 4": 4.0, "about 16": 16.0, "about 256": 256.0}
    return min(labels, key=lambda k: abs(math.log(ratio / labels[k])))


def cache_outcome() -> str:
    """cache-live-scale at step 0: the codes of each rank's W0 columns cast at scale 1 (ml_dtypes),
    read after the update with float32(1 / (448 / amax)); the output of those columns scales by that
    decode scale, so its relative error is 1 - D."""
    from lowprec.simulations.stateful import initial_weights

    c = _defaults()
    _, w0, _ = initial_weights(c)
    errors = []
    for cols in np.array_split(np.arange(c.width), c.ranks):
        codes = np.clip(w0[:, cols], -448, 448).astype(E4M3).astype(np.float64)  # scale 1
        d_new = float(F32(1.0 / te_scale([float(np.abs(w0[:, cols]).max())], 1.0)))
        errors.append(float(np.max(np.abs(codes * d_new - codes)) / np.max(np.abs(codes))))
    err = max(errors)
    if not math.isfinite(err):
        return "overflows to Inf"
    return "unchanged" if err == 0 else "off by under 1 %" if err < 0.01 else "off by about 100 % (it nearly vanishes)"


def recompute_check() -> str:
    """A BF16 recompute records no amax and reads no FP8 pair, so neither count can move; its
    operand is BF16's grid, which differs from the forward's E4M3FN decode of the same input."""
    from lowprec.simulations.stateful import layer_input

    x = layer_input(_defaults(), 0, 0)
    bf16 = x.astype(ml_dtypes.bfloat16).astype(np.float64)
    fp8 = np.clip(x, -448, 448).astype(E4M3).astype(np.float64)  # step 0: scale 1
    return "the forward-vs-recompute operand comparison" if not np.array_equal(bf16, fp8) else "unpaired reads"


def spike_share_pct() -> float:
    scale = float(F32(F32(448.0) / F32(4.0)))
    return 100.0 * math.erfc(EDGE / (10.0 * scale * math.sqrt(2.0))) / 8


def shard_factor() -> float:
    e = [F32(F32(448.0) / F32(a)) for a in (2.5, 3.0, 40.0, 2.8)]
    return float(e[2]) * float(F32(1.0) / e[0])


def layer1_owner() -> str:
    """Column shards cast with their own local scales and consumed by their own rank: the
    row-parallel product equals the exact one to E4M3 rounding (every decode paired); decoded with
    another rank's scale it would not."""
    rng = np.random.default_rng(7)
    h = rng.standard_normal((64, 32)).astype(F32) * np.repeat(F32([1, 3, 10, 30]), 8)[None, :]
    w = rng.standard_normal((32, 32)).astype(F32)
    exact = h.astype(np.float64) @ w.astype(np.float64)
    y = np.zeros_like(exact)
    for cols in np.array_split(np.arange(32), 4):
        e = F32(448.0 / np.abs(h[:, cols]).max())
        codes = (h[:, cols] * e).astype(E4M3).astype(np.float64)
        y += codes * float(F32(1.0) / e) @ w[cols].astype(np.float64)
    ok = np.max(np.abs(y - exact)) / np.max(np.abs(exact)) < 0.1
    return ("none: each rank owns the scale of the columns it casts and alone consumes" if ok
            else "the tensor-parallel group")


def idle_zeros() -> int:
    steps, every, microbatches = 12, 3, 2
    return (steps - len(range(0, steps, every))) * microbatches


STATEFUL_ORACLES: dict[str, Callable[[], Any]] = {
    "example:whose_amax_accumulation.outcome": accumulation_outcome,
    "example:whose_amax_idle.zero_insertions": idle_insertions,
    "example:whose_amax_ranks.ratio_label": rank_ratio_label,
    "example:whose_amax_cache.outcome": cache_outcome,
    "example:whose_amax_recompute.check": recompute_check,
    "example:whose_amax_exercises.spike_share_pct": spike_share_pct,
    "example:whose_amax_exercises.shard_factor": shard_factor,
    "example:whose_amax_exercises.h1_owner": layer1_owner,
    "example:whose_amax_exercises.zero_insertions": idle_zeros,
}
