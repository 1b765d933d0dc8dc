"""The recompute simulation's command line, generated from `RecomputeConfig`.

One definition serves both entry points, `python -m lowprec.simulations.recompute` (`main` here)
and `lowprec simulate recompute` (`lowprec.app.commands.sim_recompute`, which adds `--html` and a
progress bar): one option per knob of `RecomputeConfig` (`--variant`, `--layers`, `--history`,
…; `--checkpointing/--no-checkpointing`, with `--no-checkpoint` kept as the older spelling), and
the outputs `--json OUT`, `--csv OUT` ("-" = standard output; JSON written by `lowprec.strictjson`)
and `--quiet`. A short human summary goes to standard output unless `--quiet` or an output went
there. A bad value is one line naming the option as typed, exit status 2. Importing this module
does not import torch; running a simulation does.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Callable, Sequence

from lowprec import strictjson
from lowprec.config import fields_of, add_arguments as add_config_arguments
from lowprec.config import CLI_BUDGET, check_budget, from_namespace, option_name

from ._io import ArgumentParser, check_output_path, error_exit, write_text
from .recompute_config import RecomputeConfig

if TYPE_CHECKING:
    from .recompute_telemetry import RecomputeResult

__all__ = ["PROG", "add_arguments", "build_parser", "config_from_args", "main", "run_from_args",
           "summary_wanted", "write_outputs"]

PROG = "python -m lowprec.simulations.recompute"
DESCRIPTION = ("Recompute divergence: a stateful delayed-scaling quantizer inside activation-"
               "checkpointed layers; forward vs recompute per layer and step.")


def add_arguments(parser: argparse.ArgumentParser, html: bool = False) -> None:
    """The run's options (one per knob of `RecomputeConfig`) and the output options; `html` adds
    `--html OUT` (only `lowprec simulate recompute` can draw)."""
    add_config_arguments(parser, RecomputeConfig)
    parser.add_argument("--no-checkpoint", dest="checkpointing", action="store_false",
                        help="the older spelling of --no-checkpointing (default: checkpointing on)")
    # older spellings of --history and --algo (the names every simulation uses for these knobs)
    knobs = {k.name: k for k in fields_of(RecomputeConfig)}
    for old, name in (("--history-len", "history"), ("--amax-algo", "algo")):
        parser.add_argument(old, dest=name, type=knobs[name].type, default=argparse.SUPPRESS,
                            metavar=name.upper(), help=f"the older spelling of {knobs[name].option} "
                                                      f"(default: {knobs[name].default})")
    parser.add_argument("--json", metavar="OUT",
                        help='write the result as JSON to OUT ("-" for stdout) (default: not written)')
    parser.add_argument("--csv", metavar="OUT", help='write one row per (step, layer) as CSV to OUT '
                                                     '("-" for stdout) (default: not written)')
    if html:
        parser.add_argument("--html", metavar="OUT",
                            help="write an offline HTML page of the run (default: not written)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar and no summary (default: off)")
    parser.add_argument("--force", action="store_true",
                        help=f"run even when the estimated memory or time is over the command line's "
                             f"budget ({CLI_BUDGET.describe()}) (default: off)")


def build_parser() -> ArgumentParser:
    """The parser of `python -m lowprec.simulations.recompute`."""
    p = ArgumentParser(prog=PROG, description=DESCRIPTION)
    add_arguments(p)
    return p


def config_from_args(args: argparse.Namespace) -> RecomputeConfig:
    """The run's record, checked before any work: a bad value raises `ConfigError` naming the option
    (`--layers`), an output path that cannot be written a ValueError naming its option, and a run
    over `CLI_BUDGET` (without `--force`) a `BudgetError` naming the option that pushes it over."""
    config = from_namespace(RecomputeConfig, args)
    for option in ("json", "csv", "html"):
        check_output_path(getattr(args, option, None), f"--{option}")
    if not getattr(args, "force", False):
        check_budget(config, CLI_BUDGET, label=option_name)
    return config


def run_from_args(args: argparse.Namespace,
                  progress: Callable[[int, int], None] | None = None) -> "RecomputeResult":
    """Validate the options and run the simulation (this is where torch is imported)."""
    config = config_from_args(args)
    from .recompute_harness import run_config

    return run_config(config, progress=progress)


def write_outputs(result: "RecomputeResult", json_path: str | None, csv_path: str | None) -> None:
    """The result as compact strict JSON to `json_path` and its per-cell CSV to `csv_path`, each
    only when given ("-" = stdout). A file that cannot be written is a ValueError naming it."""
    for option, path, write in (
            ("--json", json_path, lambda p: strictjson.write(result.to_dict(), p, indent=None)),
            ("--csv", csv_path, lambda p: write_text(result.csv_text(), p))):
        if not path:
            continue
        try:
            write(path)
        except OSError as exc:
            raise ValueError(f"{option}: cannot write {path!r}: {exc.strerror or exc}") from None


def summary_wanted(args: argparse.Namespace) -> bool:
    """Print the human summary: not with --quiet, not when JSON or CSV went to standard output."""
    return not args.quiet and strictjson.STDOUT not in (args.json, args.csv)


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m lowprec.simulations.recompute`: run, write the outputs, print the summary."""
    p = build_parser()
    args = p.parse_args(argv)
    try:
        result = run_from_args(args)
        write_outputs(result, args.json, args.csv)
    except (ValueError, TypeError) as exc:
        return error_exit(p.prog, exc)
    if summary_wanted(args):
        print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
