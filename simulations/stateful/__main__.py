"""`python -m lowprec.simulations.stateful`: the simulation's data entry point (JSON, CSV)."""

from __future__ import annotations

from lowprec.simulations.framework.cli import run_module
from lowprec.simulations.stateful import SIMULATION

if __name__ == "__main__":
    run_module(SIMULATION)
