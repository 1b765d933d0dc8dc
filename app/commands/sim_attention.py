"""`lowprec simulate attention`: attention-probability rounding (simulations.attention) as JSON, with
optional standalone HTML plots (app.plots.attention)."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.simulations.attention import MASKS, ROUNDINGS, SCALES, simulate_attention

from .sim_common import add_output_arguments, print_summary, run_with_progress, write_result_json


def register(sims: Any) -> None:
    p = sims.add_parser("attention", help="round softmax probabilities and measure the output error")
    p.add_argument("--format", default="E4M3FN", help="format of P: E4M3FN, E5M2, BF16, FP16, E2M1 …")
    p.add_argument("--rounding", default="nearest_even", choices=ROUNDINGS)
    p.add_argument("--scale", default="none", choices=SCALES, help="per-row decode scale amax / max")
    p.add_argument("--seq", type=int, default=128, help="queries = keys")
    p.add_argument("--head-dim", type=int, default=64)
    p.add_argument("--trials", type=int, default=200, help="Monte-Carlo trials (stochastic rounding)")
    p.add_argument("--temperature", type=float, default=1.0, help="scores = N(0,1) / temperature")
    p.add_argument("--v-outlier-fraction", type=float, default=0.0)
    p.add_argument("--v-outlier-scale", type=float, default=20.0)
    p.add_argument("--mask", default="none", choices=MASKS)
    p.add_argument("--v-format", default=None, help="also round V (nearest-even) in this format")
    p.add_argument("--renormalize", action="store_true", help="also measure renormalised rows")
    p.add_argument("--seed", type=int, default=0)
    add_output_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = run_with_progress("attention", args.quiet, lambda bar: simulate_attention(
        args.seq, args.head_dim, args.format, args.rounding, scale=args.scale, trials=args.trials,
        temperature=args.temperature, v_outlier_fraction=args.v_outlier_fraction,
        v_outlier_scale=args.v_outlier_scale, mask=args.mask, v_format=args.v_format,
        renormalize=args.renormalize, seed=args.seed, progress=bar))
    write_result_json(result.to_dict(), args.json)
    if args.html:
        from lowprec.app.plots.attention import attention_layout
        from lowprec.app.plots.html import save_standalone

        save_standalone(attention_layout(result), args.html,
                        f"Attention rounding: {result.config['format']}, {result.config['rounding']}")
    if print_summary(args):
        for key, value in result.summary().items():
            print(f"{key}: {value:.6g}")
    return 0
