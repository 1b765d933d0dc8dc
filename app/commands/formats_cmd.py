"""`lowprec formats [--json]`, `lowprec formats FORMAT … [--json]` and `lowprec formats table FORMAT
[--json]`: the format registry (one line per format), some formats' properties (one `name  value`
line each; JSON: the same record as in the list, one object for one format), and one format's code
table, as text or strict JSON (`lowprec.strictjson`: non-finite values as "nan"/"inf"/"-inf").
FORMAT is any registered name or alias (`e4m3fn`, `float8_e4m3fn`, `bf16` …; every ml_dtypes dtype name
means that dtype, so `float8_e4m3` is the IEEE-style E4M3IEEE while the short `E4M3` stays OCP
E4M3FN; the P3109 binary8 formats go by gfloat's names, `p3109_k8p3se` …, in any case). The list
is the registry (`formats.ALL_FORMATS`); each format's record says which conventions cast to it."""

from __future__ import annotations

import argparse
import math
from typing import Any

from lowprec import formats as F
from lowprec import numtext, strictjson


def format_properties(fmt: F.Format) -> dict[str, Any]:
    """The properties of a format as JSON-ready data."""
    d: dict[str, Any] = {
        "name": fmt.name, "kind": fmt.kind, "bits": fmt.bits, "n_codes": fmt.n_codes,
        "max": fmt.max, "min": fmt.min, "smallest_normal": fmt.smallest_normal,
        "smallest_subnormal": fmt.smallest_subnormal, "eps": fmt.eps, "emax": fmt.emax,
        "emin": fmt.emin, "has_inf": fmt.has_inf, "has_nan": fmt.has_nan,
        "description": fmt.description, "dtype_name": fmt.dtype_name, "aliases": list(fmt.aliases),
        "family": fmt.family, "signed": fmt.signed, "saturating": fmt.saturating,
        "conventions": list(F.providers(fmt)),
    }
    if isinstance(fmt, F.FloatFormat):
        d.update(exponent_bits=fmt.exponent_bits, mantissa_bits=fmt.mantissa_bits, bias=fmt.bias,
                 nan_encoding=fmt.nan_encoding, nan_codes=fmt.nan_codes,
                 nan_at_negative_zero=fmt.nan_at_negative_zero, has_negative_zero=fmt.has_negative_zero,
                 subnormals=fmt.subnormals)
    return d


def register(sub: Any) -> None:
    p = sub.add_parser("formats")
    p.add_argument("words", nargs="*", metavar="FORMAT",
                   help="FORMAT …: those formats' properties; 'table FORMAT': every code of FORMAT; "
                        "nothing: one line per format")
    p.add_argument("--json", action="store_true", help="print strict JSON instead of text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    words: list[str] = list(args.words)
    if words[:1] == ["table"]:
        if len(words) != 2:
            raise ValueError("'lowprec formats table' needs one FORMAT, e.g. lowprec formats table E4M3FN"
                             if len(words) < 2 else f"'lowprec formats table' takes one FORMAT, got {len(words) - 1}")
        return _table(words[1], args.json)
    if words:
        props = [format_properties(F.get_format(w)) for w in words]  # an unknown name: ValueError
        if args.json:
            strictjson.write(props if len(props) > 1 else props[0], None)
            return 0
        print("\n\n".join("\n".join(property_lines(d)) for d in props))
        return 0
    props = [format_properties(f) for f in F.ALL_FORMATS]
    if args.json:
        strictjson.write(props, None)
        return 0
    width = max(len(d["name"]) for d in props)
    print(f"{'format':<{width}} {'bits':>4} {'max':>12} {'min normal':>12} {'min subnormal':>14} {'eps':>10}  "
          f"description")
    for d in props:
        sub = f"{d['smallest_subnormal']:>14.6g}" if has_subnormals(d) else f"{'—':>14}"
        print(f"{d['name']:<{width}} {d['bits']:>4} {d['max']:>12.6g} {d['smallest_normal']:>12.6g} "
              f"{sub} {d['eps']:>10.4g}  {d['description']}")
    return 0


def has_subnormals(d: dict[str, Any]) -> bool:
    """Whether a format (its `format_properties`) has subnormal values: E8M0 has no mantissa and no
    subnormal binade, and an integer grid none either, so the listing shows "—" for them (it printed
    their smallest value as a "min subnormal" they do not have)."""
    return bool(d.get("subnormals", False)) and d.get("kind") != "int"


def property_lines(d: dict[str, Any]) -> list[str]:
    """One format's properties (`format_properties`) as aligned `name  value` lines; a value that is
    not an integer also shows its exact power-of-two text (0.015625 = 1 × 2^-6)."""
    width = max(len(k) for k in d)
    out = []
    for key, value in d.items():
        if key == "smallest_subnormal" and not has_subnormals(d):
            out.append(f"{key:<{width}}  — (no subnormals; the smallest positive value is "
                       f"{numtext.general(float(value), 8)})")
            continue
        if isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, float):
            text = numtext.general(value, 8)
            if math.isfinite(value) and value != int(value):
                text += f" = {F.power_of_two_text(value)}"
        elif isinstance(value, list):
            text = ", ".join(str(v) for v in value) or "—"
        else:
            text = str(value) if value != "" else "—"
        out.append(f"{key:<{width}}  {text}")
    return out


def _table(name: str, as_json: bool) -> int:
    table = F.code_table(name)
    if as_json:
        strictjson.write(table.to_dict(), None, indent=None)
        return 0
    print(f"{'code':>6} {'hex':>6}  {'bits':<{table.bits + 2}} {'class':<9} {'value':>14} {'gap_next':>12}")
    for row in table.rows():
        print(f"{row['code']:>6} {row['hex']:>6}  {row['bits']:<{table.bits + 2}} {row['class']:<9} "
              f"{numtext.general(row['value'], 8):>14} {numtext.general(row['gap_next'], 8):>12}")
    return 0

