"""`python -m lowprec.simulations.blocks`."""

from lowprec.simulations.blocks import SIMULATION
from lowprec.simulations.framework.cli import run_module

if __name__ == "__main__":
    run_module(SIMULATION)
