"""`lowprec cast FORMAT VALUE... [--convention NAME] [--rounding MODE] [--overflow MODE] [--json]`.

For each value: `formats.explain_cast`'s explanation (the same one the bin explorer shows): the
code in binary and hex, the decoded value and its exact power-of-two text, the errors and the
rounding bin, under the convention's policy (default: the format's default policy) with any mode
overridden. `--json` prints the explanations as strict JSON (`lowprec.strictjson`).
"""

from __future__ import annotations

import argparse
from typing import Any

from lowprec import formats as F
from lowprec import strictjson
from lowprec.formats.explain import CastExplanation, explain_cast


def register(sub: Any) -> None:
    p = sub.add_parser("cast")
    p.add_argument("format", help="target format, e.g. E4M3FN (aliases: float8_e4m3fn, bf16, fp4 …)")
    p.add_argument("values", nargs="+", metavar="VALUE",
                   help="3.3, 1e-3, -0, inf, nan, 0x1.8p3 … (a negative value after `--`: -- -70000)")
    p.add_argument("--convention", choices=sorted(F.CONVENTIONS),
                   help="backend whose measured policy to use (default: the format's default policy)")
    p.add_argument("--rounding", choices=[r.value for r in F.Rounding],
                   help="rounding mode, replacing the policy's (default: the policy's own)")
    p.add_argument("--overflow", choices=[o.value for o in F.Overflow],
                   help="overflow rule, replacing the policy's (default: the policy's own)")
    p.add_argument("--seed", type=int, default=0,
                   help="seed for stochastic rounding (each value gets its own generator)")
    p.add_argument("--json", action="store_true", help="print the explanations as strict JSON")
    p.set_defaults(func=run)


def cast_values(fmt_name: str, texts: list[str], convention: str | None = None,
                rounding: str | None = None, overflow: str | None = None,
                seed: int = 0) -> list[CastExplanation]:
    """`explain_cast` of each text; the first refused value raises ValueError naming it."""
    return [explain_cast(t, fmt_name, convention, rounding, overflow, seed=seed) for t in texts]


def _interval(e: CastExplanation) -> str:
    b = e.rounding_bin
    if b is None:
        return "—"
    return f"{'[' if b.lo_closed else '('}{b.lo:.6g}, {b.hi:.6g}{']' if b.hi_closed else ')'}"


def run(args: argparse.Namespace) -> int:
    rows = cast_values(args.format, args.values, args.convention, args.rounding, args.overflow,
                       args.seed)
    if args.json:
        strictjson.write(rows, None)
        return 0
    pol = rows[0].policy
    print(f"{rows[0].format}: policy {pol.name} (rounding {pol.rounding.value}, overflow "
          f"{pol.overflow.value})")
    for r in rows:
        print(f"{r.input:>14} → {r.bits} {r.hex:>6}  value {r.value!r:<14} = {r.exact:<14} "
              f"abs err {r.abs_error:.3g}  rel err {r.rel_error:.3g}  bin {_interval(r)}")
    return 0
