"""Device timing for the GPU benchmarks (`lowprec.benchmarks.gpu`): Triton's `do_bench` median and
the Triton version. The benchmarks' only uses of Triton, kept here because Triton is imported only
under `gpu/` (tests/test_import_graph.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def time_ms(fn: Callable[[], Any]) -> float:
    """Median milliseconds of `fn()` on the device (`triton.testing.do_bench`, 25 ms warm-up, 200 ms
    of repeats)."""
    from triton.testing import do_bench

    return float(do_bench(fn, warmup=25, rep=200, return_mode="median"))


def triton_version() -> str:
    import triton

    return str(triton.__version__)
