"""The `lowprec` command: one static table of subcommands, each loaded only when it is run.

`COMMANDS` lists every subcommand as (name, module, one-line help). Building the top-level parser
imports none of them, so `lowprec cast …` imports the cast module and what it needs (numpy,
ml_dtypes, `lowprec.formats`) and nothing else: no torch, no Panel, no Bokeh. A command module
exposes `register(subparsers)`, which adds its parser (`subparsers.add_parser(NAME)`, the help
comes from this table) with `set_defaults(func=run)`; `run(args) -> int` is the exit status.

Every parser is a `CommandParser`: an option's help ends with its default, and a bad option is one
line naming it as typed (`lowprec cast: error: argument --rounding: invalid choice: …`), exit
status 2, with no usage dump. `ValueError`/`TypeError` raised by a command are one line too
(`lowprec: error: …`, exit 2). A command whose optional dependency is missing (torch for
`simulate recompute`, triton for the GPU backends) says which extra installs it, in one line
(`lowprec.extras`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Sequence

from lowprec.extras import missing_dependency
from lowprec.commandline import ArgumentParser, error_exit

__all__ = ["COMMANDS", "Command", "CommandParser", "build_parser", "command_parser", "help_with_default", "main"]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, the module that registers and runs it, and its one-line help."""

    name: str
    module: str
    help: str


#: every subcommand, in help order
COMMANDS: tuple[Command, ...] = (
    Command("formats", "lowprec.app.commands.formats_cmd",
            "list formats, show some formats' properties, or one format's code table"),
    Command("cast", "lowprec.app.commands.cast_cmd",
            "encode values in a format: bits, value, error and rounding bin"),
    Command("simulate", "lowprec.app.commands.simulate_cmd",
            "run a simulation and write JSON/CSV/HTML results"),
    Command("examples", "lowprec.app.commands.examples_cmd",
            "list the worked examples (named numbers) lessons quote"),
    Command("lessons", "lowprec.app.commands.lessons_cmd",
            "list the lessons: goal, predictions and exercises (--answers, --json: their computed answers)"),
    Command("analyze", "lowprec.app.commands.analyze_cmd",
            "run your own tensors (.npy, .npz, .safetensors, state dicts) through every recipe"),
    Command("quantize", "lowprec.app.commands.quantize_cmd",
            "write a float checkpoint in a quantized layout (DeepSeek FP8, gpt-oss MXFP4, ModelOpt NVFP4, "
            "compressed-tensors FP8)"),
    Command("crosscheck", "lowprec.app.commands.crosscheck_cmd",
            "check a real backend (ml_dtypes, torch, Triton) against the format model bit for bit"),
    Command("bench", "lowprec.app.commands.bench_cmd",
            "run speed benchmarks (ratios against ml_dtypes/torch, CLI start-up)"),
    Command("serve", "lowprec.app.commands.serve_cmd",
            "serve the lessons and widgets locally (no internet needed)"),
    Command("export", "lowprec.app.commands.export_cmd",
            "write standalone HTML pages that work with no server and no internet"),
)
_BY_NAME = {c.name: c for c in COMMANDS}


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default: `(default: 5006)`, `(default: off)` for a flag
    or for an option that does nothing unless given (default None). Help that states its default
    already (config-record knobs do) is left alone, and so is help that says the argument is
    required. A positional argument shows a default only when it has a real one: a required
    positional, or an optional one whose absence means "not given" (`formats [FORMAT]`), has none
    to show."""

    def _get_help_string(self, action: argparse.Action) -> str:
        return help_with_default(action)


def help_with_default(action: argparse.Action) -> str:
    """`action`'s help as `DefaultsHelpFormatter` prints it (see there)."""
    text = action.help or ""
    if "default" in text.lower() or "required" in text.lower() or action.default is argparse.SUPPRESS:
        return text
    default = action.default
    absent = default is None or default == []
    if not action.option_strings and (absent or action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE)):
        return text  # a positional: required, or nothing when left out
    if isinstance(default, bool) or absent:
        shown = "on" if default is True else "off"
    else:
        shown = "%(default)s"
    return f"{text} (default: {shown})" if text else f"default: {shown}"


class CommandParser(ArgumentParser):
    """An ArgumentParser whose errors are one line (exit 2) and whose help shows defaults."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsHelpFormatter)
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        """As argparse's; an option given no help is described by its name, so that its default
        still shows (argparse prints nothing for an option without help)."""
        action = super().add_argument(*args, **kwargs)
        if action.option_strings and action.help is None:
            action.help = action.dest.replace("_", " ")
        return action


class _VersionAction(argparse.Action):
    """--version: reads the version only when asked (`importlib.metadata` is slow to import)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        import lowprec

        print(f"lowprec {lowprec.__version__}")
        parser.exit(0)


def _top_parser() -> tuple[CommandParser, Any]:
    parser = CommandParser(
        prog="lowprec",
        description="Bit-exact simulator and explorer of low-precision number formats.",
        epilog="`lowprec COMMAND --help` describes one command.",
    )
    parser.add_argument("--version", action=_VersionAction, help="print lowprec's version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=CommandParser)
    return parser, sub


def build_parser(command: str | None = None) -> CommandParser:
    """The top-level parser. Only `command`'s module is imported and registered (every other
    subcommand is a placeholder carrying its help); None imports none of them."""
    parser, sub = _top_parser()
    for entry in COMMANDS:
        if entry.name != command:
            sub.add_parser(entry.name, help=entry.help, description=entry.help)
            continue
        _register(sub, entry)
    return parser


def _register(sub: Any, entry: Command) -> CommandParser:
    """Import `entry`'s module and let it add its parser to `sub`; the table's help describes it."""
    importlib.import_module(entry.module).register(sub)
    registered: CommandParser = sub.choices[entry.name]
    registered.description = registered.description or entry.help
    for action in sub._choices_actions:  # the top-level listing shows the table's help
        if action.dest == entry.name:
            action.help = entry.help
    return registered


def command_parser(name: str) -> CommandParser:
    """The parser of subcommand `name` (its module imported); ValueError for an unknown name."""
    if name not in _BY_NAME:
        raise ValueError(f"unknown command {name!r}; known: {', '.join(_BY_NAME)}")
    _, sub = _top_parser()
    return _register(sub, _BY_NAME[name])


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in `argv`: its first word that is not an option (the top-level
    parser's own options, --help and --version, take no value)."""
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `lowprec ARGV`; returns the exit status. argparse's own exits (--help, --version, a bad
    option: one line, status 2) raise SystemExit, as argparse does."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    name = _command_of(args_list)
    try:
        parser = build_parser(name if name in _BY_NAME else None)
        args = parser.parse_args(args_list)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:  # an optional dependency (torch, triton): name its extra
        message = missing_dependency(exc, "this command")
        if message is None:
            raise
        print(f"lowprec {name}: error: {message}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:  # bad input: one clear line, no traceback
        return error_exit("lowprec", exc)
    except BrokenPipeError:  # output piped into `head` & co.: stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
