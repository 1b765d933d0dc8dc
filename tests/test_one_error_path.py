"""One report of a bad option on every lowprec command line (issue 27 item 5):
`PROG: error: MESSAGE (see PROG --help)`, one line on stderr, exit status 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

#: lowprec.app.bench is the alias of lowprec.benchmarks.app (its old path), under its own name
TOOLS = ["lowprec.benchmarks.app", "lowprec.app.bench", "lowprec.benchmarks.gpu", "lowprec.benchmarks.budgets",
         "lowprec.simulations.spike"]  # spike: an alias module kept by the restructure (restructure: keep)


def test_every_parser_class_is_the_one() -> None:
    from lowprec.app.cli import CommandParser
    from lowprec.commandline import ArgumentParser

    assert issubclass(CommandParser, ArgumentParser)
    assert "error" not in CommandParser.__dict__  # no second copy of the report


@pytest.mark.parametrize("module", TOOLS)
def test_a_bad_option_is_one_line_naming_the_program(module: str) -> None:
    r = subprocess.run([sys.executable, "-m", module, "--no-such-option"], capture_output=True, text=True,
                       timeout=120)
    prog = f"python -m {module}"
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr == f"{prog}: error: unrecognized arguments: --no-such-option (see {prog} --help)\n"


def test_the_lowprec_command_reports_the_same_way() -> None:
    r = subprocess.run([sys.executable, "-m", "lowprec.app.cli", "simulate", "spike", "--history", "x"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2
    assert r.stderr == ("lowprec simulate spike: error: argument --history: invalid int value: 'x' "
                        "(see lowprec simulate spike --help)\n")
