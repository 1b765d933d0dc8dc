"""`lowprec simulate recompute`: run `simulations.recompute.run_recompute` (stateful delayed-scaling
quantizer under activation checkpointing) and write its JSON/CSV and, with --html, an offline page.
The options are the simulation's own (`simulations.recompute.add_arguments`)."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.simulations import recompute

from .sim_common import add_output_arguments, print_summary, run_with_progress


def register(sims: Any) -> None:
    p = sims.add_parser("recompute", help="forward vs recompute of a stateful quantizer under "
                                          "activation checkpointing")
    recompute.add_arguments(p)
    add_output_arguments(p, html_help="write an offline HTML page of the run", json=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_with_progress("recompute", args.quiet, lambda bar: recompute.run_from_args(args, progress=bar))
    recompute.write_outputs(result, args.json, args.csv)
    if args.html:
        from lowprec.app.plots.html import save_standalone
        from lowprec.app.plots.recompute import recompute_figure

        save_standalone(recompute_figure(result), args.html,
                        f"recompute divergence: {result.parameters['variant']}")
    if print_summary(args) and (args.json or args.csv):  # else stdout carries the JSON
        print(result.verdict())
    return 0
