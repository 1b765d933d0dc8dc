"""`lowprec serve [--port 5006] [--address 127.0.0.1] [--show/--no-show]`: the web app, offline.

It prints one line, `lowprec: serving on URL (Ctrl-C to stop)`, once the port is open; a port in use
or an address that is not this machine's is one error line (exit status 2) instead. Ctrl-C or
SIGTERM stops the server and its worker processes cleanly."""

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
    if not 0 <= args.port <= 65535:
        raise ValueError(f"--port must be 0..65535, got {args.port}")
    from lowprec.app.server import serve

    # one start-up line, once the port is open (a busy port or a bad address is one error line instead)
    serve(port=args.port, address=args.address, show=args.show,
          announce=lambda url: print(f"lowprec: serving on {url} (Ctrl-C to stop)", flush=True))
    return 0
