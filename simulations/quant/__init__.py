"""lowprec.simulations.quant — scaled quantization, recipes as data.

A recipe is one frozen record (`Recipe`: element format, scale granularity, scale format, scale
rule, optional second level, optional transform, rounding, block convention, description and
source) in one registry, `RECIPES`; one entry point runs every record:

    from lowprec.simulations import quant
    q = quant.quantize(x, "nvfp4@transformer_engine")
    q.codes, q.scales, q.scale_codes, q.tensor_scale, q.dequantize()

`NAME@CONVENTION` picks whose arithmetic is reproduced bit for bit (`CONVENTIONS`: ocp, torchao,
transformer_engine, deepseek, microxcaling; casts take torch or ml_dtypes). The recipe lab, the
blocks simulation and its widget, the CLI (`lowprec analyze --recipes`) and the lessons read this
registry. Modules: `recipes` (the records), `engine` (`quantize`, `QuantResult`), `conventions` (the
named rules), `scale_rules` (MX exponents), `mx`, `nvfp4`, `fp8_blockwise`, `mxint` (the
quantizers of each scheme), `rht` (the random Hadamard transform and its sign conventions),
`transpose` (the transposed view re-quantized).
"""

from __future__ import annotations

from .conventions import BLOCK_CONVENTIONS, CONVENTIONS, BlockConvention, get_block_convention
from .engine import QuantResult, chunk_global_amax, quantize, transform_input
from .recipes import (
    ALL,
    CAST_CONVENTIONS,
    DEFAULT,
    DEFAULT_RECIPES,
    RECIPES,
    Recipe,
    ScaleFormat,
    Scheme,
    get_recipe,
    matrix_shape,
    parse_recipes,
)
from .rht import RHT_CONVENTIONS, RHTConvention
from .transpose import TransposeRequantization, transpose_requantization

__all__ = [
    "ALL",
    "BLOCK_CONVENTIONS",
    "BlockConvention",
    "CAST_CONVENTIONS",
    "CONVENTIONS",
    "DEFAULT",
    "DEFAULT_RECIPES",
    "QuantResult",
    "RECIPES",
    "RHTConvention",
    "RHT_CONVENTIONS",
    "Recipe",
    "ScaleFormat",
    "Scheme",
    "TransposeRequantization",
    "chunk_global_amax",
    "get_block_convention",
    "get_recipe",
    "matrix_shape",
    "parse_recipes",
    "quantize",
    "transform_input",
    "transpose_requantization",
]
