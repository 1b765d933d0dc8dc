"""Block-format throughput against torchao's eager reference and ml_dtypes, measured in one run.

MXFP8 (E4M3FN elements, blocks of 32, floor rule) and NVFP4 (1×16 blocks, FP32 tensor scale) of 16M
float32 standard-normal values (--quick: 4M) under the default `ocp` convention, against torchao's
eager CPU reference for the same recipe — `to_mx(x, float8_e4m3fn, 32, FLOOR)` and
`nvfp4_quantize(x, 16, per_tensor_amax_to_scale(max |x|))` — and our `convention="torchao"` path,
which reproduces those bit for bit. The calls are interleaved (ours, torchao, ours-as-torchao, ours,
…) so machine load hits all alike; each figure is the median of `repeats` calls. Ratios are
torchao's time over ours (> 1: ours is faster); targets MXFP8 ≥ 1.6, NVFP4 ≥ 2.6. Torch runs with
its default intra-op threads, and again with one thread (ours is single-threaded), which is the
steadier comparison on a shared machine; the 1-minute load average is recorded before and after.
Then, as before: the block quantizers against ml_dtypes' plain E4M3FN cast of the same array, and
one delayed-scaling step on a 1M tensor against a plain `formats.encode` cast (best of `repeats`).
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from typing import Any, Callable

import ml_dtypes
import numpy as np

from lowprec import formats as F
from lowprec.benchmarks._timing import best_of
from lowprec.simulations.delayed import DelayedScaler
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4

TARGETS = {"mxfp8": 1.6, "nvfp4": 2.6}  # torchao eager / ours


def interleaved_medians(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median wall seconds of each function, the calls interleaved round-robin after one warm-up each."""
    for fn in fns.values():
        fn()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(max(1, repeats)):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def _torchao_figures(x: np.ndarray, repeats: int) -> dict[str, Any]:
    try:
        import torch

        logging.getLogger("torchao").setLevel(logging.ERROR)
        import torchao
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    except ImportError as exc:  # torchao is a test extra: without it the comparison is skipped
        return {"torchao": f"not installed ({exc})"}
    t = torch.from_numpy(x)
    n = x.size
    res: dict[str, Any] = {"torchao": torchao.__version__}
    default_threads = torch.get_num_threads()
    for label, threads in (("", default_threads), ("_1thread", 1)):
        torch.set_num_threads(threads)
        try:
            m = interleaved_medians({
                "mxfp8": lambda: quantize_mx(x, "E4M3FN", 32, "floor"),
                "mxfp8_torchao": lambda: to_mx(t, torch.float8_e4m3fn, 32, ScaleCalculationMode.FLOOR),
                "mxfp8_as_torchao": lambda: quantize_mx(x, "E4M3FN", 32, "floor", convention="torchao"),
                "nvfp4": lambda: quantize_nvfp4(x),
                "nvfp4_torchao": lambda: nvfp4_quantize(t, 16, per_tensor_amax_to_scale(torch.max(torch.abs(t)))),
                "nvfp4_as_torchao": lambda: quantize_nvfp4(x, convention="torchao"),
            }, repeats)
        finally:
            torch.set_num_threads(default_threads)
        res[f"torch_threads{label}"] = threads
        for key, seconds in m.items():
            res[f"{key}_ns_per_el{label}"] = round(seconds / n * 1e9, 3)
        for fmt, target in TARGETS.items():
            ratio = m[f"{fmt}_torchao"] / m[fmt]
            res[f"{fmt}_vs_torchao_ratio{label}"] = round(ratio, 2)
            res[f"{fmt}_as_torchao_vs_torchao_ratio{label}"] = round(m[f"{fmt}_torchao"] / m[f"{fmt}_as_torchao"], 2)
            res[f"{fmt}_target_ratio"] = target
            res[f"{fmt}_within_target{label}"] = "yes" if ratio >= target else "NO"
    return res


def run(quick: bool = False) -> dict[str, Any]:
    n = (4 if quick else 16) * 1024 * 1024
    repeats = 5 if quick else 9
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32).reshape(-1, 4096)
    res: dict[str, Any] = {"n": n, "repeats": repeats, "load_average_1min_before": round(os.getloadavg()[0], 2)}
    res.update(_torchao_figures(x, repeats))
    t_md = best_of(lambda: x.astype(ml_dtypes.float8_e4m3fn), repeats)
    t_mx = best_of(lambda: quantize_mx(x, "E4M3FN", 32), repeats)
    t_nv = best_of(lambda: quantize_nvfp4(x), repeats)
    res["ml_dtypes_E4M3FN_cast_ns_per_el"] = round(t_md / n * 1e9, 3)
    res["mxfp8_vs_ml_dtypes_cast_ratio"] = round(t_md / t_mx, 2)  # target ≥ 1.0
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
    res["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    return res
