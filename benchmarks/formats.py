"""Codec throughput against torch's casts, ml_dtypes and the memory ceiling, in one interleaved run.

Workload: 16M float32 standard-normal values (--quick: 4M), the issue's. Every case is timed once
per round, rounds interleave all cases (so load changes hit every figure alike), and each figure is
the median over rounds. Ratios are peer time / lowprec time (> 1: lowprec faster). Peers:
torch's `x.to(dtype)` cast and float8 → float32 decode (torch.set_num_threads set to the codec's
thread count; for E2M1 and INT8, which torch cannot cast to on CPU, its E4M3FN cast), ml_dtypes' `astype` (single-threaded), numpy's `rint`/`clip` for INT8. `copy_bw`
is the fraction of float32 copy bandwidth reached: (bytes read + written by the operation / its
time) over (bytes of `np.copyto` of the same array / its time). The machine's load average is
printed with the figures: the machine may be shared, so read ratios, not absolute times.

Targets (issue 18): E4M3FN/E5M2 encode under the torch convention ≥ 1.0× torch's cast; every other
deterministic policy ≥ 0.8× torch's cast; BF16 encode ≥ 1.0× ml_dtypes; decode ≥ 1.0× torch's
float8 → float32; stochastic rounding ≥ 0.5× torch's nearest-even cast; peak extra memory ≤ 10%
of the output (tracemalloc, compiled path).
"""

from __future__ import annotations

import os
import statistics
import time
import tracemalloc
from dataclasses import dataclass
from typing import Any, Callable

import ml_dtypes
import numpy as np
import torch

from lowprec import formats as F
from lowprec.formats import codec

TORCH_DTYPES = {"E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2, "BF16": torch.bfloat16,
                "FP16": torch.float16, "E8M0": torch.float8_e8m0fnu}
ML_DTYPES = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2, "BF16": ml_dtypes.bfloat16,
             "E2M1": ml_dtypes.float4_e2m1fn, "E8M0": ml_dtypes.float8_e8m0fnu, "FP16": np.float16}


@dataclass
class Case:
    label: str  # what is measured
    lowprec: Callable[[], Any]
    peers: dict[str, Callable[[], Any]]  # peer name → call
    bytes_moved: int  # bytes read + written by the operation
    target: tuple[str, float] | None = None  # (peer, minimum ratio) from the issue


def _encode_case(x: np.ndarray, xt: torch.Tensor, name: str, pol: F.CastPolicy, label: str,
                 target: tuple[str, float] | None, torch_input: torch.Tensor | None = None,
                 seed: int | None = None) -> Case:
    fmt = F.get_format(name)
    peers: dict[str, Callable[[], Any]] = {}
    src = xt if torch_input is None else torch_input
    # formats torch cannot cast to on CPU (E2M1, INT8) are held against its E4M3FN cast
    dt = TORCH_DTYPES.get(name, torch.float8_e4m3fn)
    peers["torch"] = lambda: src.to(dt)
    if name in ML_DTYPES:
        mdt = ML_DTYPES[name]
        src_np = x if torch_input is None else torch_input.numpy()
        peers["ml_dtypes"] = lambda: src_np.astype(mdt)
    if name == "INT8":
        peers["numpy rint+clip"] = lambda: np.clip(np.rint(x), -128, 127).astype(np.int8)
    arr = x if torch_input is None else torch_input.numpy()
    out_bytes = np.dtype(fmt.code_dtype).itemsize * x.size
    return Case(label, lambda: F.encode(arr, fmt, pol, seed=seed), peers, x.nbytes + out_bytes, target)


def _cases(x: np.ndarray) -> list[Case]:
    xt = torch.from_numpy(x)
    xa = np.abs(x) + np.float32(2.0**-100)  # E8M0 scales: positive
    xat = torch.from_numpy(xa)
    pol = F.policy_for
    cases = [
        _encode_case(x, xt, "E4M3FN", pol("torch", "E4M3FN"), "encode E4M3FN torch (RNE, saturate)", ("torch", 1.0)),
        _encode_case(x, xt, "E5M2", pol("torch", "E5M2"), "encode E5M2 torch (RNE, Inf)", ("torch", 1.0)),
        _encode_case(x, xt, "E4M3FN", pol("ml_dtypes", "E4M3FN"), "encode E4M3FN ml_dtypes (NaN on overflow)", ("torch", 0.8)),
        _encode_case(x, xt, "E5M2", pol("triton_nvidia", "E5M2"), "encode E5M2 triton_nvidia (saturate)", ("torch", 0.8)),
        _encode_case(x, xt, "E4M3FN", pol("ocp", "E4M3FN").with_(rounding="toward_zero"), "encode E4M3FN toward_zero", ("torch", 0.8)),
        _encode_case(x, xt, "E4M3FN", pol("ocp", "E4M3FN").with_(rounding="up"), "encode E4M3FN up", ("torch", 0.8)),
        _encode_case(x, xt, "E4M3FN", pol("ocp", "E4M3FN").with_(rounding="nearest_away"), "encode E4M3FN nearest_away", ("torch", 0.8)),
        _encode_case(x, xt, "E4M3FN", pol("ocp", "E4M3FN").with_(subnormals="flush"), "encode E4M3FN flush subnormals", ("torch", 0.8)),
        _encode_case(x, xt, "E2M1", pol("ocp", "E2M1"), "encode E2M1 ocp", ("torch", 0.8)),
        _encode_case(x, xt, "E8M0", pol("torch", "E8M0"), "encode E8M0 torch", ("torch", 0.8), torch_input=xat),
        _encode_case(x, xt, "BF16", pol("ml_dtypes", "BF16"), "encode BF16 ml_dtypes", ("ml_dtypes", 1.0)),
        _encode_case(x, xt, "BF16", pol("torch", "BF16"), "encode BF16 torch", ("torch", 0.8)),
        _encode_case(x, xt, "FP16", pol("torch", "FP16"), "encode FP16 torch", ("torch", 0.8)),
        _encode_case(x, xt, "INT8", pol("ocp", "INT8"), "encode INT8 (RNE, saturate)", None),
        _encode_case(x, xt, "E4M3FN", pol("ocp", "E4M3FN").with_(rounding="stochastic"),
                     "stochastic E4M3FN (Philox-4x32-10)", ("torch", 0.5), seed=1),
        _encode_case(x, xt, "E2M1", pol("ocp", "E2M1").with_(rounding="stochastic"),
                     "stochastic E2M1 (Philox-4x32-10)", None, seed=1),
    ]
    del xa
    for name in ("E4M3FN", "E5M2", "BF16"):
        cases.append(_decode_case(x, xt, name))
    return cases


