"""`lowprec bench [NAME ...] [--quick] [--json OUT]`: run benchmarks in `benchmarks/`."""

from __future__ import annotations

import argparse
import importlib
import json
from typing import Any

from lowprec.benchmarks import BENCHMARKS


def register(sub: Any) -> None:
    p = sub.add_parser("bench", help="run speed benchmarks (ratios against ml_dtypes/torch)")
    p.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default all)")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; known: {', '.join(BENCHMARKS)}")
    results: dict[str, Any] = {}
    for name in names:
        try:
            module = importlib.import_module(f"benchmarks.{name}")
        except ModuleNotFoundError as exc:
            if exc.name == f"benchmarks.{name}":
                print(f"[{name}] not available yet")
                continue
            raise
        print(f"[{name}]", flush=True)
        res = module.run(quick=args.quick)
        results[name] = res
        for key, value in res.items():
            print(f"  {key}: {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(results, fh, indent=2, default=str)
    return 0
