"""The random Hadamard transform (RHT) on blocks of 16, with its sign conventions named.

H = diag(d) · S_n / √n: S_n the Sylvester Hadamard matrix (S_1 = [1], S_2k = [[S_k, S_k], [S_k, −S_k]]),
d a vector of ±1 signs. A run x of n elements along an axis (a row vector) becomes x · H =
(x ⊙ d) · S_n / √n: every input is multiplied by its sign, then the block is mixed. The signs must
sit on the inputs: on the outputs (S_n / √n · diag(d)) they only flip the signs of the results, so
|x · H| would equal |x · S_n / √n| element by element and no amax, scale or error would depend on d.
With d on the inputs a block of 16 equal values c maps to c · (d · S_n) / 4, whose largest
magnitude depends on d: 4c (crest factor 4) for d = 1, 2c for Transformer Engine's signs.

H is orthogonal (Hᵀ H = I): for a GEMM over an inner dimension K split into blocks of n,
(A · H_blk)(H_blkᵀ · B) = A · B, H_blk block-diagonal with H on each block, and a transformed
tensor goes back with Hᵀ (`inverse_rht`). For n = 16 every entry is ±1/4, a power of two, so each
product x_i · H_ij is exact and a block's sixteen sums are formed exactly here (in float64) and
rounded once to the operand's dtype (`apply_rht`) — the transformed operand a kernel holds.

Two sign conventions (`RHT_CONVENTIONS`):

- `seeded` — lowprec's: d = numpy.random.default_rng(seed).choice([−1, 1], n), seed 0 by default
  (the blocks simulation passes its own seed).
- `transformer_engine` — Transformer Engine's fixed vector `get_wgrad_sign_vector()` of
  `transformer_engine/pytorch/custom_recipes/reference_nvfp4.py` (`NVFP4QuantizerRef` with
  `with_rht=True` builds diag(d) · S_16, scales it by 1/4 and applies it as x @ H in the operand's
  dtype). TE applies the transform to the column-wise operands of the weight-gradient GEMM only
  (the transposed activation and output gradient it quantizes for wgrad), never to weights. TE's
  torch reference rounds inside its matmul's accumulation; for bf16 operands, whose sixteen
  products sum exactly in float32, that is the exact sum rounded once, as here.

Sources: Sylvester (1867); NVIDIA, *Pretraining Large Language Models with NVFP4* (2025,
arXiv:2509.25149, the RHT on wgrad inputs); QuaRot (Ashkboos et al., 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import ml_dtypes
import numpy as np

from lowprec import formats

__all__ = [
    "MAX_HADAMARD",
    "RHT_BLOCK",
    "RHT_CONVENTIONS",
    "RHTConvention",
    "TE_WGRAD_SIGNS",
    "apply_blockwise",
    "apply_rht",
    "block_crest_factor",
    "get_rht",
    "inverse_rht",
    "random_hadamard",
    "rht_matrix",
    "sylvester",
]

RHT_BLOCK = 16
MAX_HADAMARD = 4096  # the largest Sylvester matrix built (bounded work: 128 MiB of float64)

#: Transformer Engine's `get_wgrad_sign_vector()` (reference_nvfp4.py): the 16 signs of its RHT
TE_WGRAD_SIGNS: tuple[float, ...] = (1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0, -1.0,
                                     -1.0, -1.0, -1.0, 1.0, -1.0, 1.0, -1.0, -1.0)


def sylvester(n: int) -> np.ndarray:
    """The n × n Sylvester Hadamard matrix of ±1 (n a power of two), float64."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or n & (n - 1):
        raise ValueError(f"Sylvester Hadamard size must be a power of two ≥ 1, got {n!r}")
    if n > MAX_HADAMARD:
        raise ValueError(f"Sylvester Hadamard size {n} is over the largest built here, {MAX_HADAMARD}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def _seed(seed: Any) -> int | None:
    """A seed for numpy.random.default_rng (an integer ≥ 0, or None): TypeError/ValueError naming it."""
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer))):
        raise TypeError(f"seed must be an integer or None, got {seed!r:.40}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be ≥ 0, got {seed}")
    return None if seed is None else int(seed)


