"""GPU benchmarks (scaled cast vs device copy bandwidth, FP8 GEMM vs torch._scaled_mm); they
live in gpu/bench.py and report `skipped` without CUDA."""

from __future__ import annotations

from typing import Any


def run(quick: bool = False) -> dict[str, Any]:
    from lowprec.gpu.bench import run as gpu_run

    return dict(gpu_run(quick=quick))
