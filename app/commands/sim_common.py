"""Pieces every `lowprec simulate NAME` command shares (app/commands/sim_*.py): the output options
(--json, --html, --quiet), bad arguments reported as one line (`lowprec simulate NAME: error: …`, exit
status 2, no usage dump), and the run wrapper that drives a progress bar. Not a simulation itself:
simulate_cmd.SIMULATIONS does not list it. JSON is written by simulations._io (strict, "-" = stdout).
"""

from __future__ import annotations

import argparse
from typing import Callable, NoReturn, TypeVar

from lowprec.simulations._io import STDOUT, write_json

from .progress import ProgressBar

T = TypeVar("T")


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make argparse report a bad option (unknown choice, not an integer, …) as one line, exit 2."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: error: {message} (see --help)\n")

    setattr(parser, "error", error)


def add_output_arguments(parser: argparse.ArgumentParser, html_help: str = "write standalone HTML plots "
                                                                           "(open offline)",
                         json: bool = True) -> None:
    """--json OUT (strict JSON; "-" for stdout), --html OUT and --quiet, and one-line errors."""
    if json:
        parser.add_argument("--json", metavar="OUT", help='write the result as JSON ("-" for stdout)')
    parser.add_argument("--html", metavar="OUT", help=html_help)
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    one_line_errors(parser)


def run_with_progress(label: str, quiet: bool, fn: Callable[[ProgressBar], T]) -> T:
    """Run `fn(bar)` with a progress bar (drawn on a TTY after 1 s, never when quiet), then close it."""
    bar = ProgressBar(label, quiet=quiet)
    try:
        return fn(bar)
    finally:
        bar.close()


def write_result_json(data: object, path: str | None) -> None:
    """The result's `to_dict()` as compact strict JSON to --json's path, if one was given."""
    if path:
        write_json(data, path, indent=None)


def print_summary(args: argparse.Namespace) -> bool:
    """Whether to print the human summary: not with --quiet, not when JSON went to stdout."""
    return not args.quiet and getattr(args, "json", None) != STDOUT
