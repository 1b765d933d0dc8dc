"""The stated error bound of the FP8 GEMM kernel and its float64 reference.

`gpu.kernels.fp8_gemm` computes `C = (Σ_k A[m,k]·B[k,n]) · a_decode_scale[m] · b_decode_scale[n]`
from fp8 operands with FP32 accumulation; `reference_gemm` gives C and |A|·|B| in float64 from the
exact dequantized operands, and `gemm_error_bound` the bound |C - C_ref| the kernel must meet.
The bit-exact model of the tensor-core products themselves (what each instruction returns) is
`lowprec.simulations.gemm`.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["GPU_FP8_ACC_BITS", "gemm_error_bound", "reference_gemm"]

#: significand bits assumed for the in-chunk accumulation of Hopper FP8 tensor-core dots: the
#: DeepSeek-V3 technical report (arXiv:2412.19437, §3.3.2) measures about 14 bits retained on H800;
#: truncation with 14 bits has unit roundoff 2^-13
GPU_FP8_ACC_BITS = 13


def reference_gemm(a_values: np.ndarray, b_values: np.ndarray, a_decode_scale: np.ndarray,
                   b_decode_scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(C, |A|·|B| · |sa sb|) in float64 from the exact dequantized operands (decoded fp8 values,
    decode scales per tensor (1), per row of A (M) or per column of B (N))."""
    a = np.asarray(a_values, np.float64)
    b = np.asarray(b_values, np.float64)
    sa = np.asarray(a_decode_scale, np.float64).reshape(-1, 1)
    sb = np.asarray(b_decode_scale, np.float64).reshape(1, -1)
    s = np.abs(sa * sb)
    return (a @ b) * sa * sb, (np.abs(a) @ np.abs(b)) * s


def gemm_error_bound(abs_product: np.ndarray, k: int, *, block_k: int, acc_bits: int = 24) -> np.ndarray:
    """Bound on |C - C_ref| for `gpu.kernels.fp8_gemm` (Higham, Accuracy and Stability, §3.1).

    Each fp8×fp8 product is exact in FP32. Within a chunk of `block_k` products the sum is formed
    by the dot unit with a `acc_bits`-bit significand (unit roundoff u1 = 2^-acc_bits when
    rounding; a truncating unit is covered by passing one bit fewer), in any order: error ≤
    γ(block_k - 1, u1) Σ|p|. The ceil(k / block_k) chunk sums are added in FP32 (u = 2^-24) and the
    result is multiplied by the two decode scales: γ(ceil(k/block_k) + 2, u). Altogether
    |C - C_ref| ≤ [(1 + γ(block_k - 1, u1))(1 + γ(chunks + 2, u)) - 1] · (|A||B|)[m,n] · |sa sb|,
    with γ(n, u) = n·u / (1 - n·u). The float64 reference is exact for E4M3 operands and off by
    at most k·2^-53 relative otherwise (added). FP32 underflow is not covered: keep
    |C| ≥ 2^-100 · |A||B| in tests.
    """
    def gamma(n: int, u: float) -> float:
        return n * u / (1 - n * u)

    u = 2.0**-24
    u1 = 2.0**-acc_bits
    chunks = math.ceil(k / block_k)
    rel = (1 + gamma(max(block_k - 1, 0), u1)) * (1 + gamma(chunks + 2, u)) - 1 + k * 2.0**-53
    return rel * np.asarray(abs_product, np.float64)
