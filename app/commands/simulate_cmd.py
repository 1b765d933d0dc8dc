"""`lowprec simulate NAME ...`: one subcommand per simulation of the registry of simulations
(`app.sim_faces.FACES`, in its order), each generated from the simulation's `Simulation`
declaration with the entry's `--html` page (`sim_common.register_faces`). A simulation is added to
the command line by its registry entry, never here."""

from __future__ import annotations

import argparse
from typing import Any

from lowprec.app.sim_faces import FACES

from .sim_common import register_faces


def register(sub: Any) -> None:
    p = sub.add_parser("simulate", help="run a simulation and write JSON/CSV/HTML results")
    sims = p.add_subparsers(dest="simulation", metavar="SIMULATION")
    for entry in FACES.values():
        register_faces(sims, entry)

    def _help(args: argparse.Namespace) -> int:
        p.print_help()
        return 2

    p.set_defaults(func=_help)
