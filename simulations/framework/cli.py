"""The command-line faces of a simulation, generated from its config record.

Each simulation module declares one `Simulation`: its name, its config record (`lowprec.config`),
the function that runs it and the text summary of a result. From that one declaration come both
command lines, with the same option names and the same behaviour:

- `python -m lowprec.simulations.NAME` (`Simulation.main`, here), which writes data only;
- `lowprec simulate NAME` (`lowprec.app.commands.sim_common`), which runs the same
  `Simulation.execute` and can add `--html` plots, because only `app/` draws.

Options: one per knob of the record (`--spike-step` for `spike_step`, help ending in the default),
then the output options `--json OUT` (strict JSON through `lowprec.strictjson`; "-" for stdout),
`--csv OUT` where the result has a table, `--html OUT`, `--quiet` (no summary) and `--force`. Before
any work the output paths are checked (`framework.io.check_output_path`) and the record's `cost()` against
`config.CLI_BUDGET` (over it: one line naming the option and the budget; `--force` runs anyway). A summary is
printed on stdout unless `--quiet` is given or the JSON goes to stdout. Bad values raise the record's
`ConfigError` naming the option as typed (`--history: must be ≥ 1, got 0`); both faces report it as
one line with exit status 2. A text option with choices matches them case-insensitively, and a
format name may be given by any alias `formats.get_format` knows (`--format float8_e4m3fn`).

An option renamed keeps its older spelling as an `OptionAlias` of the declaration (`--history-len`
for `--history`; `--no-checkpoint` for `--no-checkpointing`), listed in the help as "the older
spelling of …". `python_m_html=False` leaves `--html` off the `python -m` parser (the recompute
simulation's entry point never had it; every other one takes it only to say that `lowprec simulate`
draws).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Callable, Generic, Mapping, Protocol, Sequence, TypeVar

from lowprec import formats, strictjson
from lowprec.config import (CLI_BUDGET, ConfigError, Knob, add_arguments, check_budget, fields_of, from_mapping,
                            from_namespace, option_name)

from .io import STDOUT, ArgumentParser, check_output_path, error_exit, write_text

__all__ = ["OUTPUT_OPTIONS", "OptionAlias", "ProgressFn", "Simulation", "config_or_knobs", "config_values", "run_module"]

ProgressFn = Callable[[int, int], None]

#: the options every simulation command takes besides its knobs: the outputs (--csv only where a
#: result has a table) and --force (where the record has a `cost()`: lifts the CLI budget)
OUTPUT_OPTIONS = ("--json", "--csv", "--html", "--quiet", "--force")


class Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


C = TypeVar("C")
R = TypeVar("R", bound=Result)

HtmlWriter = Callable[[Any, str], None]


def config_or_knobs(record: type[C], config: C | None, knobs: Mapping[str, Any]) -> C:
    """`config` itself, or the record made of keyword parameters (the keyword convenience of every
    `simulate_*` function); giving both is a TypeError, an unknown name a ConfigError."""
    if config is None:
        return from_mapping(record, knobs)
    if knobs:
        raise TypeError(f"give a {record.__name__} or keyword parameters, not both (got {', '.join(knobs)})")
    if not isinstance(config, record):
        raise TypeError(f"config must be a {record.__name__}, got {type(config).__name__}")
    return config


def config_values(config: Any) -> dict[str, Any]:
    """A config record's values by field name (the record's `to_dict()`, typed for mypy)."""
    return {k.name: getattr(config, k.name) for k in fields_of(config)}


def _canonical(k: Knob, value: Any) -> Any:
    """A text value typed for a knob with choices, matched case-insensitively, and a format alias
    resolved to the canonical format name (`e4m3fn`, `float8_e4m3fn` → `E4M3FN`)."""
    if k.choices is None or not isinstance(value, str) or value in k.choices:
        return value
    folded = [c for c in k.choices if isinstance(c, str) and c.lower() == value.lower()]
    if len(folded) == 1:
        return folded[0]
    try:
        name = formats.get_format(value).name
    except (ValueError, TypeError):
        return value
    return name if name in k.choices else value


@dataclass(frozen=True)
class OptionAlias:
    """An older spelling of a knob's option, still accepted: `--history-len N` sets `history`; with
    `value`, a flag that stores that value (`--no-checkpoint` stores False in `checkpointing`)."""

    option: str  # "--history-len"
    field: str  # the knob it sets
    value: Any = None  # None: the option takes the knob's value; else a flag storing this value


@dataclass(frozen=True)
class Simulation(Generic[C, R]):
    """One simulation as the command lines see it (the widget sees `config` through the app)."""

    name: str  # `lowprec simulate NAME`, `python -m lowprec.simulations.NAME`
    help: str  # one line
    config: type[C]  # the config record: every knob is an option
    run: Callable[[C, ProgressFn | None], R]  # the simulation itself
    summary: Callable[[R], list[str]]  # the human summary, one string per line
    csv: Callable[[R], str] | None = None  # the result as CSV text, where it is a table
    #: what --html draws, in words (the plots live in `lowprec.app.plots`)
    html_help: str = "write standalone HTML plots (open offline)"
    #: older option spellings still accepted (a renamed option keeps working)
    aliases: tuple[OptionAlias, ...] = ()
    #: whether `python -m` takes --html (only to point to `lowprec simulate`, which draws)
    python_m_html: bool = True
    #: the parsers' description (default: `help`)
    description: str = ""

    def __post_init__(self) -> None:
        names = {k.name for k in fields_of(self.config)}
        for alias in self.aliases:
            if alias.field not in names or not alias.option.startswith("--"):
                raise ValueError(f"{self.name}: alias {alias.option} names no knob of {self.config.__name__}")

    @property
    def module(self) -> str:
        return f"lowprec.simulations.{self.name}"

    # -- options ----------------------------------------------------------------------------------
    def add_arguments(self, parser: argparse.ArgumentParser, *, html: bool = True) -> None:
        """One option per knob and per older spelling, then the output options (`html=False`: no --html)."""
        add_arguments(parser, self.config)
        knobs = {k.name: k for k in fields_of(self.config)}
        for alias in self.aliases:
            k = knobs[alias.field]
            if alias.value is None:
                parser.add_argument(alias.option, dest=k.name, type=k.type, default=argparse.SUPPRESS,
                                    metavar=k.name.upper(),
                                    help=f"the older spelling of {k.option} (default: {k.default})")
            else:
                spelled = ((k.option if alias.value else "--no-" + k.option[2:]) if k.type is bool
                           else f"{k.option} {alias.value}")
                parser.add_argument(alias.option, dest=k.name, action="store_const", const=alias.value,
                                    default=argparse.SUPPRESS,
                                    help=f"the older spelling of {spelled} (default: {k.default})")
        parser.add_argument("--json", metavar="OUT", default=None,
                            help='write the result as strict JSON to OUT ("-": stdout) (default: not written)')
        if self.csv is not None:
            parser.add_argument("--csv", metavar="OUT", default=None,
                                help='write the per-step table as CSV to OUT ("-": stdout) (default: not written)')
        if html:
            parser.add_argument("--html", metavar="OUT", default=None,
                                help=f"{self.html_help}; only `lowprec simulate {self.name}` draws (default: not written)")
        parser.add_argument("--quiet", action="store_true", default=False,
                            help="print no summary and no progress bar (default: false)")
        if hasattr(self.config, "cost"):
            parser.add_argument("--force", action="store_true", default=False,
                                help=f"run even when the estimated memory or time is over the command "
                                     f"line's budget ({CLI_BUDGET.describe()}) (default: false)")

    def config_from(self, args: argparse.Namespace) -> C:
        """The record from parsed options; a bad value raises ConfigError naming the option."""
        canon = {k.name: _canonical(k, getattr(args, k.name, k.default)) for k in fields_of(self.config)}
        return from_namespace(self.config, args, **canon)

    def preflight(self, config: C, args: argparse.Namespace) -> None:
        """The checks before any work: every output path can be written (a ValueError naming its
        option) and, without --force, the record's estimated cost is within `CLI_BUDGET` (a
        BudgetError naming the option that pushes it over)."""
        for option in ("json", "csv", "html"):  # before any work: a bad path fails in no time
            check_output_path(getattr(args, option, None), f"--{option}")
        if not getattr(args, "force", False):
            check_budget(config, CLI_BUDGET, label=option_name)

    # -- running ----------------------------------------------------------------------------------
    def execute(self, args: argparse.Namespace, *, progress: ProgressFn | None = None,
                html: HtmlWriter | None = None) -> int:
        """Run for parsed options and write what they ask for: JSON, CSV, HTML (with `html`, the
        app's plot writer; refused without it), the summary. Returns the exit status 0."""
        config = self.config_from(args)
        if getattr(args, "html", None) and html is None:
            raise ConfigError("html", f"plots are drawn by the app: run `lowprec simulate {self.name} … --html "
                                      f"{args.html}` (this entry point writes data: --json"
                                      f"{', --csv' if self.csv is not None else ''})", label="--html")
        self.preflight(config, args)
        result = self.run(config, progress)
        if args.json:
            strictjson.write(result.to_dict(), args.json, indent=None)
        if self.csv is not None and getattr(args, "csv", None):
            write_text(self.csv(result), args.csv)
        if html is not None and args.html:
            html(result, args.html)
        if not args.quiet and args.json != STDOUT and getattr(args, "csv", None) != STDOUT:
            for line in self.summary(result):
                print(line)
        return 0

    # -- python -m lowprec.simulations.NAME -------------------------------------------------------
    def parser(self) -> ArgumentParser:
        p = ArgumentParser(prog=f"python -m {self.module}",
                           description=f"{self.description or self.help} (writes JSON/CSV data)")
        self.add_arguments(p, html=self.python_m_html)
        return p

    def main(self, argv: Sequence[str] | None = None) -> int:
        """The `python -m` entry point: bad options and bad values are one line, exit status 2."""
        parser = self.parser()
        args = parser.parse_args(argv)
        try:
            return self.execute(args)
        except (ValueError, TypeError) as exc:
            return error_exit(parser.prog, exc)


def run_module(simulation: Simulation[Any, Any]) -> None:
    """`if __name__ == "__main__": run_module(SIMULATION)`."""
    sys.exit(simulation.main())
