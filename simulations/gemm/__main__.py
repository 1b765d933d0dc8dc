"""`python -m lowprec.simulations.gemm`: the accumulator study (`gemm.study.SIMULATION`), data only."""

from __future__ import annotations

from ..framework.cli import run_module
from .study import SIMULATION

if __name__ == "__main__":
    run_module(SIMULATION)
