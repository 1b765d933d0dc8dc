"""lowprec.simulations.gemm — bit-exact models of tensor-core instructions and the GEMMs built on them.

- `isa`: the instructions as data — one `Family` record per tensor-core instruction family (Volta …
  RTX Blackwell `mma`, Hopper `wgmma`, Blackwell `tcgen05.mma`, block-scaled MX/NVFP4 MMAs) with its
  `DotUnit` (products per fused step, fraction bits kept after alignment, truncation, output
  rounding, zero exponent, group-of-16 sums) and the sources of each number; `instructions(arch)`
  lists the instruction strings, `get_instruction(arch, name)` gives one record.
- `mma(a, b, c, arch=, instruction=)`: one instruction, bit for bit (float32/float16 D).
- `matmul(a, b, c, arch=, instruction=, promote_every=, out_format=, scale_a=, scale_b=)`: a whole
  GEMM — K chained through the instruction, FP32 promotion every n elements, decode scales where
  real kernels apply them, the output cast — with the exact reference and each output's error.
- `scalar`: the same arithmetic for one dot product, written to be read (Python integers), with
  the alignment of every term: what a step keeps and what it drops.

- `accumulators`: which instruction a product runs on (an architecture's default, the dense
  instruction for two operand formats) and the named accumulators other simulations offer
  (`ACCUMULATORS`: exact, hopper, hopper_promote128, blackwell).
- `stacks`: what Transformer Engine, torchao and DeepGEMM set per GEMM role, with sources.
- `picture`: the bit picture of one fused step (every term aligned, the kept and the cut bits).
- `study`: the accumulator study, `lowprec simulate gemm` / `python -m lowprec.simulations.gemm`
  (`SIMULATION`, `GemmConfig`, `simulate_gemm`, `deepseek_v3_setup`).

numpy and numba only (no torch). Oracle: MMA-Sim (PyPI `mmasim`), in the tests.
"""

from __future__ import annotations

from .accumulators import ACCUMULATORS, accumulate, default_instruction, dense_instruction
from .core import DEFAULT_TILE, OUT_FORMATS, OUTPUT_CAST, GemmResult, matmul, mma
from .isa import (
    ARCHS,
    FAMILIES,
    PTX_TYPES,
    TF32,
    UE4M3,
    Alignment,
    DotUnit,
    Family,
    Instruction,
    OutputRounding,
    families,
    get_instruction,
    instructions,
)
from .study import SIMULATION, GemmConfig, GemmStudy, deepseek_v3_setup, simulate_gemm

__all__ = [
    "ACCUMULATORS", "ARCHS", "Alignment", "DEFAULT_TILE", "DotUnit", "FAMILIES", "Family", "GemmConfig",
    "GemmResult", "GemmStudy", "Instruction", "OUTPUT_CAST", "OUT_FORMATS", "OutputRounding", "PTX_TYPES",
    "SIMULATION", "TF32", "UE4M3", "accumulate", "deepseek_v3_setup", "default_instruction",
    "dense_instruction", "families", "get_instruction", "instructions", "matmul", "mma", "simulate_gemm",
]
