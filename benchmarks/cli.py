"""CLI start-up (`lowprec bench cli`): `lowprec cast E4M3FN 3.3` against `python -c "import numpy,
ml_dtypes"`, the floor any numpy tool pays, in one run.

Each command is started as a fresh process (`python -m lowprec.app.cli …`, the console script's own
entry point) with the same interpreter, from the temporary folder (so a `lowprec/` folder in the
current directory cannot shadow the lowprec on the path); the two are interleaved (A, B, A, B, …) so machine load
hits both alike, and the figure is the median wall time of each, with the peak resident memory of
each child (`os.wait4`'s ru_maxrss). Target (issue 11): cast ≤ 2 × the baseline.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

CAST = [sys.executable, "-m", "lowprec.app.cli", "cast", "E4M3FN", "3.3"]
BASELINE = [sys.executable, "-c", "import numpy, ml_dtypes"]
TARGET_RATIO = 2.0


def _run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one run of `argv`; RuntimeError if it fails."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=tempfile.gettempdir())
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed (exit {proc.returncode}): {err[-500:]}")
    return seconds, usage.ru_maxrss / 1024  # Linux reports KiB


def run(quick: bool = False) -> dict[str, Any]:
    """Figures: medians (s) and peak RSS (MiB) of both commands, their ratio, the target."""
    runs = 10 if quick else 20
    _run_once(CAST)  # warm the file cache (bytecode, shared libraries) for both
    _run_once(BASELINE)
    cast: list[tuple[float, float]] = []
    base: list[tuple[float, float]] = []
    for _ in range(runs):
        cast.append(_run_once(CAST))
        base.append(_run_once(BASELINE))
    cast_s = statistics.median(t for t, _ in cast)
    base_s = statistics.median(t for t, _ in base)
    return {
        "runs_each": runs,
        "cast_median_s": round(cast_s, 4),
        "numpy_ml_dtypes_median_s": round(base_s, 4),
        "ratio": round(cast_s / base_s, 3),
        "target_ratio": TARGET_RATIO,
        "within_target": "yes" if cast_s <= TARGET_RATIO * base_s else "NO",
        "cast_peak_rss_mib": round(statistics.median(m for _, m in cast), 1),
        "numpy_ml_dtypes_peak_rss_mib": round(statistics.median(m for _, m in base), 1),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
