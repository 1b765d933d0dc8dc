"""Speed of the recompute-divergence simulation: the default widget case (4 layers, width 64,
batch 16, 20 steps, checkpointing on) for every variant, against a plain-torch training loop of the
same network (no quantization, no checkpointing) measured in the same run, and the per-call cost
of the `formats` encode/decode against an ml_dtypes cast of the same [16, 64] tensor. The budget is
≤ 1 s per default run (warm; the first call in a process also pays torch's one-time lazy import
of its dynamo machinery inside `torch.utils.checkpoint`, reported separately)."""

from __future__ import annotations

import statistics
import time
from typing import Callable

import ml_dtypes
import numpy as np
import torch

from lowprec import formats
from lowprec.simulations.recompute import VARIANTS, make_problem, run_recompute

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
    finally:
        torch.set_num_threads(old_threads)
    return out
