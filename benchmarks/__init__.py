"""Benchmarks: ratios against ml_dtypes/torch measured in the same run (never timed tests).

Every benchmark of lowprec lives here and is named in `BENCHMARKS`, the one table that `lowprec
bench [NAME ...]` enumerates: name → module exposing `run(quick: bool = False) -> dict` of named
figures (a module is imported only when its benchmark runs). Most measure the layers below the app
and import nothing of `lowprec.app`; `app` (widget updates, pages ready in a browser) and
`isolation` (one session's replies while others run heavy requests or an upload) drive the app and
may import it (`APP_BENCHMARKS` in tests/test_import_graph.py); `gpu` times the Triton kernels
through `lowprec.gpu.timing` (Triton is imported only under gpu/). The old entry points stay:
`python -m lowprec.app.bench` and `python -m lowprec.app.bench_isolation` are aliases.
"""

BENCHMARKS: dict[str, str] = {
    "formats": "lowprec.benchmarks.formats",
    "blocks": "lowprec.benchmarks.blocks",
    "attention": "lowprec.benchmarks.attention",
    "recompute": "lowprec.benchmarks.recompute",
    "cli": "lowprec.benchmarks.cli",
    "lessons": "lowprec.benchmarks.lessons",
    "analyze": "lowprec.benchmarks.analyze",
    "analyze_layouts": "lowprec.benchmarks.analyze_layouts",
    "gpu": "lowprec.benchmarks.gpu",
    "app": "lowprec.benchmarks.app",
    "isolation": "lowprec.benchmarks.isolation",
    "budgets": "lowprec.benchmarks.budgets",
    "gemm": "lowprec.benchmarks.gemm",
}
