"""`lowprec export DIR [--pages ROUTE ...] [--force]`: standalone HTML pages that open offline;
`lowprec export --list` lists the routes. DIR may also come after the routes
(`lowprec export --pages lesson/x DIR`). With --pages, a page's links to pages the folder does not
hold are plain text (`export.unlink_missing_pages`).

The target must be an empty folder (or one that does not exist yet); `--force` lets the export
overwrite the files it writes in a non-empty one. It never writes through a symbolic link or
outside DIR; an unusable target is one error line (exit 2) before any page is built.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("export")
    p.add_argument("dir", metavar="DIR", nargs="?",
                   help="output folder: new or empty (with --force, an existing one)")
    p.add_argument("--pages", nargs="+", metavar="ROUTE",
                   help="routes to export: '' or index (start page), glossary, lesson/<slug>, widget/<Name> "
                        "(default: all)")
    p.add_argument("--list", action="store_true", help="list the routes and exit (no DIR needed)")
    p.add_argument("--force", action="store_true",
                   help="export into a non-empty folder, overwriting the files lowprec writes there")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _route(word: str) -> str:
    """A route as `--pages` takes it: '' for the start page (also `index`, `/`, `index.html`), and
    a page's exported file name (`lesson/x.html`) for its route."""
    return "" if word in ("index", "/", "index.html") else word.strip("/").removesuffix(".html")


def run(args: argparse.Namespace) -> int:
    from lowprec.app.commands.progress import ProgressBar
    from lowprec.app.export import available_routes, export, site_size

    if args.list:
        for route in available_routes():
            print(route or "index")
        return 0
    pages = list(args.pages or [])
    if not args.dir and pages:
        # `--pages ROUTE … DIR`: --pages takes every word after it, so DIR arrives as the last
        # "page"; routes are a closed set, so a last word that is none of them is the folder
        if _route(pages[-1]) not in available_routes():
            args.dir = pages.pop()
    if not args.dir:
        raise ValueError("export needs DIR, the folder to write the site into (or --list)")
    routes = None
    if args.pages is not None:
        if not pages:
            raise ValueError("--pages needs at least one ROUTE (see lowprec export --list)")
        routes = [_route(r) for r in pages]
    bar = ProgressBar("export", quiet=args.quiet)
    try:
        written = export(args.dir, routes, progress=bar, force=getattr(args, "force", False))
    finally:
        bar.close()
    for page in written:
        states = "; ".join(f"{k}: {len(v)} values" for k, v in page.states.items()) or "static"
        print(f"{page.path}  ({page.size / 1e6:.2f} MB; {states}; {page.seconds:.1f} s)")
    total, largest, name = site_size(args.dir)
    print(f"site: {total / 1e6:.1f} MB in {args.dir}; largest page {name} ({largest / 1e6:.2f} MB)")
    return 0
