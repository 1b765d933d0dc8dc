"""`lowprec simulate recompute`: run `simulations.recompute.run_recompute` (stateful delayed-scaling
quantizer under activation checkpointing) and write its JSON/CSV and, with --html, an offline page.
The options are the simulation's own (`simulations.recompute.add_arguments`)."""

from __future__ import annotations

import argparse
from typing import Any

from simulations import recompute

from .progress import ProgressBar


def register(sims: Any) -> None:
    p = sims.add_parser("recompute", help="forward vs recompute of a stateful quantizer under "
                                          "activation checkpointing")
    recompute.add_arguments(p)
    p.add_argument("--html", metavar="OUT", help="write an offline HTML page of the run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    bar = ProgressBar("recompute", quiet=args.quiet)
    try:
        result = recompute.run_from_args(args, progress=bar)
    finally:
        bar.close()
    recompute.write_outputs(result, args.json, args.csv)
    if args.html:
        from app.plots.html import save_standalone
        from app.plots.recompute import recompute_figure

        save_standalone(recompute_figure(result), args.html,
                        f"recompute divergence: {result.parameters['variant']}")
    if not args.quiet and (args.json or args.csv):  # else stdout carries the JSON
        print(result.verdict())
    return 0
