"""`lowprec simulate blocks`: MX (each element format × scale rule) and NVFP4 on one tensor
(simulations.blocks.blocks_study) as JSON, with optional standalone HTML plots (app.plots.blocks)."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.simulations.blocks import DISTRIBUTIONS, blocks_study

from .sim_common import add_output_arguments, print_summary, run_with_progress, write_result_json


def register(sims: Any) -> None:
    p = sims.add_parser("blocks", help="MXFP8/MXFP6/MXFP4 and NVFP4: error against bits per element")
    p.add_argument("--rows", type=int, default=64, help="rows (a multiple of 16)")
    p.add_argument("--cols", type=int, default=256, help="columns (a multiple of 32)")
    p.add_argument("--distribution", default="student_t", choices=DISTRIBUTIONS)
    p.add_argument("--seed", type=int, default=0)
    add_output_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_with_progress("blocks", args.quiet, lambda bar: blocks_study(
        (args.rows, args.cols), args.distribution, args.seed, progress=bar))
    write_result_json(result.to_dict(), args.json)
    if args.html:
        from lowprec.app.plots.blocks import blocks_figure, blocks_sources
        from lowprec.app.plots.html import save_standalone

        save_standalone(blocks_figure(blocks_sources(result)), args.html, "Block formats")
    if print_summary(args):
        for e in result.entries:
            print(f"{e.scheme:>24}: {e.bits_per_element:.4g} bits/element, rms rel error {e.rms_rel_error:.4g}")
    return 0
