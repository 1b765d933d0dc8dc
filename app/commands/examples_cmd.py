"""`lowprec examples [NAME ...] [--json]`: list the worked examples that lessons quote.

Each line is `name: summary — title`; `--json` prints every example's `to_dict()` (values, units,
source and the prose text of each field) as strict JSON (`lowprec.strictjson`). Names select
examples; an unknown name is an error that lists the known ones.
"""

from __future__ import annotations

import argparse
from typing import Any

from lowprec import strictjson


def register(sub: Any) -> None:
    p = sub.add_parser("examples")
    p.add_argument("names", nargs="*", metavar="NAME", help="only these examples (default: all)")
    p.add_argument("--json", action="store_true", help="print every field, unit and source as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lowprec.course.examples import example, list_examples

    chosen = [example(n) for n in args.names] if args.names else list_examples()
    if args.json:
        strictjson.write([e.to_dict() for e in chosen], None)
        return 0
    width = max(len(e.name) for e in chosen)
    for e in chosen:
        print(f"{e.name:<{width}}  {e.format()}  — {e.title}")
        if args.names:
            for key in e.values:
                print(f"{'':<{width}}    {key}: {e.format(key)}")
            print(f"{'':<{width}}    source: {e.source}")
    return 0
