"""Block-format throughput against torchao's eager reference, in one interleaved run.

Workload: 16M float32 standard-normal values (--quick: 4M) as a 4096-column matrix, blocks along rows.
Contenders, timed round-robin in one process so machine load hits all alike (each figure the median
of `repeats` rounds after one warm-up call each, which also compiles our kernels):

- MXFP8 (E4M3FN, blocks of 32, floor): ours under the default `ocp` convention, ours under
  `convention="torchao"` (bit-identical to torchao), ours on the numpy reference path (the codec
  switch forced to `numpy`), and torchao 0.18's `to_mx(x, float8_e4m3fn, 32, FLOOR)`;
  MXFP8 under `transformer_engine` (rceil) against the same torchao call (TE has no CPU path);
- MXFP4 (E2M1, blocks of 32, floor): ours (ocp, and as torchao) against `to_mx(x, float4_e2m1fn_x2, …)`;
- NVFP4 (1×16, FP32 tensor scale): ours (ocp, and as torchao) against torchao's `nvfp4_quantize(x,
  16, per_tensor_amax_to_scale(max |x|))`;
- `np.copyto` of the same array: `copy_bw` is the fraction of float32 copy bandwidth an operation
  reaches, (bytes read + written) / time over (2 · 4n bytes) / copy time.

Run at one thread (torch.set_num_threads(1) and the codec's thread count 1 — the steady comparison on
a shared machine) and at the codec's default thread count with torch at the same count. Ratios are
torchao's time over ours (> 1: ours faster). Targets (issue 18): MXFP8 ≥ 2×, NVFP4 ≥ 3× torchao's
eager reference. The machine's load (/proc/loadavg: 1, 5, 15 min) is recorded before and after each
thread setting: the machine may be shared, so read ratios, not absolute times.
"""

from __future__ import annotations

import logging
import os
import statistics
import time
from typing import Any, Callable

import numpy as np

from lowprec.formats import codec
from lowprec.simulations.quant.mx import quantize_mx
from lowprec.simulations.quant.nvfp4 import quantize_nvfp4