def random_hadamard(n: int = RHT_BLOCK, seed: int | None = 0, signs: Sequence[float] | np.ndarray | None = None
                    ) -> np.ndarray:
    """diag(signs) · S_n / √n: orthogonal, the signs on the inputs (row i of S_n times d_i); signs drawn
    from `seed` (numpy default_rng(seed).choice([−1, 1], n)) unless given (each ±1)."""
    s = sylvester(n) / math.sqrt(n)
    if signs is None:
        d = np.random.default_rng(_seed(seed)).choice([-1.0, 1.0], size=n)
    else:
        d = formats.as_float_array(signs, "signs").astype(np.float64)
        if d.shape != (n,) or not np.all(np.abs(d) == 1):
            raise ValueError(f"signs must be {n} values, each +1 or -1, got {list(np.asarray(signs).ravel())!r}")
    return d[:, None] * s


@dataclass(frozen=True)
class RHTConvention:
    """Where an RHT's 16 signs come from, and how a block's sixteen products are summed."""

    name: str  # registry key
    signs: tuple[float, ...] | None  # fixed signs, or None: drawn from a seed
    source: str
    accumulate: str = "exact"  # "exact": each sum formed exactly, rounded once to the operand's dtype;
    #                            "float32_in_order": summed in float32 over the 16 inputs in order, then
    #                            rounded to the operand's dtype (Transformer Engine's torch reference)

    def matrix(self, seed: int = 0) -> np.ndarray:
        """H = diag(d) · S_16 / 4 (float64); `seed` draws d for the seeded convention."""
        return random_hadamard(RHT_BLOCK, seed, self.signs)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "signs": None if self.signs is None else list(self.signs), "source": self.source}


RHT_CONVENTIONS: dict[str, RHTConvention] = {
    c.name: c for c in (
        RHTConvention("seeded", None, "lowprec: signs numpy.random.default_rng(seed).choice([-1, 1], 16), seed 0"),
        RHTConvention("transformer_engine", TE_WGRAD_SIGNS,
                      "Transformer Engine reference_nvfp4.py get_wgrad_sign_vector(), on the inputs: "
                      "diag(d) · S_16 / 4, applied as x @ H in float32 (torch's CPU matmul sums the 16 "
                      "products in order)",
                      accumulate="float32_in_order"),
    )
}


def get_rht(name: str | RHTConvention) -> RHTConvention:
    """The RHT convention called `name`; ValueError naming the known ones."""
    if isinstance(name, RHTConvention):
        return name
    if isinstance(name, str) and name.strip().lower() in RHT_CONVENTIONS:
        return RHT_CONVENTIONS[name.strip().lower()]
    raise ValueError(f"unknown RHT convention {name!r}; known: {', '.join(RHT_CONVENTIONS)}")


def rht_matrix(convention: str | RHTConvention = "seeded", seed: int = 0) -> np.ndarray:
    """The 16 × 16 matrix of an RHT convention (float64)."""
    return get_rht(convention).matrix(seed)


def apply_blockwise(x: Any, h: np.ndarray, axis: int = -1) -> np.ndarray:
    """x with every run of n = len(h) elements along `axis` multiplied by h (row vector · h), float64."""
    raw = np.asarray(x)
    if raw.dtype in (np.dtype(ml_dtypes.bfloat16),):  # widened exactly (formats takes float16, not bfloat16)
        raw = raw.astype(np.float32)
    arr = formats.as_float_array(raw, "x").astype(np.float64)
    h = _square(h)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r:.40}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {arr.ndim} axes")
    n = h.shape[0]
    moved = np.moveaxis(arr, axis, -1)
    if moved.shape[-1] % n:
        raise ValueError(f"Hadamard block {n} does not divide axis {axis} of length {moved.shape[-1]}")
    out = (moved.reshape(-1, n) @ h).reshape(moved.shape)
    return np.moveaxis(out, -1, axis)


