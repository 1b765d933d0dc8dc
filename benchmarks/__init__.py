"""Benchmarks: ratios against ml_dtypes/torch measured in the same run (never timed tests).

Each module exposes `run(quick: bool = False) -> dict` returning named figures; `lowprec bench
[NAME ...]` runs them (BENCHMARKS lists the modules) and prints/saves the results."""

BENCHMARKS = ("formats", "blocks", "attention", "recompute", "app", "gpu")