TARGETS = {"MXFP8": 2.0, "NVFP4": 3.0}  # torchao eager time / ours (issue 18)


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages from /proc/loadavg (os.getloadavg where it is absent)."""
    try:
        with open("/proc/loadavg") as fh:
            return [float(v) for v in fh.read().split()[:3]]
    except OSError:
        return [round(v, 2) for v in os.getloadavg()]


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


def _numpy_path(fn: Callable[[], Any]) -> Callable[[], Any]:
    def run() -> Any:
        with codec.codec_path("numpy"):
            return fn()
    return run


def _contenders(x: np.ndarray) -> tuple[dict[str, Callable[[], Any]], list[tuple[str, str, str, int]]]:
    """(calls by name, comparisons (label, ours, theirs, bytes moved by ours)); torchao's calls are
    left out where torchao is not installed."""
    n = x.size
    calls: dict[str, Callable[[], Any]] = {
        "copy": lambda: np.copyto(copy_dst, x),
        "MXFP8 ocp": lambda: quantize_mx(x, "E4M3FN", 32, "floor"),
        "MXFP8 as torchao": lambda: quantize_mx(x, "E4M3FN", 32, "floor", convention="torchao"),
        "MXFP8 transformer_engine": lambda: quantize_mx(x, "E4M3FN", 32, convention="transformer_engine"),
        "MXFP8 ocp, numpy reference path": _numpy_path(lambda: quantize_mx(x, "E4M3FN", 32, "floor")),
        "MXFP4 ocp": lambda: quantize_mx(x, "E2M1", 32, "floor"),
        "MXFP4 as torchao": lambda: quantize_mx(x, "E2M1", 32, "floor", convention="torchao"),
        "NVFP4 ocp": lambda: quantize_nvfp4(x),
        "NVFP4 as torchao": lambda: quantize_nvfp4(x, convention="torchao"),
    }
    copy_dst = np.empty_like(x)
    mx_bytes = 4 * n + n + n // 32  # float32 in, one code byte per element, one scale per 32
    nv_bytes = 4 * n + n + n // 16
    comparisons = [
        ("MXFP8 (E4M3FN, floor) ocp", "MXFP8 ocp", "torchao to_mx E4M3FN", mx_bytes),
        ("MXFP8 (E4M3FN, floor) as torchao", "MXFP8 as torchao", "torchao to_mx E4M3FN", mx_bytes),
        ("MXFP8 (E4M3FN, rceil) transformer_engine", "MXFP8 transformer_engine", "torchao to_mx E4M3FN", mx_bytes),
        ("MXFP8 ocp, numpy reference path", "MXFP8 ocp, numpy reference path", "torchao to_mx E4M3FN", mx_bytes),
        ("MXFP4 (E2M1, floor) ocp", "MXFP4 ocp", "torchao to_mx E2M1", mx_bytes),
        ("MXFP4 (E2M1, floor) as torchao", "MXFP4 as torchao", "torchao to_mx E2M1", mx_bytes),
        ("NVFP4 (1x16) ocp", "NVFP4 ocp", "torchao nvfp4_quantize", nv_bytes),
        ("NVFP4 (1x16) as torchao", "NVFP4 as torchao", "torchao nvfp4_quantize", nv_bytes),
    ]
    try:
        import torch

        logging.getLogger("torchao").setLevel(logging.ERROR)
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
        from torchao.prototype.mx_formats.nvfp4_tensor import nvfp4_quantize, per_tensor_amax_to_scale
    except ImportError:  # torchao is a test extra: without it only our own figures are measured
        return calls, []
    t = torch.from_numpy(x)
    floor = ScaleCalculationMode.FLOOR
    calls["torchao to_mx E4M3FN"] = lambda: to_mx(t, torch.float8_e4m3fn, 32, floor)
    calls["torchao to_mx E2M1"] = lambda: to_mx(t, torch.float4_e2m1fn_x2, 32, floor)
    calls["torchao nvfp4_quantize"] = lambda: nvfp4_quantize(t, 16, per_tensor_amax_to_scale(torch.max(torch.abs(t))))
    return calls, comparisons


def run(quick: bool = False) -> dict[str, Any]:
    n = (4 if quick else 16) * 1024 * 1024
    repeats = 5 if quick else 9
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32).reshape(-1, 4096)
    res: dict[str, Any] = {"n": n, "repeats (medians)": repeats, "codec path": codec._PATH,
                           "cpu count": os.cpu_count()}
    try:
        import torch
        import torchao

        res["torchao"] = torchao.__version__
    except ImportError as exc:
        res["torchao"] = f"not installed ({exc}): no ratios"
        torch = None  # type: ignore[assignment]
    calls, comparisons = _contenders(x)
    default_threads = codec.codec_threads()
    torch_threads = torch.get_num_threads() if torch is not None else 1
    try:
        for threads in sorted({1, default_threads}):
            codec.set_codec_threads(threads)
            if torch is not None:
                torch.set_num_threads(threads)
            tag = f"threads={threads}"
            res[f"{tag}: load average (1, 5, 15 min) before"] = load_average()
            m = interleaved_medians(calls, repeats)
            res[f"{tag}: load average after"] = load_average()
            copy_rate = 2 * x.nbytes / m["copy"]
            res[f"{tag}: float32 copy (np.copyto)"] = {"ms": round(m["copy"] * 1e3, 2)}
            for label, ours, theirs, moved in comparisons:
                row: dict[str, Any] = {"ms": round(m[ours] * 1e3, 2), f"{theirs} ms": round(m[theirs] * 1e3, 2),
                                       "ratio": round(m[theirs] / m[ours], 2),
                                       "copy_bw": round(moved / m[ours] / copy_rate, 2)}
                family = label.split()[0]
                if family in TARGETS and "numpy" not in label:
                    target = TARGETS[family]
                    row["target"] = f"≥ {target}×: {'met' if row['ratio'] >= target else 'NOT met'}"
                res[f"{tag}: {label}"] = row
            if not comparisons:
                for name, seconds in m.items():
                    res[f"{tag}: {name} ms"] = round(seconds * 1e3, 2)
    finally:
        codec.set_codec_threads(default_threads)
        if torch is not None:
            torch.set_num_threads(torch_threads)
    res.update(_delayed_step(x, repeats))
    return res


def _delayed_step(x: np.ndarray, repeats: int) -> dict[str, Any]:
    """As before issue 18: one delayed-scaling step on a 1M tensor against a plain `formats.encode`
    cast and ml_dtypes' cast (best of repeats; target step ≤ 1.3 × the plain cast)."""
    import ml_dtypes

    from lowprec import formats as F
    from lowprec.benchmarks._timing import best_of
    from lowprec.simulations.scaling.delayed import DelayedScaler

    y = x.reshape(-1)[: 1 << 20].copy()
    pol = F.policy_for("ocp", F.E4M3FN)
    scaler = DelayedScaler(F.E4M3FN, 16, "max", 0, pol)
    step_repeats = repeats * 10
    t_step = best_of(lambda: scaler.quantize(y), step_repeats)
    t_cast = best_of(lambda: F.encode(y, F.E4M3FN, pol), step_repeats)
    t_md = best_of(lambda: y.astype(ml_dtypes.float8_e4m3fn), step_repeats)
    return {"delayed_step_1M_us": round(t_step * 1e6, 1),
            "delayed_step_over_plain_cast": round(t_step / t_cast, 2),
            "delayed_step_over_ml_dtypes_cast": round(t_step / t_md, 2)}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, ensure_ascii=False))