def _round_to(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """float64 values rounded once (nearest even) to `dtype`: float64, float32, float16 or bfloat16."""
    if dtype == np.float64:
        return values
    if dtype == np.float32:
        return values.astype(np.float32)
    fmt = formats.BF16 if dtype == np.dtype(ml_dtypes.bfloat16) else formats.FP16
    with np.errstate(over="ignore"):
        rounded = formats.quantize(values, fmt, formats.policy_for("torch", fmt))
    return np.asarray(rounded).astype(dtype)


def _square(h: Any) -> np.ndarray:
    """h as a square float64 matrix; ValueError otherwise."""
    m = formats.as_float_array(h, "h").astype(np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1] or m.shape[0] == 0:
        raise ValueError(f"h must be a square n × n matrix, got shape {m.shape}")
    return m


def _sum_in_order_float32(x: np.ndarray, h: np.ndarray, axis: int) -> np.ndarray:
    """x · H blockwise along `axis` with each output summed in float32 over the n inputs in order
    (x float32; every product x_i · H_ij is exact for entries ±1/4)."""
    n = h.shape[0]
    arr = np.asarray(x, np.float32)
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an integer, got {axis!r:.40}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for an array of {arr.ndim} axes")
    moved = np.moveaxis(arr, axis, -1)
    if moved.shape[-1] % n:
        raise ValueError(f"Hadamard block {n} does not divide axis {axis} of length {moved.shape[-1]}")
    blocks = moved.reshape(-1, n)
    h32 = np.asarray(h, np.float32)
    acc = np.zeros(blocks.shape, np.float32)
    for i in range(n):
        acc += blocks[:, i:i + 1] * h32[i]
    return np.moveaxis(acc.reshape(moved.shape), -1, axis)


def apply_rht(x: Any, h: np.ndarray, axis: int = -1, accumulate: str = "exact") -> np.ndarray:
    """x · H blockwise along `axis`, in x's dtype (float32, float64, float16 or bfloat16; other input
    becomes float32): the operand as a kernel holds it after the transform. `accumulate` "exact"
    forms each sum exactly and rounds it once; "float32_in_order" sums in float32 over the inputs in
    order and rounds that to x's dtype (see RHTConvention)."""
    if accumulate not in ("exact", "float32_in_order"):
        raise ValueError(f"accumulate must be 'exact' or 'float32_in_order', got {accumulate!r:.40}")
    arr = np.asarray(x)
    half = arr.dtype in (np.float16, np.dtype(ml_dtypes.bfloat16))
    dtype = arr.dtype if half or arr.dtype in (np.float32, np.float64) else np.dtype(np.float32)
    wide = arr.astype(np.float32) if half else formats.as_float_array(arr, "x")
    if accumulate == "float32_in_order" and dtype != np.float64:
        return _round_to(_sum_in_order_float32(wide, _square(h), axis).astype(np.float64), np.dtype(dtype))
    return _round_to(apply_blockwise(wide, h, axis), np.dtype(dtype))


def inverse_rht(y: Any, h: np.ndarray, axis: int = -1) -> np.ndarray:
    """y · Hᵀ blockwise along `axis` (float64): the transform undone, (x · H) · Hᵀ = x."""
    return apply_blockwise(y, _square(h).T, axis)


def block_crest_factor(x: Any, n: int = RHT_BLOCK) -> np.ndarray:
    """amax / RMS of each run of n consecutive elements of x (flattened; at most √n; NaN for an
    all-zero run)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r:.40}")
    a = formats.as_float_array(x, "x").astype(np.float64)
    if a.size % n:
        raise ValueError(f"runs of {n} do not divide the {a.size} elements of x")
    b = a.reshape(-1, n)
    rms = np.sqrt((b * b).mean(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rms > 0, np.abs(b).max(axis=1) / np.where(rms > 0, rms, 1.0), np.nan)
