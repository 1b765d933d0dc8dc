"""`lowprec bench [NAME ...] [--quick] [--json OUT]`: run speed benchmarks.

`BENCHMARKS` (`lowprec.benchmarks.BENCHMARKS`, re-exported here) is the one table of benchmarks:
name → module of `lowprec.benchmarks` exposing `run(quick) -> dict` of named figures. A module is
imported only when its benchmark runs. `--json` writes the
figures as strict JSON (`lowprec.strictjson`; "-" for stdout).
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from lowprec import strictjson
from lowprec.benchmarks import BENCHMARKS
from lowprec.simulations.framework.io import check_output_path


def register(sub: Any) -> None:
    p = sub.add_parser("bench")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help=f"benchmarks to run: {', '.join(BENCHMARKS)} (default: all)")
    p.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    p.add_argument("--json", metavar="OUT", help='write the figures as strict JSON ("-": stdout)')
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    names = args.names or list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark {unknown[0]!r}; known: {', '.join(BENCHMARKS)}")
    check_output_path(args.json, "--json")  # before the benchmarks run, not after
    to_stdout = args.json == strictjson.STDOUT
    results: dict[str, Any] = {}
    for name in names:
        module = importlib.import_module(BENCHMARKS[name])
        if not to_stdout:
            print(f"[{name}]", flush=True)
        res = module.run(quick=args.quick)
        results[name] = res
        if not to_stdout:
            for key, value in res.items():
                print(f"  {key}: {value}")
    if args.json:
        strictjson.write(results, args.json)
    return 0
