"""`lowprec simulate NAME`: the app's face of a simulation's `Simulation` declaration
(`lowprec.simulations._cli`). The options are generated from the simulation's config record, exactly
as for `python -m lowprec.simulations.NAME`; this face adds a progress bar (on a terminal, after one
second, never with --quiet) and `--html` plots (the simulation module's `html` writer here, drawn by
`lowprec.app.plots`). A bad option is one line (`lowprec simulate NAME: error: …`, exit status 2, no
usage dump); a bad value raises the record's ConfigError naming the option as typed, which the
`lowprec` command reports as one line with exit status 2. Not a simulation itself:
simulate_cmd.SIMULATIONS does not list it.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, NoReturn, TypeVar

from lowprec.simulations._cli import Simulation
from lowprec.simulations._io import STDOUT, write_json

from .progress import ProgressBar

T = TypeVar("T")
HtmlWriter = Callable[[Any, str], None]


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make argparse report a bad option (unknown choice, not an integer, …) as one line, exit 2."""

    def error(message: str) -> NoReturn:
        parser.exit(2, f"{parser.prog}: error: {message} (see --help)\n")

    setattr(parser, "error", error)


def run_with_progress(label: str, quiet: bool, fn: Callable[[ProgressBar], T]) -> T:
    """Run `fn(bar)` with a progress bar (drawn on a TTY after 1 s, never when quiet), then close it."""
    bar = ProgressBar(label, quiet=quiet)
    try:
        return fn(bar)
    finally:
        bar.close()


def register_simulation(sims: Any, simulation: Simulation[Any, Any], html: HtmlWriter) -> argparse.ArgumentParser:
    """Add `lowprec simulate NAME` for `simulation`, drawing --html with `html(result, path)`."""
    p = sims.add_parser(simulation.name, help=simulation.help, description=simulation.help)
    simulation.add_arguments(p)
    one_line_errors(p)

    def run(args: argparse.Namespace) -> int:
        return run_with_progress(simulation.name, args.quiet,
                                 lambda bar: simulation.execute(args, progress=bar, html=html))

    p.set_defaults(func=run)
    return p


# ------------------------------------------------------------------------------------------------
# the hand-written output options of `lowprec simulate recompute` (app/commands/sim_recompute.py,
# which declares its options itself until it moves to a `Simulation`)
# ------------------------------------------------------------------------------------------------


def add_output_arguments(parser: argparse.ArgumentParser, html_help: str = "write standalone HTML plots "
                                                                           "(open offline)",
                         json: bool = True) -> None:
    """--json OUT (strict JSON; "-" for stdout), --html OUT and --quiet, and one-line errors."""
    if json:
        parser.add_argument("--json", metavar="OUT", help='write the result as JSON ("-" for stdout)')
    parser.add_argument("--html", metavar="OUT", help=html_help)
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
    one_line_errors(parser)


def write_result_json(data: object, path: str | None) -> None:
    """The result's `to_dict()` as compact strict JSON to --json's path, if one was given."""
    if path:
        write_json(data, path, indent=None)


def print_summary(args: argparse.Namespace) -> bool:
    """Whether to print the human summary: not with --quiet, not when JSON went to stdout."""
    return not args.quiet and getattr(args, "json", None) != STDOUT
