"""Timing helper shared by the benchmarks: the best (minimum) wall time of repeated calls, which is
the figure least disturbed by other work on the machine. Ratios are taken between figures measured
this way in the same run."""

from __future__ import annotations

import time
from typing import Any, Callable


def best_of(fn: Callable[[], Any], repeats: int) -> float:
    """Minimum wall-clock seconds of `repeats` calls of `fn` (at least one call)."""
    best = float("inf")
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best
