"""`lowprec export DIR [--pages ROUTE ...]`: standalone HTML pages that open offline."""

from __future__ import annotations

import argparse
from typing import Any



def register(sub: Any) -> None:
    p = sub.add_parser("export")
    p.add_argument("dir", metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--pages", nargs="+", metavar="ROUTE",
                   help="routes to export: '' or index (landing), lesson/<slug>, widget/<Name> (default: all)")
    p.add_argument("--list", action="store_true", help="list the routes and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lowprec.app.commands.progress import ProgressBar
    from lowprec.app.export import available_routes, export

    if args.list:
        for route in available_routes():
            print(route or "index")
        return 0
    routes = None
    if args.pages:
        routes = ["" if r in ("index", "/", "index.html") else r.removesuffix(".html") for r in args.pages]
    bar = ProgressBar("export", quiet=args.quiet)
    try:
        written = export(args.dir, routes, progress=bar)
    finally:
        bar.close()
    for page in written:
        states = "; ".join(f"{k}: {len(v)} states" for k, v in page.states.items()) or "static"
        print(f"{page.path}  ({states}, {page.seconds:.1f} s)")
    return 0
