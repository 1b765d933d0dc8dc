"""Block-format and delayed-scaling throughput against ml_dtypes, measured in the same run.

MXFP8 (E4M3FN elements, block 32, floor rule) and NVFP4 quantize of 16M float32 standard-normal
values (--quick: 4M) against ml_dtypes' plain E4M3FN cast of the same array (ratio > 1: the block
quantize is faster than the plain cast); one delayed-scaling step (cast with the held scale, amax,
history update) on a 1M tensor against a plain `formats.encode` cast of the same tensor (ratio < 1.3:
the step is dominated by the cast) and against ml_dtypes. Each figure is the best of `repeats` runs.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np

from lowprec import formats as F
from lowprec.benchmarks._timing import best_of
from lowprec.simulations.delayed import DelayedScaler
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4


def run(quick: bool = False) -> dict[str, Any]:
    n = (4 if quick else 16) * 1024 * 1024
    repeats = 5 if quick else 20
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32).reshape(-1, 4096)
    res: dict[str, Any] = {"n": n, "repeats": repeats}
    t_md = best_of(lambda: x.astype(ml_dtypes.float8_e4m3fn), repeats)
    t_mx = best_of(lambda: quantize_mx(x, "E4M3FN", 32), repeats)
    t_nv = best_of(lambda: quantize_nvfp4(x), repeats)
    res["ml_dtypes_E4M3FN_cast_ns_per_el"] = round(t_md / n * 1e9, 3)
    res["mxfp8_quantize_ns_per_el"] = round(t_mx / n * 1e9, 3)
    res["mxfp8_vs_ml_dtypes_cast_ratio"] = round(t_md / t_mx, 2)  # target ≥ 1.0
    res["nvfp4_quantize_ns_per_el"] = round(t_nv / n * 1e9, 3)
    res["nvfp4_vs_ml_dtypes_cast_ratio"] = round(t_md / t_nv, 2)  # target ≥ 0.5
    y = x.reshape(-1)[: 1 << 20].copy()
    pol = F.policy_for("ocp", F.E4M3FN)
    scaler = DelayedScaler(F.E4M3FN, 16, "max", 0, pol)
    step_repeats = repeats * 10
    t_step = best_of(lambda: scaler.quantize(y), step_repeats)
    t_cast = best_of(lambda: F.encode(y, F.E4M3FN, pol), step_repeats)
    t_md1 = best_of(lambda: y.astype(ml_dtypes.float8_e4m3fn), step_repeats)
    res["delayed_step_1M_us"] = round(t_step * 1e6, 1)
    res["delayed_step_over_plain_cast"] = round(t_step / t_cast, 2)  # target ≤ 1.3
    res["delayed_step_over_ml_dtypes_cast"] = round(t_step / t_md1, 2)
    return res
