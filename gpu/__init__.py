"""lowprec.gpu — cross-checks of the format models against real backends (ml_dtypes, torch, Triton)."""
