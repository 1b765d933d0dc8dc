"""The one report of bad command-line input, for every lowprec program (the `lowprec` command, the
`python -m lowprec.simulations.NAME` entry points, the bench, screenshot and GPU-check tools).

A leaf module (it imports nothing of lowprec, nothing heavy), so the `lowprec` command can build its
parser without importing a layer: a bad option is `PROG: error: MESSAGE (see PROG --help)`, a bad
value `PROG: error: MESSAGE` — one line on stderr, exit status 2, no usage dump, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

__all__ = ["ArgumentParser", "error_exit", "parser_error"]


def parser_error(parser: argparse.ArgumentParser, message: str) -> NoReturn:
    """Report a bad option (unknown choice, not a number, a missing argument) of `parser`'s program."""
    parser.exit(2, f"{parser.prog}: error: {message} (see {parser.prog} --help)\n")


def error_exit(prog: str, exc: BaseException) -> int:
    """Report a bad-input error as one line on stderr and return the exit status 2."""
    print(f"{prog}: error: {exc}", file=sys.stderr)
    return 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose bad options are reported by `parser_error` (every lowprec program's parser is
    one of these, or a subclass)."""

    def error(self, message: str) -> NoReturn:
        parser_error(self, message)
