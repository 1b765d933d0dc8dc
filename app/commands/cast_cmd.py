"""`lowprec cast FORMAT VALUE... [--convention NAME] [--rounding MODE] [--overflow MODE] [--json]`.

For each value: its code in binary and hex, the decoded value, absolute and relative error. The
policy is the convention's (default: the format's default policy) with any mode overridden.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

import numpy as np

from lowprec import formats as F
from lowprec.formats.policy import Overflow, Rounding


def register(sub: Any) -> None:
    p = sub.add_parser("cast", help="encode values in a format and show bits, value and error")
    p.add_argument("format", help="target format, e.g. E4M3FN")
    p.add_argument("values", nargs="+", metavar="VALUE", help="3.3, 1e-3, -0, inf, nan, 0x1.8p3 …")
    p.add_argument("--convention", choices=sorted(F.CONVENTIONS), help="backend convention")
    p.add_argument("--rounding", choices=[r.value for r in Rounding if r is not Rounding.STOCHASTIC] + ["stochastic"])
    p.add_argument("--overflow", choices=[o.value for o in Overflow])
    p.add_argument("--seed", type=int, default=0, help="seed for stochastic rounding")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def cast_rows(fmt_name: str, texts: list[str], convention: str | None = None,
              rounding: str | None = None, overflow: str | None = None, seed: int = 0) -> list[dict[str, Any]]:
    fmt = F.get_format(fmt_name)
    policy = F.policy_for(convention, fmt) if convention else F.default_policy(fmt)
    changes = {k: v for k, v in (("rounding", rounding), ("overflow", overflow)) if v}
    if changes:
        policy = policy.with_(**changes, name=policy.name)
    values = np.array([F.parse_value(t) for t in texts], np.float64)
    codes = F.encode(values, fmt, policy, rng=np.random.default_rng(seed))
    decoded = F.decode(codes, fmt).astype(np.float64)
    rows = []
    for text, x, c, v in zip(texts, values, codes, decoded):
        abs_err = abs(v - x) if math.isfinite(x) and math.isfinite(v) else math.nan
        rel_err = abs_err / abs(x) if math.isfinite(abs_err) and x != 0 else math.nan
        rows.append({
            "input": text, "x": float(x), "code": int(c), "hex": f"0x{int(c):0{(fmt.bits + 3) // 4}X}",
            "bits": format(int(c), f"0{fmt.bits}b"), "value": float(v), "abs_error": abs_err,
            "rel_error": rel_err, "format": fmt.name, "policy": policy.to_dict(),
        })
    return rows


def run(args: argparse.Namespace) -> int:
    rows = cast_rows(args.format, args.values, args.convention, args.rounding, args.overflow, args.seed)
    if args.json:
        print(json.dumps(rows, default=str).replace("NaN", '"nan"').replace("Infinity", '"inf"'))
        return 0
    fmt = F.get_format(args.format)
    pol = rows[0]["policy"]
    print(f"{fmt.name}: rounding={pol['rounding']} overflow={pol['overflow']}"
          + (f" (convention {pol['name']})" if pol["name"] else ""))
    for r in rows:
        print(f"{r['input']:>14} → {r['bits']} {r['hex']:>6}  value {r['value']!r:<14} "
              f"abs err {r['abs_error']:.3g}  rel err {r['rel_error']:.3g}")
    return 0
