"""`lowprec simulate NAME ...`: one module per simulation in SIMULATIONS, each exposing
`register(subparsers)` for its own sub-subcommand (app/commands/sim_<name>.py). Every module listed
exists: an import error is a bug and is raised."""

from __future__ import annotations

import argparse
import importlib
from typing import Any

SIMULATIONS = (
    "lowprec.app.commands.sim_spike",
    "lowprec.app.commands.sim_grouping",
    "lowprec.app.commands.sim_blocks",
    "lowprec.app.commands.sim_attention",
    "lowprec.app.commands.sim_recompute",
)


def register(sub: Any) -> None:
    p = sub.add_parser("simulate", help="run a simulation and write JSON/CSV/HTML results")
    sims = p.add_subparsers(dest="simulation", metavar="SIMULATION")
    for name in SIMULATIONS:
        importlib.import_module(name).register(sims)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
