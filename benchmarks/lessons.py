"""Listing the course (`lowprec bench lessons`, issue 33 item 4): `lowprec lessons` (the outline)
and `lowprec lessons --json` (every answer) as a fresh install runs them — an empty record cache, so
`--json` reads the records shipped with the course — against `python -c "import numpy, ml_dtypes"`
(the floor of any numpy tool; the listing itself imports neither when its records are current), in
one run, interleaved (A, B, C, A, B, C, …) so machine load hits all three alike. Figures: the
median wall time and peak resident memory of each (fresh processes, from the temporary folder, each
reporting its own `VmHWM`), against the targets (outline ≤ 1 s and ≤ 150 MB, `--json` ≤ 2 s).
Without `--quick`, one more
`--json --no-cache` run: what a user whose numpy, ml_dtypes, numba or torch differs from the
shipped records' pays once (every lesson computed; then cached).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

# Each child reports its own peak resident memory (`VmHWM` of /proc/self/status, which starts afresh
# at exec): a forked child's `ru_maxrss` also counts the parent's pages, so a benchmark started from a
# large process (a test run) would report the parent's size.
_REPORT = ("import atexit, sys\n"
           "def _hwm():\n"
           "    for line in open('/proc/self/status'):\n"
           "        if line.startswith('VmHWM:'):\n"
           "            sys.stderr.write('\\nVmHWM ' + line.split()[1] + '\\n')\n"
           "atexit.register(_hwm)\n")
OUTLINE = [sys.executable, "-c", _REPORT + "from lowprec.app.cli import main\nraise SystemExit(main(sys.argv[1:]))",
           "lessons"]
LISTING = [*OUTLINE, "--json"]
COMPUTED = [*LISTING, "--no-cache"]
BASELINE = [sys.executable, "-c", _REPORT + "import numpy, ml_dtypes"]
TARGETS = {"outline_s": 1.0, "outline_mib": 150.0, "json_s": 2.0}
#: runs of each command (`--quick`, without)
RUNS = (5, 15)


def _run_once(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one run of `argv` from the temporary folder; RuntimeError
    if it fails."""
    start = time.perf_counter()
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tempfile.gettempdir(),
                       check=False)
    seconds = time.perf_counter() - start
    err = r.stderr.decode(errors="replace")
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[-3:])} failed (exit {r.returncode}): {err[-500:]}")
    kib = [line.split()[1] for line in err.splitlines() if line.startswith("VmHWM ")]
    return seconds, (float(kib[-1]) / 1024 if kib else float("nan"))


def run(quick: bool = False) -> dict[str, Any]:
    runs = RUNS[0] if quick else RUNS[1]
    saved = os.environ.get("LOWPREC_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="lowprec-bench-lessons-") as empty:
        try:
            outline: list[tuple[float, float]] = []
            listing: list[tuple[float, float]] = []
            base: list[tuple[float, float]] = []
            for _ in range(runs):
                for argv, out in ((OUTLINE, outline), (LISTING, listing), (BASELINE, base)):
                    # a fresh, empty cache each time: nothing any earlier run computed is read
                    os.environ["LOWPREC_CACHE_DIR"] = tempfile.mkdtemp(dir=empty)
                    out.append(_run_once(argv))
            computed = None if quick else _run_once(COMPUTED)
        finally:
            if saved is None:
                os.environ.pop("LOWPREC_CACHE_DIR", None)
            else:
                os.environ["LOWPREC_CACHE_DIR"] = saved

    def med(values: list[tuple[float, float]], i: int) -> float:
        return statistics.median(v[i] for v in values)

    figures: dict[str, Any] = {
        "runs_each": runs,
        "outline_median_s": round(med(outline, 0), 3),
        "outline_peak_rss_mib": round(med(outline, 1), 1),
        "json_median_s": round(med(listing, 0), 3),
        "json_peak_rss_mib": round(med(listing, 1), 1),
        "numpy_ml_dtypes_median_s": round(med(base, 0), 3),
        "numpy_ml_dtypes_peak_rss_mib": round(med(base, 1), 1),
        "json_ratio_to_numpy_import": round(med(listing, 0) / med(base, 0), 3),
        "targets": TARGETS,
        "within_targets": "yes" if (med(outline, 0) <= TARGETS["outline_s"]
                                    and med(outline, 1) <= TARGETS["outline_mib"]
                                    and med(listing, 0) <= TARGETS["json_s"]) else "NO",
    }
    if computed is not None:
        figures["json_computed_once_s"] = round(computed[0], 1)
        figures["json_computed_peak_rss_mib"] = round(computed[1], 1)
    figures["load_average_1min"] = round(os.getloadavg()[0], 2)
    return figures


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key}: {value}")
