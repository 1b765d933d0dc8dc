"""Benchmarks: ratios against ml_dtypes/torch measured in the same run (never timed tests).

Each module exposes `run(quick: bool = False) -> dict` returning named figures. `lowprec bench
[NAME ...]` runs them (its table, `lowprec.app.commands.bench_cmd.BENCHMARKS`, names every
benchmark: these and the app's own, `lowprec.app.bench`). This package measures the layers below
the app and the command's start-up; it imports nothing of `lowprec.app`.
"""
