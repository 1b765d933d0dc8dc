"""GPU benchmarks of the Triton kernels against the device's own yardsticks, measured in one run:
scaled cast FP32/BF16 → E4M3FN throughput (bytes read + written per second) against a device
float32 copy (`Tensor.copy_`, target ≥ 80 %), and the FP8 GEMM's TFLOP/s at 8192³ (2·M·N·K flops)
against `torch._scaled_mm` with FP32 output (target ≥ 70 %). Times are `triton.testing.do_bench`
medians (`gpu.timing`: Triton is imported only under gpu/). `run(quick)` is `lowprec bench gpu`;
`python -m lowprec.benchmarks.gpu --json OUT` runs it
and rewrites OUT after every figure, so a run cut off by a time limit keeps what it measured;
`budget_s` stops trying further GEMM tile configurations once spent (the `_scaled_mm` yardstick is
always measured). Without CUDA it returns {'skipped': reason}.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable

import torch

from lowprec import strictjson
from lowprec.gpu.timing import time_ms as _time_ms
from lowprec.gpu.timing import triton_version


Sink = Callable[[dict[str, Any]], None]


def _cast_figures(quick: bool, res: dict[str, Any], save: Sink, deadline: float) -> None:
    from lowprec.gpu import kernels

    n = (64 if quick else 256) * 2**20
    res["cast_elements"] = n
    x = torch.randn(n, device="cuda", dtype=torch.float32)
    y = torch.empty_like(x)
    t_copy = _time_ms(lambda: y.copy_(x))
    copy_gbps = 2 * 4 * n / t_copy * 1e-6
    res["copy_fp32_GBps"] = round(copy_gbps, 1)
    encode_scale = torch.tensor([0.5], device="cuda")
    for src, width in (("fp32", 4), ("bf16", 2)):
        xs = x if src == "fp32" else x.to(torch.bfloat16)
        for fmt in ("E4M3FN", "E5M2"):
            t = _time_ms(lambda: kernels.scaled_cast(xs, fmt, encode_scale))
            gbps = (width + 1) * n / t * 1e-6
            res[f"cast_{src}_to_{fmt}_GBps"] = round(gbps, 1)
            res[f"cast_{src}_to_{fmt}_vs_copy"] = round(gbps / copy_gbps, 3)
            save(res)
    res["cast_target_vs_copy"] = 0.8


GEMM_CONFIGS = [(128, 256, 128, 8, 8, 3), (128, 128, 128, 8, 4, 4), (256, 128, 128, 8, 8, 3),
                (128, 256, 64, 8, 8, 4), (128, 128, 64, 8, 4, 5)]


def _gemm_figures(quick: bool, res: dict[str, Any], save: Sink, deadline: float) -> None:
    from lowprec.gpu import kernels

    size = 4096 if quick else 8192
    m = n = k = size
    flops = 2.0 * m * n * k
    res["gemm_size"] = size
    a8 = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
    bt8 = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)  # B transposed: K-major
    sa = torch.tensor([0.5], device="cuda")
    sb = torch.tensor([0.25], device="cuda")
    a, bt = a8.view(torch.uint8), bt8.view(torch.uint8)
    for label, fast in (("scaled_mm", False), ("scaled_mm_fast_accum", True)):
        try:
            t = _time_ms(lambda: torch._scaled_mm(a8, bt8.t(), scale_a=sa.reshape(()),
                                                  scale_b=sb.reshape(()), out_dtype=torch.float32,
                                                  use_fast_accum=fast))
            res[f"gemm_{label}_TFLOPs"] = round(flops / t * 1e-9, 1)
        except (RuntimeError, TypeError) as exc:
            res[f"gemm_{label}"] = f"failed: {exc}"[:200]
        save(res)
    best: tuple[float, Any] = (float("inf"), None)
    for cfg in GEMM_CONFIGS:
        tag = f"gemm_config_{'x'.join(map(str, cfg))}"
        if best[1] is not None and time.monotonic() > deadline:
            res[tag] = "not tried (time budget spent)"
            continue
        try:
            t = _time_ms(lambda: kernels.fp8_gemm(a, bt.t(), sa, sb, config=cfg))
        except Exception as exc:  # noqa: BLE001 - an illegal config (shared memory) is skipped
            res[tag] = f"failed: {type(exc).__name__}"
            continue
        res[f"{tag}_TFLOPs"] = round(flops / t * 1e-9, 1)
        best = min(best, (t, cfg), key=lambda p: p[0])
        save(res)
    if best[1] is None:
        res["gemm_triton"] = "no config ran"
        return
    res["gemm_triton_TFLOPs"] = round(flops / best[0] * 1e-9, 1)
    res["gemm_triton_config"] = "x".join(map(str, best[1]))
    for label in ("scaled_mm", "scaled_mm_fast_accum"):
        if f"gemm_{label}_TFLOPs" in res:  # time ratio = TFLOP/s ratio (same flops)
            res[f"gemm_triton_vs_{label}"] = round(res["gemm_triton_TFLOPs"]
                                                   / res[f"gemm_{label}_TFLOPs"], 3)
    res["gemm_target_vs_scaled_mm"] = 0.7


def run(quick: bool = False, *, budget_s: float | None = None,
        save: Sink | None = None) -> dict[str, Any]:
    """Figures as {name: value}; `save(res)` is called after each figure (default: nothing)."""
    if not torch.cuda.is_available():
        return {"skipped": "CUDA is not available (torch.cuda.is_available() is False)"}
    triton = triton_version()  # Triton missing: ImportError here, as before any figure
    deadline = time.monotonic() + (budget_s if budget_s is not None else float("inf"))
    sink: Sink = save or (lambda res: None)
    res: dict[str, Any] = {"device": torch.cuda.get_device_name(0), "torch": str(torch.__version__),
                           "triton": triton}
    for part in (_cast_figures, _gemm_figures):
        try:
            part(quick, res, sink, deadline)
        except Exception as exc:  # noqa: BLE001 - keep the other figures when one part fails
            res[part.__name__.strip("_")] = f"failed: {type(exc).__name__}: {exc}"[:400]
        sink(res)
    return res


def main(argv: list[str] | None = None) -> int:
    from lowprec.commandline import ArgumentParser  # the one bad-option report

    p = ArgumentParser(prog="python -m lowprec.benchmarks.gpu", description=__doc__)
    p.add_argument("--quick", action="store_true", help="smaller sizes (cast 64 Mi elements, GEMM 4096³)")
    p.add_argument("--json", default=None, help="write the figures here (rewritten after each one)")
    p.add_argument("--budget-s", type=float, default=None,
                   help="stop trying further GEMM tile configurations after this many seconds")
    args = p.parse_args(argv)

    def save(res: dict[str, Any]) -> None:
        if args.json:
            strictjson.write(res, args.json)

    res = run(quick=args.quick, budget_s=args.budget_s, save=save)
    save(res)
    for key, val in res.items():
        print(f"{key}: {val}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
