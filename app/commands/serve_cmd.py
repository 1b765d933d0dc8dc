"""`lowprec serve [--port 5006] [--address 127.0.0.1] [--show/--no-show]`: the web app, offline."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    p = sub.add_parser("serve")
    p.add_argument("--port", type=int, default=5006, help="port to listen on")
    p.add_argument("--address", default="127.0.0.1",
                   help="address to bind (127.0.0.1: this machine only)")
    p.add_argument("--show", action=argparse.BooleanOptionalAction, default=True,
                   help="open a browser tab")
    p.add_argument("--list", action="store_true",
                   help="list the pages (routes) the server would serve, then exit")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.list:
        from lowprec.app.pages import page_titles

        for route, title in page_titles().items():
            print(f"/{route.strip('/')}\t{title}")
        return 0
    from lowprec.app.server import serve

    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {args.port}")
    print(f"lowprec: serving on http://{args.address}:{args.port}/ (Ctrl-C to stop)", flush=True)
    serve(port=args.port, address=args.address, show=args.show)
    return 0
