"""Alias of `lowprec.benchmarks.isolation` (the session-isolation benchmark lives with every other
benchmark in `benchmarks/`, issue 27 item 7): `python -m lowprec.app.bench_isolation [--upload] …`
runs it under this name, and its names stay importable from here."""

from __future__ import annotations

import sys

from lowprec.benchmarks.isolation import (
    CHROMIUM,
    CHROMIUM_ARGS,
    HEAVY,
    PAGE_TARGET_S,
    RELOAD_S,
    UPDATE_TARGET_S,
    UPLOAD_MB,
    main,
    run,
    run_upload,
)

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "HEAVY", "PAGE_TARGET_S", "RELOAD_S", "UPDATE_TARGET_S", "UPLOAD_MB",
           "main", "run", "run_upload"]

if __name__ == "__main__":
    sys.exit(main())
