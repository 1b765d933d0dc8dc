"""`lowprec simulate NAME`: the app's face of a simulation's `Simulation` declaration
(`lowprec.simulations.framework.cli`), as its entry in the registry of simulations (`app.sim_faces`) gives it.
The options are generated from the simulation's config record, exactly as for `python -m
lowprec.simulations.NAME`; this face adds a progress bar (on a terminal, after one second, never
with --quiet) and `--html` plots (the entry's page writer, drawn by `lowprec.app.plots`). A bad
option is one line (`lowprec simulate NAME: error: …`, exit status 2, no usage dump); a bad value
raises the record's ConfigError naming the option as typed, which the `lowprec` command reports as
one line with exit status 2.
"""

from __future__ import annotations

import argparse
from typing import Any, Callable, NoReturn, TypeVar

from lowprec.app.sim_faces import SimulationFaces
from lowprec.simulations.framework.cli import Simulation
from lowprec.commandline import parser_error

from .progress import ProgressBar

T = TypeVar("T")
HtmlWriter = Callable[[Any, str], None]


def one_line_errors(parser: argparse.ArgumentParser) -> None:
    """Make argparse report a bad option (unknown choice, not an integer, …) as one line, exit 2."""

    def error(message: str) -> NoReturn:
        parser_error(parser, message)

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
    p = sims.add_parser(simulation.name, help=simulation.help, description=simulation.description or simulation.help)
    simulation.add_arguments(p)
    one_line_errors(p)

    def run(args: argparse.Namespace) -> int:
        return run_with_progress(simulation.name, args.quiet,
                                 lambda bar: simulation.execute(args, progress=bar, html=html))

    p.set_defaults(func=run)
    return p


def register_faces(sims: Any, entry: SimulationFaces) -> argparse.ArgumentParser:
    """Add `lowprec simulate NAME` for a registry entry: its simulation, drawn by its page writer."""
    return register_simulation(sims, entry.load(), entry.write_html)
