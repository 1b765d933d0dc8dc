"""Output plumbing shared by the `python -m lowprec.simulations.<name>` entry points: strict JSON (no NaN or
Infinity tokens, which are not JSON; results map non-finite values to null in their `to_dict()`) or
text written to a path, or to stdout when the path is absent or "-", and the one-line error report
(`prog: error: message`, exit status 2) used for bad arguments. No simulation maths lives here.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Callable, NoReturn, Sequence

STDOUT = "-"


def write_text(text: str, path: str | None) -> None:
    """Write `text` to `path` (UTF-8, newlines as given), or to stdout when `path` is None or "-"."""
    if path is None or path == STDOUT:
        sys.stdout.write(text)
        return
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def json_text(data: Any, indent: int | None = 1) -> str:
    """`data` as strict JSON text ending in a newline; NaN/Infinity raise ValueError (not JSON)."""
    return json.dumps(data, indent=indent, allow_nan=False, ensure_ascii=False) + "\n"


def write_json(data: Any, path: str | None, indent: int | None = 1) -> None:
    """Strict JSON of `data` to `path`, or to stdout when `path` is None or "-"."""
    write_text(json_text(data, indent), path)


def error_exit(prog: str, exc: BaseException) -> int:
    """Report a bad-input error as one line on stderr and return the exit status 2."""
    print(f"{prog}: error: {exc}", file=sys.stderr)
    return 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse with a bad option (unknown choice, not a number) reported as one line, exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def add_json_argument(parser: argparse.ArgumentParser) -> None:
    """The --json OUT option every entry point takes (default: stdout)."""
    parser.add_argument("--json", metavar="OUT", help='write JSON here (default or "-": stdout)')


def run_main(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
             compute: Callable[[argparse.Namespace], Any]) -> int:
    """Parse `argv`, run `compute(args)` and write its result's `to_dict()` as JSON to --json;
    ValueError/TypeError from `compute` becomes one error line and exit status 2."""
    args = parser.parse_args(argv)
    try:
        result = compute(args)
    except (ValueError, TypeError) as exc:
        return error_exit(parser.prog, exc)
    write_json(result.to_dict(), args.json)
    return 0
