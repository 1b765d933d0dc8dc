"""`lowprec crosscheck --backend NAME [--formats …] [--json OUT] [--replay REPORT …]`.

Runs the `gpu.vectors` inputs through a real backend (ml_dtypes, torch, torch-cuda, triton,
triton-interpret) and through the format model's convention for it (`gpu.crosscheck`), prints a
summary and writes the report. Exit status 1 when an oracle backend disagrees with its convention
(the Triton interpreter's mismatches are a documented deviation and never fail). `--replay` checks
recorded reports against the current model instead (exit 1 on any contradiction). Reports are
read and written by `gpu.crosscheck` only (strict JSON).
"""

from __future__ import annotations

import argparse
from typing import Any

from lowprec import strictjson
from lowprec.app.commands.argtypes import integer_option
from lowprec.app.commands.progress import ProgressBar
from lowprec.gpu import crosscheck
from lowprec.gpu.backends import backend_names


def register(sub: Any) -> None:
    p = sub.add_parser("crosscheck")
    p.add_argument("--backend", choices=backend_names(), help="backend to run (required unless --replay)")
    p.add_argument("--formats", nargs="+", metavar="FMT", default=None,
                   help="formats to check (default: every format the backend casts to)")
    p.add_argument("--json", metavar="OUT", help='write the report (strict JSON) here ("-": stdout)')
    p.add_argument("--n-random", type=integer_option(0, crosscheck.MAX_N_RANDOM), default=crosscheck.REPORT_N_RANDOM,
                   metavar="N", help=f"seeded random vectors per format, 0 … {crosscheck.MAX_N_RANDOM} (the "
                                     "structured vectors are always complete)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random vectors")
    p.add_argument("--replay", nargs="+", metavar="REPORT",
                   help="replay recorded reports against the current model instead of running")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.replay:
        status = 0
        for path in args.replay:
            report = crosscheck.load_report(path)
            problems = crosscheck.replay_problems(report)
            print(f"{path}: {report['backend']} ({report['date']}): "
                  f"{'consistent with the current model' if not problems else 'CONTRADICTED'}")
            for line in problems:
                print(f"  {line}")
            status = status or (1 if problems else 0)
        return status
    if not args.backend:
        raise ValueError(f"--backend is required (one of {', '.join(backend_names())}) unless "
                         "--replay is given")
    to_stdout = args.json == strictjson.STDOUT
    if args.json and not to_stdout:
        crosscheck.check_writable(args.json)  # before a long run, not after it
    bar = ProgressBar(f"crosscheck {args.backend}", quiet=args.quiet)
    try:
        report = crosscheck.run_crosscheck(args.backend, args.formats, n_random=args.n_random,
                                           seed=args.seed, progress=bar)
    finally:
        bar.close()
    if to_stdout:
        strictjson.write(report, None)
        return 0 if report["ok"] else 1
    if args.json:
        path = crosscheck.write_report(report, args.json)
        print(f"wrote {path}")
    print("\n".join(crosscheck.summary_lines(report)))
    return 0 if report["ok"] else 1
