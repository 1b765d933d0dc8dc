"""Format codec throughput against ml_dtypes, measured in the same run (ratios > 1: lowprec faster).

16M float32 standard-normal values (the issue's workload); each figure is the best of `repeats`
runs (default 100; --quick: 4M values × 5). Encode peak memory is measured with tracemalloc
relative to the output size.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import ml_dtypes
import numpy as np

from lowprec import formats as F
from lowprec.benchmarks._timing import best_of


def run(quick: bool = False) -> dict[str, Any]:
    n = (4 if quick else 16) * 1024 * 1024
    repeats = 5 if quick else 100
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    res: dict[str, Any] = {"n": n, "repeats": repeats}
    cases = [("E4M3FN", ml_dtypes.float8_e4m3fn, F.policy_for("ocp", F.E4M3FN)),  # RNE, saturate
             ("E5M2", ml_dtypes.float8_e5m2, F.policy_for("ml_dtypes", F.E5M2)),
             ("E2M1", ml_dtypes.float4_e2m1fn, F.policy_for("ml_dtypes", F.E2M1)),
             ("BF16", ml_dtypes.bfloat16, F.policy_for("ml_dtypes", F.BF16))]
    for name, dt, pol in cases:
        t_md = best_of(lambda: x.astype(dt), repeats)
        t_lp = best_of(lambda: F.encode(x, name, pol), repeats)
        res[f"encode_{name}_ns_per_el"] = round(t_lp / n * 1e9, 3)
        res[f"encode_{name}_ml_dtypes_ns_per_el"] = round(t_md / n * 1e9, 3)
        res[f"encode_{name}_ratio"] = round(t_md / t_lp, 2)
        if name == "E4M3FN":
            codes = F.encode(x, name, pol)
            y = x.astype(dt)
            t_md_dec = best_of(lambda: y.astype(np.float32), repeats)
            t_lp_dec = best_of(lambda: F.decode(codes, name), repeats)
            res["decode_E4M3FN_ratio"] = round(t_md_dec / t_lp_dec, 2)
            rng = np.random.default_rng(1)
            sr = pol.with_(rounding="stochastic")
            t_sr = best_of(lambda: F.encode(x, name, sr, rng=rng), max(3, repeats // 10))
            res["stochastic_E4M3FN_vs_ml_dtypes_rne_ratio"] = round(t_md / t_sr, 2)
            tracemalloc.start()
            F.encode(x, name, pol)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            res["encode_E4M3FN_peak_over_output"] = round(peak / codes.nbytes, 3)
    return res


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
