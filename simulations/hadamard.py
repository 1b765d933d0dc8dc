"""Random Hadamard transform (RHT) on blocks of 16, as used before FP4 casts to spread outliers.

H = (S_n / √n) · D: S_n the Sylvester Hadamard matrix (S_1 = [1], S_2k = [[S_k, S_k], [S_k, −S_k]]),
D a diagonal of ±1 signs (seeded, or given). H is orthogonal (Hᵀ H = I), so for a GEMM over an inner
dimension K split into blocks of n, (A·H_blk)(H_blkᵀ·B) = A·B exactly in real arithmetic, where H_blk is
block-diagonal with H on each block; in float64 the difference is rounding only. For n = 16, √n = 4 and
every entry of H is ±1/4, a power of two. The study shows one outlier in a block spread over all n
elements (block amax / RMS drops from up to √n to 1), and the error of an NVFP4/MXFP4 cast with and
without the transform. Source: Sylvester (1867); the RHT-before-FP4 recipe of NVIDIA's NVFP4 training
report (2025) and QuaRot (Ashkboos et al., 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ._io import ArgumentParser, add_json_argument, run_main
from .blocks import quantize_mx, quantize_nvfp4
from .scaling import error_metrics

RHT_BLOCK = 16


def sylvester(n: int) -> np.ndarray:
    """The n × n Sylvester Hadamard matrix of ±1 (n a power of two), float64."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1 or n & (n - 1):
        raise ValueError(f"Sylvester Hadamard size must be a power of two ≥ 1, got {n!r}")
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def random_hadamard(n: int = RHT_BLOCK, seed: int | None = 0, signs: Sequence[float] | None = None) -> np.ndarray:
    """(S_n / √n) · diag(signs): orthogonal; signs drawn from `seed` unless given (each ±1)."""
    s = sylvester(n) / math.sqrt(n)
    if signs is None:
        d = np.random.default_rng(seed).choice([-1.0, 1.0], size=n)
    else:
        d = np.asarray(signs, dtype=np.float64)
        if d.shape != (n,) or not np.all(np.abs(d) == 1):
            raise ValueError(f"signs must be {n} values, each +1 or -1, got {list(np.asarray(signs).ravel())!r}")
    return s * d[None, :]


def apply_blockwise(x: Any, h: np.ndarray, axis: int = -1) -> np.ndarray:
    """x with every run of n = len(h) elements along `axis` multiplied by h (row vector · h), float64."""
    arr = np.asarray(x, dtype=np.float64)
    n = h.shape[0]
    moved = np.moveaxis(arr, axis, -1)
    if moved.shape[-1] % n:
        raise ValueError(f"Hadamard block {n} does not divide axis {axis} of length {moved.shape[-1]}")
    out = (moved.reshape(-1, n) @ h).reshape(moved.shape)
    return np.moveaxis(out, -1, axis)


@dataclass
class HadamardStudy:
    """Outlier spreading and quantization error with and without the RHT."""

    shape: tuple[int, int]
    outlier: float
    seed: int
    signs: list[float]
    gemm_max_abs_diff: float  # max |(A H)(Hᵀ B) − A B| in float64
    block_crest_before: float  # mean over the outliers' blocks of amax / RMS (at most √16 = 4)
    block_crest_after: float
    # RMS relative error over the ordinary (non-outlier) elements of A, measured in A's own basis:
    # Q(A) − A without the transform, Q(A·H)·Hᵀ − A with it
    nvfp4_rms_rel_error_before: float
    nvfp4_rms_rel_error_after: float
    mxfp4_rms_rel_error_before: float
    mxfp4_rms_rel_error_after: float

    def to_dict(self) -> dict[str, Any]:
        return {"study": "hadamard", **{k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}}


def _crest(x: np.ndarray, n: int, which: np.ndarray) -> float:
    b = x.reshape(-1, n)[which]
    rms = np.sqrt((b * b).mean(axis=1))
    ok = rms > 0
    return float((np.abs(b).max(axis=1)[ok] / rms[ok]).mean()) if ok.any() else 0.0


def hadamard_study(shape: Sequence[int] = (64, 256), outlier: float = 100.0, seed: int = 0,
                   signs: Sequence[float] | None = None) -> HadamardStudy:
    """A (M × K) Gaussian with one outlier per row, B (K × N) Gaussian; RHT along K in blocks of 16."""
    m, k = (int(s) for s in shape)
    if m < 1 or k < 1:
        raise ValueError(f"shape must be two positive sizes (rows, K), got {tuple(shape)!r}")
    if not math.isfinite(outlier):
        raise ValueError(f"outlier must be finite, got {outlier!r}")
    if k % 32:
        raise ValueError(f"the inner dimension {k} must be a multiple of 32 (MXFP4 blocks)")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k))
    cols = rng.integers(0, k, size=m)
    a[np.arange(m), cols] = outlier
    is_outlier = np.zeros((m, k), bool)
    is_outlier[np.arange(m), cols] = True
    outlier_blocks = np.asarray(is_outlier.reshape(-1, RHT_BLOCK).any(axis=1), dtype=np.bool_)
    ordinary = ~is_outlier
    b = rng.standard_normal((k, 32))
    h = random_hadamard(RHT_BLOCK, seed, signs)
    a_h = apply_blockwise(a, h, axis=1)
    ht_b = apply_blockwise(b, h, axis=0)  # rows of B: (Hᵀ B) blockwise = (Bᵀ H)ᵀ
    diff = float(np.abs(a_h @ ht_b - a @ b).max())
    a32, ah32 = a.astype(np.float32), a_h.astype(np.float32)

    def err(z_hat: np.ndarray) -> float:
        return error_metrics(a[ordinary], z_hat[ordinary]).rms_rel_error

    def back(z_hat: np.ndarray) -> np.ndarray:
        return apply_blockwise(z_hat, h.T, axis=1)  # undo the transform: (A H) Hᵀ = A

    nv0, nv1 = quantize_nvfp4(a32).dequantize(), back(quantize_nvfp4(ah32).dequantize())
    mx0, mx1 = quantize_mx(a32, "E2M1").dequantize(), back(quantize_mx(ah32, "E2M1").dequantize())
    return HadamardStudy(
        (m, k), float(outlier), seed, [float(v) for v in h[0] * math.sqrt(RHT_BLOCK)],
        diff, _crest(a, RHT_BLOCK, outlier_blocks), _crest(a_h, RHT_BLOCK, outlier_blocks),
        err(nv0), err(nv1), err(mx0), err(mx1),
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m lowprec.simulations.hadamard",
                                description="random Hadamard transform study (blocks of 16) → JSON")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--cols", type=int, default=256, help="inner dimension K (a multiple of 32)")
    p.add_argument("--outlier", type=float, default=100.0, help="the outlier's value (one per row)")
    p.add_argument("--seed", type=int, default=0)
    add_json_argument(p)
    return run_main(p, argv, lambda a: hadamard_study((a.rows, a.cols), a.outlier, a.seed))


if __name__ == "__main__":
    raise SystemExit(main())
