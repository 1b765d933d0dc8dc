"""The recipe lab: the user's own tensors (`.npy`, `.npz`, `.safetensors`, PyTorch state dicts,
sharded checkpoints) through every recipe of `simulations.quant` — per-tensor / per-row / per-column
scaled E4M3 and E5M2, FP8 blockwise 1×128 / 128×128 tiles, MXFP8 / MXFP6 / MXFP4 / MXINT8, NVFP4
(1×16 and 16×16, 4over6, row-scaled, under the block conventions), with or without the random
Hadamard transform, INT8 per row, INT4 per group, BF16 / FP16 casts — side by side.

- `readers`: which tensors files hold (skipped entries with reasons, one-line errors for bad files),
  and their rows on demand; `torch_reader` for state dicts (the only module here that imports torch).
- `limits`: what a file may declare before the readers refuse it (`ReadLimits`, `LIMITS`), declared
  once; `tensors`: the records and checks the readers share (regular files only, unique names).
- `recipes`: the recipes as data (the quant wing's registry: `Recipe`, `RECIPES`, `parse_recipes`)
  and one recipe on a chunk of rows, run by `simulations.quant.quantize`.
- `measure`: statistics, error metrics, rankings, flags (`FLAGS`), and one recipe's histogram and
  error map.
- `_kernels`: the compiled (numba) twins of `measure`'s sums, one pass per recipe and chunk, the
  quantizer inside for scaled casts and ocp NVFP4; the same numbers, bit for bit (the numpy code runs
  where numba is missing or LOWPREC_CODEC=numpy).
- `runner`: two passes over row chunks per tensor, tensors mapped over any Executor, the report.
- `samples`: generated sample tensors (an LLM-like weight, an activation, a gradient).

Nothing here draws (`lowprec analyze --html` and the RecipeLab widget draw, in `app`).
"""

from __future__ import annotations

from .limits import LIMITS, ReadLimits
from .readers import LabReadError, Skipped, TensorRef, scan
from .recipes import DEFAULT_RECIPES, RECIPES, Recipe, get_recipe, parse_recipes
from .runner import LabReport, TensorReport, analyze, analyze_arrays, open_executor

__all__ = ["DEFAULT_RECIPES", "LIMITS", "LabReadError", "LabReport", "RECIPES", "ReadLimits", "Recipe", "Skipped",
           "TensorRef", "TensorReport", "analyze", "analyze_arrays", "get_recipe", "open_executor", "parse_recipes", "scan"]
