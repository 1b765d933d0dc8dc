"""Alias of `lowprec.benchmarks.app` (the app's speed benchmark lives with every other benchmark in
`benchmarks/`, issue 27 item 7): `python -m lowprec.app.bench [--pages] …` runs it under this name,
and its names stay importable from here."""

from __future__ import annotations

import sys

from lowprec.benchmarks.app import (
    BUDGET_MS,
    CHROMIUM,
    DEFAULT_BUDGET_MS,
    PAGE_READY_BUDGET_S,
    main,
    page_ready_s,
    pages_report,
    run,
    settle,
)

__all__ = ["BUDGET_MS", "CHROMIUM", "DEFAULT_BUDGET_MS", "PAGE_READY_BUDGET_S", "main", "page_ready_s",
           "pages_report", "run", "settle"]

if __name__ == "__main__":
    sys.exit(main(prog="python -m lowprec.app.bench"))
