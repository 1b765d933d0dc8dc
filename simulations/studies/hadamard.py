"""The random Hadamard transform study: outlier spreading and FP4 error with and without the RHT
(`python -m lowprec.simulations.hadamard`, and the grouping simulation's `hadamard` study).

The transform itself lives in `simulations.quant.rht` (re-exported here): H = diag(d) · S_n / √n,
the signs on the inputs, so that x · H = (x ⊙ d) · S_n / √n and the signs change which values a
block's amax sees. H is orthogonal, so (A·H_blk)(H_blkᵀ·B) = A·B exactly in real arithmetic (in
float64 the difference is rounding only), and a transformed tensor goes back with Hᵀ. The study shows
one outlier per row of A spread over its block of 16 (block amax / RMS drops from up to √16 = 4
toward 1), and the error of NVFP4 and MXFP4 casts of A with and without the transform, measured in
A's own basis over its ordinary elements. Source: Sylvester (1867); the RHT-before-FP4 recipe of
NVIDIA's NVFP4 training report (2025), which applies it to the weight-gradient GEMM's inputs only,
and QuaRot (Ashkboos et al., 2024).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from lowprec.config import ConfigError, Cost, config_record, knob

from ..framework.cli import ProgressFn, Simulation, config_or_knobs, run_module
from ..scaling.metrics import error_metrics
from ..quant.mx import quantize_mx
from ..quant.nvfp4 import quantize_nvfp4
from ..quant.rht import RHT_BLOCK, _seed, apply_blockwise, inverse_rht, random_hadamard, sylvester

__all__ = ["HadamardConfig", "HadamardStudy", "RHT_BLOCK", "SIMULATION", "apply_blockwise", "hadamard_study",
           "random_hadamard", "simulate_hadamard", "summary_lines", "sylvester"]


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

    study = "hadamard"

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
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)) or len(shape) != 2 or not all(
            isinstance(s, (int, np.integer)) and not isinstance(s, bool) for s in shape):
        raise TypeError(f"shape must be two integers (rows, K), got {shape!r:.60}")
    if isinstance(outlier, bool) or not isinstance(outlier, (int, float, np.integer, np.floating)):
        raise TypeError(f"outlier must be a real number, got {outlier!r:.40}")
    m, k = (int(s) for s in shape)
    if m < 1 or k < 1:
        raise ValueError(f"shape must be two positive sizes (rows, K), got {tuple(shape)!r}")
    if not math.isfinite(outlier):
        raise ValueError(f"outlier must be finite, got {outlier!r}")
    if k % 32:
        raise ValueError(f"the inner dimension {k} must be a multiple of 32 (MXFP4 blocks)")
    rng = np.random.default_rng(_seed(seed))
    a = rng.standard_normal((m, k))
    cols = rng.integers(0, k, size=m)
    a[np.arange(m), cols] = outlier
    is_outlier = np.zeros((m, k), bool)
    is_outlier[np.arange(m), cols] = True
    outlier_blocks = np.asarray(is_outlier.reshape(-1, RHT_BLOCK).any(axis=1), dtype=np.bool_)
    ordinary = ~is_outlier
    b = rng.standard_normal((k, 32))
    d = (np.random.default_rng(seed).choice([-1.0, 1.0], size=RHT_BLOCK) if signs is None
         else np.asarray(signs, dtype=np.float64))
    h = random_hadamard(RHT_BLOCK, signs=d)
    a_h = apply_blockwise(a, h, axis=1)
    ht_b = apply_blockwise(b, h, axis=0)  # rows of B: (Hᵀ B) blockwise = (Bᵀ H)ᵀ
    diff = float(np.abs(a_h @ ht_b - a @ b).max())
    a32, ah32 = a.astype(np.float32), a_h.astype(np.float32)

    def err(z_hat: np.ndarray) -> float:
        return error_metrics(a[ordinary], z_hat[ordinary]).rms_rel_error

    def back(z_hat: np.ndarray) -> np.ndarray:
        return inverse_rht(z_hat, h, axis=1)  # undo the transform: (A H) Hᵀ = A

    nv0, nv1 = quantize_nvfp4(a32).dequantize(), back(quantize_nvfp4(ah32).dequantize())
    mx0, mx1 = quantize_mx(a32, "E2M1").dequantize(), back(quantize_mx(ah32, "E2M1").dequantize())
    return HadamardStudy(
        (m, k), float(outlier), seed, [float(v) for v in d],
        diff, _crest(a, RHT_BLOCK, outlier_blocks), _crest(a_h, RHT_BLOCK, outlier_blocks),
        err(nv0), err(nv1), err(mx0), err(mx1),
    )


@config_record
class HadamardConfig:
    """Parameters of `python -m lowprec.simulations.hadamard` (the same names as the grouping
    simulation's hadamard study)."""

    rows: int = knob(64, "rows M of A (one outlier per row)", bounds=(1, 4096), widget="input")
    cols: int = knob(256, "inner dimension K (a multiple of 32: MXFP4 blocks)", bounds=(32, 4096), widget="input")
    outlier: float = knob(100.0, "the outlier's value (one per row of A)", bounds=(-1e6, 1e6), widget="input")
    seed: int = knob(0, "seed of A, B and the Hadamard signs", bounds=(0, 2**31 - 1), widget="input")

    def __post_init__(self) -> None:
        if self.cols % 32:
            raise ConfigError("cols", f"must be a multiple of 32 (MXFP4 blocks), got {self.cols}")

    def cost(self) -> Cost:
        n = self.rows * self.cols
        return Cost(bytes=n * 8 * 10, seconds=n * 4e-7, note="four FP4 casts of A and a GEMM")


def simulate_hadamard(config: HadamardConfig | None = None, *, progress: ProgressFn | None = None,
                      **knobs: Any) -> HadamardStudy:
    """`hadamard_study` for a HadamardConfig (or one made of `knobs`)."""
    cfg = config_or_knobs(HadamardConfig, config, knobs)
    study = hadamard_study((cfg.rows, cfg.cols), cfg.outlier, cfg.seed)
    if progress is not None:
        progress(1, 1)
    return study


def summary_lines(s: HadamardStudy) -> list[str]:
    if not isinstance(s, HadamardStudy):
        raise TypeError(f"s must be a HadamardStudy, got {type(s).__name__}")
    return [f"block crest factor {s.block_crest_before:.3g} → {s.block_crest_after:.3g} with the transform",
            f"rms rel error NVFP4 {s.nvfp4_rms_rel_error_before:.4g} → {s.nvfp4_rms_rel_error_after:.4g}, "
            f"MXFP4 {s.mxfp4_rms_rel_error_before:.4g} → {s.mxfp4_rms_rel_error_after:.4g}",
            f"GEMM max |(AH)(HᵀB) − AB| = {s.gemm_max_abs_diff:.3g}"]


SIMULATION: Simulation[HadamardConfig, HadamardStudy] = Simulation(
    name="hadamard",
    help="random Hadamard transform on blocks of 16: outlier spreading and FP4 error",
    config=HadamardConfig,
    run=lambda cfg, progress: simulate_hadamard(cfg, progress=progress),
    summary=summary_lines,
    html_help="write a standalone HTML page of the FP4 errors without and with the transform (open offline)",
)

main = SIMULATION.main

if __name__ == "__main__":
    run_module(SIMULATION)
