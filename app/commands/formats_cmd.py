"""`lowprec formats [--json]` and `lowprec formats table FORMAT [--json]`: the format registry and
one format's code table, as text or strict JSON (`lowprec.strictjson`: non-finite values as
"nan"/"inf"/"-inf")."""

from __future__ import annotations

import argparse
import math
from typing import Any

from lowprec import formats as F
from lowprec import strictjson


def format_properties(fmt: F.Format) -> dict[str, Any]:
    """The properties of a format as JSON-ready data."""
    d: dict[str, Any] = {
        "name": fmt.name, "kind": fmt.kind, "bits": fmt.bits, "n_codes": fmt.n_codes,
        "max": fmt.max, "min": fmt.min, "smallest_normal": fmt.smallest_normal,
        "smallest_subnormal": fmt.smallest_subnormal, "eps": fmt.eps, "emax": fmt.emax,
        "emin": fmt.emin, "has_inf": fmt.has_inf, "has_nan": fmt.has_nan,
        "description": fmt.description, "dtype_name": fmt.dtype_name, "aliases": list(fmt.aliases),
    }
    if isinstance(fmt, F.FloatFormat):
        d.update(exponent_bits=fmt.exponent_bits, mantissa_bits=fmt.mantissa_bits, bias=fmt.bias,
                 signed=fmt.signed, nan_encoding=fmt.nan_encoding, subnormals=fmt.subnormals)
    return d


def register(sub: Any) -> None:
    p = sub.add_parser("formats")
    p.add_argument("action", nargs="?", choices=["table"],
                   help="'table FORMAT': every code of FORMAT (default: list every format)")
    p.add_argument("format", nargs="?", help="format name (with 'table')")
    p.add_argument("--json", action="store_true", help="print strict JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.action == "table":
        if not args.format:
            raise ValueError("'lowprec formats table' needs a FORMAT, e.g. E4M3FN")
        table = F.code_table(args.format)
        if args.json:
            strictjson.write(table.to_dict(), None, indent=None)
            return 0
        print(f"{'code':>6} {'hex':>6}  {'bits':<{table.bits + 2}} {'class':<9} {'value':>14} {'gap_next':>12}")
        for row in table.rows():
            print(f"{row['code']:>6} {row['hex']:>6}  {row['bits']:<{table.bits + 2}} {row['class']:<9} "
                  f"{_fmt(row['value']):>14} {_fmt(row['gap_next']):>12}")
        return 0
    if args.format:
        raise ValueError(f"unexpected argument {args.format!r}; use 'lowprec formats table {args.format}'")
    props = [format_properties(f) for f in F.ALL_FORMATS]
    if args.json:
        strictjson.write(props, None)
        return 0
    print(f"{'format':<9} {'bits':>4} {'max':>12} {'min normal':>12} {'min subnormal':>14} {'eps':>10}  description")
    for d in props:
        print(f"{d['name']:<9} {d['bits']:>4} {d['max']:>12.6g} {d['smallest_normal']:>12.6g} "
              f"{d['smallest_subnormal']:>14.6g} {d['eps']:>10.4g}  {d['description']}")
    return 0


def _fmt(v: float) -> str:
    return f"{v:.8g}" if math.isfinite(v) else F.power_of_two_text(v)
