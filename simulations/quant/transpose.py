"""The transposed view of an FP8 blockwise tensor: the weight-gradient GEMM needs the 128×1 (column)
tiles of a tensor quantized in 1×128 (row) tiles for the forward pass. Made from the high-precision
source it is one rounding; made from the rows' decoded FP8 data it is two. With power-of-two scales
(Transformer Engine's POW2_FP32, DeepSeek's UE8M0) the second rounding is exact wherever the value
stays in E4M3's normal range, because a power of two leaves an E4M3 significand unchanged; with FP32
scales it is not. `transpose_requantization` measures both routes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from lowprec import formats
from lowprec.formats import E4M3FN

from ..scaling.metrics import error_metrics
from .engine import quantize
from .recipes import Scheme, get_recipe

__all__ = ["TransposeRequantization", "transpose_requantization"]


@dataclass
class TransposeRequantization:
    """The 128×1 column view of a matrix made two ways, against the 1×128 row view."""

    recipe: str
    rows_error: float  # RMS relative error of the row view (1×k tiles) against x
    columns_from_source: float  # the column view (k×1 tiles) quantized from x: one rounding
    columns_requantized: float  # the column view quantized from the row view's decoded data: two roundings
    codes_differ: float  # fraction of column-view codes that differ between the two routes
    second_rounding_changes: float  # fraction of elements whose value the second rounding changes
    exact_where_normal: bool  # the second rounding changed no value that stays normal in E4M3 after the column scale

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def transpose_requantization(x: Any, recipe: str = "fp8_1x128_pow2") -> TransposeRequantization:
    """Quantize the matrix x with a 1×k FP8 tile recipe (rows), then make the k×1 column view from
    the source and from the rows' decoded values, and compare. With power-of-two scales (POW2_FP32,
    UE8M0) the second rounding is exact for every value that stays in E4M3's normal range after the
    column scale: the row-decoded value is an E4M3 value times a power of two, and the column scale
    is another power of two, so its significand fits E4M3 again; only values pushed below E4M3's
    smallest normal 2^-6 can round. With FP32 scales, multiplying by an arbitrary scale changes the
    significand and the second rounding moves values."""
    rec = get_recipe(recipe)
    if rec.scheme is not Scheme.FP8_TILES or rec.block[0] != 1:
        raise ValueError(f"transpose_requantization takes a 1×k FP8 tile recipe (fp8_1x128, …), got {rec.name}")
    arr = formats.as_float_array(x, "x").astype(np.float32)
    if arr.ndim != 2:
        raise ValueError(f"x must be a matrix, got shape {arr.shape}")
    rows = quantize(arr, rec)
    cols_src = quantize(arr.T.copy(), rec)  # 128×1 columns of x = 1×128 rows of xᵀ
    row_values = rows.dequantize().astype(np.float32)
    cols_two = quantize(row_values.T.copy(), rec)
    x64 = arr.astype(np.float64)
    e_rows = error_metrics(x64, rows.dequantize()).rms_rel_error
    e_src = error_metrics(x64.T, cols_src.dequantize()).rms_rel_error
    e_two = error_metrics(x64.T, cols_two.dequantize()).rms_rel_error
    again = cols_two.dequantize().astype(np.float64)
    before = row_values.T.astype(np.float64)
    changed = again != before
    # where the column-scaled value lies below E4M3's smallest normal, its significand may not fit
    scaled = np.abs(before) / cols_two.element_scales()
    normal = scaled >= E4M3FN.smallest_normal
    return TransposeRequantization(rec.name, e_rows, e_src, e_two, float(np.mean(cols_src.codes != cols_two.codes)),
                                   float(np.mean(changed)), not bool(np.any(changed & normal)))
