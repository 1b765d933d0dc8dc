"""Speed of the recompute-divergence simulation: the default widget case (4 layers, width 64,
batch 16, 20 steps, checkpointing on) for every variant, against a plain-torch training loop of the
same network (no quantization, no checkpointing) measured in the same run, and the per-call cost
of the `formats` encode/decode against an ml_dtypes cast of the same [16, 64] tensor. The budget is
≤ 1 s per default run (warm; the first call in a process also pays torch's one-time lazy import
of its dynamo machinery inside `torch.utils.checkpoint`, reported separately).

Without --quick it also runs the slowest variant at the maximum of every `RecomputeConfig` bound
together, in a fresh process, and reports its wall time and peak-RSS growth beside the record's
`cost()` estimate (the figures a budget check relies on)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Callable

import ml_dtypes
import numpy as np
import torch

from lowprec import formats
from lowprec.config import fields_of
from lowprec.simulations.recompute import VARIANTS, RecomputeConfig, make_problem, run_recompute

LAYERS, WIDTH, BATCH, STEPS = 4, 64, 16, 20


def _median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _plain_torch_loop() -> float:
    """The same tanh MLP and SGD loop with no quantization and no checkpointing; final loss."""
    prob = make_problem(0, LAYERS, WIDTH, BATCH, STEPS)
    ws = [torch.from_numpy(w.copy()).requires_grad_(True) for w in prob.weights]
    bs = [torch.from_numpy(b.copy()).requires_grad_(True) for b in prob.biases]
    loss = torch.zeros(())
    for t in range(STEPS):
        h = torch.from_numpy(prob.inputs[t])
        for w, b in zip(ws, bs):
            h = torch.tanh(torch.nn.functional.linear(h, w, b))
        loss = torch.mean((h - torch.from_numpy(prob.targets[t])) ** 2)
        loss.backward()
        with torch.no_grad():
            for p in (*ws, *bs):
                assert p.grad is not None
                p -= 0.1 * p.grad
                p.grad = None
    return float(loss.detach())


_AT_BOUNDS = """
import json, resource, sys, time
from lowprec.simulations.recompute import RecomputeConfig, run_config, warm_up
warm_up()
run_config(RecomputeConfig(layers=1, width=8, batch=2, steps=1))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
config = RecomputeConfig(**json.loads(sys.argv[1]))
t0 = time.perf_counter()
run_config(config)
seconds = time.perf_counter() - t0
grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024
print(json.dumps({"seconds": seconds, "rss_growth_bytes": grown}))
"""


def at_bounds(variant: str = "stale-centre") -> dict[str, float | str]:
    """The slowest variant with every size knob at its upper bound, in a fresh process: measured
    wall time and peak-RSS growth against `RecomputeConfig.cost()`."""
    sizes = {k.name: k.bounds[1] for k in fields_of(RecomputeConfig)
             if k.name in ("layers", "width", "batch", "steps") and k.bounds is not None}
    params = {"variant": variant, **sizes}
    cost = RecomputeConfig(**params).cost()  # type: ignore[attr-defined]
    proc = subprocess.run([sys.executable, "-c", _AT_BOUNDS, json.dumps(params)], capture_output=True,
                          text=True, check=True, timeout=600)
    measured = json.loads(proc.stdout)
    return {
        "at_bounds": ", ".join(f"{k}={v}" for k, v in params.items()),
        "at_bounds_s": round(measured["seconds"], 2),
        "at_bounds_cost_estimate_s": round(cost.seconds, 2),
        "at_bounds_rss_growth_mib": round(measured["rss_growth_bytes"] / 2**20, 1),
        "at_bounds_cost_estimate_mib": round(cost.bytes / 2**20, 1),
    }


def run(quick: bool = False) -> dict[str, float | str]:
    repeats = 3 if quick else 7
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)  # run_recompute pins one thread itself; the plain loop gets the same
    try:
        t0 = time.perf_counter()
        run_recompute("fixed")
        first_call_s = time.perf_counter() - t0
        out: dict[str, float | str] = {"first_call_in_process_s": round(first_call_s, 4)}
        fixed_s = _median_s(lambda: run_recompute("fixed"), repeats)
        out["default_case_fixed_s"] = round(fixed_s, 4)
        slowest = ("fixed", fixed_s)
        for variant in VARIANTS:
            if variant == "fixed":
                continue
            s = _median_s(lambda: run_recompute(variant), max(1, repeats // 2))
            if s > slowest[1]:
                slowest = (variant, s)
        out["slowest_variant"] = slowest[0]
        out["slowest_variant_s"] = round(slowest[1], 4)
        out["within_1s_budget"] = "yes" if slowest[1] <= 1.0 else "no"
        plain_s = _median_s(_plain_torch_loop, repeats)
        out["plain_torch_same_net_s"] = round(plain_s, 4)
        out["fixed_vs_plain_torch_ratio"] = round(fixed_s / plain_s, 2)

        x = np.random.default_rng(0).standard_normal((BATCH, WIDTH)).astype(np.float32) * 50
        policy = formats.CastPolicy(overflow=formats.Overflow.SATURATE)
        n = 200 if quick else 1000
        fmt_s = _median_s(lambda: [formats.decode(formats.encode(x, formats.E4M3FN, policy),
                                                  formats.E4M3FN) for _ in range(n)], 3) / n
        ml_s = _median_s(lambda: [np.clip(x, -448, 448).astype(ml_dtypes.float8_e4m3fn)
                                  .astype(np.float32) for _ in range(n)], 3) / n
        out["quantize_call_us"] = round(fmt_s * 1e6, 2)
        out["ml_dtypes_cast_call_us"] = round(ml_s * 1e6, 2)
        out["quantize_vs_ml_dtypes_ratio"] = round(fmt_s / ml_s, 2)
        if not quick:
            out.update(at_bounds())
    finally:
        torch.set_num_threads(old_threads)
    return out
