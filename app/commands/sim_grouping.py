"""`lowprec simulate grouping`: the grouping studies of simulations.scaling (outlier across
granularities, fixed vs amax scale, transposed re-quantization) and the Hadamard study
(simulations.hadamard) as JSON, with optional standalone HTML plots (app.plots.grouping)."""

from __future__ import annotations

import argparse
import math
from typing import Any

from lowprec.simulations.hadamard import hadamard_study
from lowprec.simulations.scaling import DEFAULT_GRANULARITIES, parse_granularity, run_grouping

from .progress import ProgressFn
from .sim_common import add_output_arguments, print_summary, run_with_progress, write_result_json

STUDIES = ("outlier", "scale_choice", "transpose", "hadamard")


def register(sims: Any) -> None:
    p = sims.add_parser("grouping", help="scale granularity studies: outlier, scale choice, transpose, hadamard")
    p.add_argument("--study", default="outlier", choices=STUDIES)
    p.add_argument("--format", default="E4M3FN", help="element format")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--cols", type=int, default=64)
    p.add_argument("--outlier", type=float, default=1000.0, help="the outlier's value (outlier, hadamard)")
    p.add_argument("--block", type=int, default=32, help="block size (transpose study)")
    p.add_argument("--granularities", default=",".join(DEFAULT_GRANULARITIES),
                   help="comma-separated: tensor,row,column,block32,block32@0,block16x16")
    p.add_argument("--seed", type=int, default=0)
    add_output_arguments(p, html_help="write standalone HTML plots (outlier, scale_choice)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    grans = [g.strip() for g in args.granularities.split(",") if g.strip()]
    for g in grans:
        parse_granularity(g)  # ValueError names the bad one
    for name in ("rows", "cols", "block"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name} must be at least 1, got {getattr(args, name)}")
    if args.html and args.study not in ("outlier", "scale_choice"):
        raise ValueError(f"--html is available for the outlier and scale_choice studies, not {args.study!r}")

    def compute(bar: ProgressFn) -> Any:
        if args.study == "hadamard":
            return hadamard_study((args.rows, args.cols), args.outlier, args.seed)
        return run_grouping(args.study, args.format, args.rows, args.cols, args.outlier, args.block,
                            args.seed, grans, progress=bar)

    result = run_with_progress("grouping", args.quiet, compute)
    write_result_json(result.to_dict(), args.json)
    if args.html:
        from lowprec.app.plots import grouping as gp
        from lowprec.app.plots.html import save_standalone

        if args.study == "outlier":
            fig = gp.outlier_figure(gp.outlier_sources(result))
        else:
            fig = gp.scale_choice_figure(gp.scale_choice_sources(result), result.formats)
        save_standalone(fig, args.html, f"Grouping study: {args.study}")
    if print_summary(args) and args.study == "outlier":
        for e in result.entries:
            others = e.other_groups_rms_rel_error  # NaN when one group holds everything
            print(f"{e.granularity:>12}: rms rel error {e.report.rms_rel_error:.4g}, outlier group "
                  f"{e.outlier_group_rms_rel_error:.4g}, others "
                  f"{'none' if math.isnan(others) else format(others, '.4g')}, "
                  f"{e.bits_per_element:.4g} bits/element")
    return 0
