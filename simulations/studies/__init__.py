"""Single-module studies: attention rounding, precision cliffs, grouping, the Hadamard transform,
the delayed-scaling spike, Transformer Engine's placement under recompute, the defect hunt.
The simulations among them keep their `python -m lowprec.simulations.NAME` entry points as
alias modules at the old paths."""