def _decode_case(x: np.ndarray, xt: torch.Tensor, name: str) -> Case:
    fmt = F.get_format(name)
    codes = F.encode(x, fmt, F.policy_for("torch", fmt))
    tcodes = xt.to(TORCH_DTYPES[name])
    mcodes = x.astype(ML_DTYPES[name])
    peers: dict[str, Callable[[], Any]] = {"torch": lambda: tcodes.float(),
                                           "ml_dtypes": lambda: mcodes.astype(np.float32)}
    return Case(f"decode {name} → float32", lambda: F.decode(codes, fmt), peers,
                codes.nbytes + 4 * x.size, ("torch", 1.0))


def _measure(cases: list[Case], x: np.ndarray, rounds: int) -> list[dict[str, Any]]:
    copy_dst = np.empty_like(x)
    calls: list[tuple[int, str, Callable[[], Any]]] = [(-1, "copy", lambda: np.copyto(copy_dst, x))]
    for i, c in enumerate(cases):
        calls.append((i, "lowprec", c.lowprec))
        calls.extend((i, peer, fn) for peer, fn in c.peers.items())
    for _, _, fn in calls:  # warm-up: compile kernels, fault pages in
        fn()
    times: dict[tuple[int, str], list[float]] = {(i, who): [] for i, who, _ in calls}
    for _ in range(rounds):
        for i, who, fn in calls:
            t0 = time.perf_counter()
            fn()
            times[(i, who)].append(time.perf_counter() - t0)
    t_copy = statistics.median(times[(-1, "copy")])
    copy_rate = 2 * x.nbytes / t_copy
    rows = []
    for i, c in enumerate(cases):
        t = statistics.median(times[(i, "lowprec")])
        row: dict[str, Any] = {"ms": round(t * 1e3, 2), "copy_bw": round(c.bytes_moved / t / copy_rate, 2)}
        for peer in c.peers:
            tp = statistics.median(times[(i, peer)])
            row[f"{peer}_ms"] = round(tp * 1e3, 2)
            row[f"vs_{peer}"] = round(tp / t, 2)
        if c.target is not None:
            peer, minimum = c.target
            row["target"] = f"≥ {minimum}× {peer}: {'met' if row[f'vs_{peer}'] >= minimum else 'NOT met'}"
        rows.append({"case": c.label, **row})
    rows.append({"case": "float32 copy (np.copyto)", "ms": round(t_copy * 1e3, 2), "copy_bw": 1.0})
    return rows


def _peak_over_output(x: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    for label, pol, seed in (("encode E4M3FN", F.policy_for("torch", "E4M3FN"), None),
                             ("stochastic E4M3FN", F.policy_for("ocp", "E4M3FN").with_(rounding="stochastic"), 1)):
        tracemalloc.start()
        codes = F.encode(x, F.E4M3FN, pol, seed=seed)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[label] = round((peak - codes.nbytes) / codes.nbytes, 4)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    n = (4 if quick else 16) * 1024 * 1024
    rounds = 5 if quick else 15
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    res: dict[str, Any] = {"n": n, "rounds (medians)": rounds, "codec path": codec._PATH,
                           "cpu count": os.cpu_count()}
    default_threads = codec.codec_threads()
    torch_threads = torch.get_num_threads()
    try:
        for threads in sorted({1, default_threads}):
            codec.set_codec_threads(threads)
            torch.set_num_threads(threads)
            load_before = os.getloadavg()
            rows = _measure(_cases(x), x, rounds)
            load_after = os.getloadavg()
            res[f"threads={threads}: load average (1, 5, 15 min) before"] = [round(v, 2) for v in load_before]
            for row in rows:
                res[f"threads={threads}: {row.pop('case')}"] = row
            res[f"threads={threads}: load average after"] = [round(v, 2) for v in load_after]
    finally:
        codec.set_codec_threads(default_threads)
        torch.set_num_threads(torch_threads)
    res["peak extra memory / output (tracemalloc)"] = _peak_over_output(x)
    return res


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2, ensure_ascii=False))
