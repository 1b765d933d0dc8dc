"""The recompute simulation's command line: the older module name of what `simulations.recompute`
now declares (`SIMULATION`, from which `python -m lowprec.simulations.recompute` and `lowprec simulate
recompute` are generated like every other simulation's), kept so its names keep working:
`build_parser`, `main`, `add_arguments`, `config_from_args`, `run_from_args`, `write_outputs`,
`summary_wanted`, `PROG`, `DESCRIPTION`. Importing it does not import torch; a run does.
"""

from __future__ import annotations

import sys

from lowprec.config import CLI_BUDGET  # noqa: F401  (the budget --force lifts, as this module named it)

from . import (DESCRIPTION, PROG, SIMULATION, add_arguments, build_parser, config_from_args, main, run_from_args,
               summary_wanted, write_outputs)

__all__ = ["DESCRIPTION", "PROG", "SIMULATION", "add_arguments", "build_parser", "config_from_args", "main",
           "run_from_args", "summary_wanted", "write_outputs"]

if __name__ == "__main__":
    sys.exit(main())
