"""`lowprec simulate blocks`: MX (each element format × scale rule) and NVFP4 on one tensor
(simulations.blocks.blocks_study) as JSON, with optional standalone HTML plots (app.plots.blocks)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from simulations.blocks import DISTRIBUTIONS, blocks_study

from .progress import ProgressBar


def register(sims: Any) -> None:
    p = sims.add_parser("blocks", help="MXFP8/MXFP6/MXFP4 and NVFP4: error against bits per element")
    p.add_argument("--rows", type=int, default=64, help="rows (a multiple of 16)")
    p.add_argument("--cols", type=int, default=256, help="columns (a multiple of 32)")
    p.add_argument("--distribution", default="student_t", choices=DISTRIBUTIONS)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="OUT", help="write the result as JSON")
    p.add_argument("--html", metavar="OUT", help="write standalone HTML plots (open offline)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    bar = ProgressBar("blocks", quiet=args.quiet)
    try:
        result = blocks_study((args.rows, args.cols), args.distribution, args.seed, progress=bar)
    finally:
        bar.close()
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(result.to_dict(), fh)
    if args.html:
        from app.plots.blocks import blocks_figure, blocks_sources
        from app.plots.html import save_standalone

        save_standalone(blocks_figure(blocks_sources(result)), args.html, "Block formats")
    if not args.quiet:
        for e in result.entries:
            print(f"{e.scheme:>24}: {e.bits_per_element:.4g} bits/element, rms rel error {e.rms_rel_error:.4g}")
    return 0
