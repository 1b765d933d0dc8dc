"""`python -m lowprec.simulations.blocks`."""

from lowprec.simulations.blocks import SIMULATION
from lowprec.simulations.framework.cli import run_module

run_module(SIMULATION)
