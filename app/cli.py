"""The `lowprec` command: one entry point, one module per subcommand in `app.commands`.

Each module in COMMANDS exposes `register(subparsers) -> None`, adding its parser with
`set_defaults(func=...)`; `func(args) -> int` is the exit status.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Sequence

# subcommand modules, in help order; a module that is missing is skipped (work in progress)
COMMANDS = (
    "lowprec.app.commands.formats_cmd",
    "lowprec.app.commands.cast_cmd",
    "lowprec.app.commands.simulate_cmd",
    "lowprec.app.commands.examples_cmd",
    "lowprec.app.commands.crosscheck_cmd",
    "lowprec.app.commands.bench_cmd",
    "lowprec.app.commands.serve_cmd",
    "lowprec.app.commands.export_cmd",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lowprec",
        description="Bit-exact simulator and explorer of low-precision number formats.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (ValueError, TypeError) as exc:  # bad input: one clear line, no traceback
        print(f"lowprec: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` & co.: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
