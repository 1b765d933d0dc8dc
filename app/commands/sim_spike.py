"""`lowprec simulate spike`: delayed vs current scaling over a tensor stream with a spike
(simulations.delayed) as JSON/CSV, with optional standalone HTML plots (app.plots.delayed)."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.simulations._io import write_text
from lowprec.simulations.delayed import ALGOS, STREAM_KINDS, simulate_stream

from .sim_common import add_output_arguments, print_summary, run_with_progress, write_result_json


def register(sims: Any) -> None:
    p = sims.add_parser("spike", help="delayed (amax history) vs current scaling through a spike")
    p.add_argument("--format", default="E4M3FN", help="element format: E4M3FN, E5M2, …")
    p.add_argument("--history", type=int, default=16, help="amax history length H (≥ 1)")
    p.add_argument("--algo", default="max", choices=ALGOS, help="amax from the history: max or most_recent")
    p.add_argument("--margin", type=int, default=0, help="encode scale divided by 2**margin (≥ 0)")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--spike-step", type=int, default=100)
    p.add_argument("--spike", type=float, default=50.0, help="spike magnitude (multiple of the usual tensor)")
    p.add_argument("--stream", default="spike", choices=STREAM_KINDS)
    p.add_argument("--size", type=int, default=4096, help="elements per step")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--csv", metavar="OUT", help="write per-step results as CSV")
    add_output_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_with_progress("spike", args.quiet, lambda bar: simulate_stream(
        args.format, args.history, args.algo, args.margin, args.steps, args.spike_step, args.spike, args.seed,
        stream=args.stream, size=args.size, progress=bar))
    write_result_json(result.to_dict(), args.json)
    if args.csv:
        write_text(result.csv_text(), args.csv)
    if args.html:
        from lowprec.app.plots.delayed import spike_figure, spike_sources
        from lowprec.app.plots.html import save_standalone

        p = result.parameters
        save_standalone(spike_figure(spike_sources(result), p["spike_step"] if args.stream == "spike" else None),
                        args.html, f"Delayed scaling: {p['format']}, history {p['history_len']}, {p['algo']}")
    if print_summary(args):
        s = args.spike_step if args.stream == "spike" else 0
        c = result.columns()
        print(f"steps: {result.steps}; at step {s}: delayed clipped {c['delayed_clipped_fraction'][s]:.4g}, "
              f"current clipped {c['current_clipped_fraction'][s]:.4g}; "
              f"delayed scale sized for >2× the amax on {result.reduced_steps()} steps")
    return 0
