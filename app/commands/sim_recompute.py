"""`lowprec simulate recompute`: the recompute-divergence simulation (a stateful delayed-scaling
quantizer under activation checkpointing) with a progress bar, its JSON/CSV, a short summary and,
with --html, an offline page. The options are generated from `RecomputeConfig` by
`simulations.recompute_cli`, the same as `python -m lowprec.simulations.recompute`; building this
parser does not import torch (a run does)."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.simulations import recompute_cli

from .sim_common import one_line_errors, run_with_progress


def register(sims: Any) -> None:
    p = sims.add_parser("recompute", help="forward vs recompute of a stateful quantizer under "
                                          "activation checkpointing",
                        description=recompute_cli.DESCRIPTION)
    recompute_cli.add_arguments(p, html=True)
    one_line_errors(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    config = recompute_cli.config_from_args(args)  # a bad value: one line naming the option, exit 2
    from lowprec.simulations.recompute_harness import run_config  # torch: only for a run

    result = run_with_progress("recompute", args.quiet, lambda bar: run_config(config, progress=bar))
    recompute_cli.write_outputs(result, args.json, args.csv)
    if args.html:
        from lowprec.app.plots.captions import caption
        from lowprec.app.plots.html import save_standalone
        from lowprec.app.plots.recompute import recompute_figure
        from lowprec.simulations._cli import config_values

        save_standalone(recompute_figure(result), args.html, f"Recompute divergence: {config.variant}",
                        parameters=config_values(config), caption=caption("RecomputeDivergence", result))
    if recompute_cli.summary_wanted(args):
        print(result.summary())
    return 0
