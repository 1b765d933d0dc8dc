"""Independent oracles for lesson 25's answers (`tests/test_exercise_answers.py` merges `ORACLES`):
byte counts by arithmetic on the shapes, E2M1 and E8M0 through ml_dtypes, DeepGEMM's FP32 and UE8M0
tile rules written again here on the lab's sample weight, the exponent-only truncation by
`math.frexp` — none through the lab's readers or the quant wing."""

from __future__ import annotations

import math
from typing import Any, Callable

import ml_dtypes
import numpy as np

from lowprec.simulations.lab.samples import weight

F32 = np.float32
E4M3 = ml_dtypes.float8_e4m3fn


def _tiles(x: np.ndarray, t: int = 128) -> list[tuple[slice, slice]]:
    return [(slice(i, i + t), slice(j, j + t)) for i in range(0, x.shape[0], t) for j in range(0, x.shape[1], t)]


def deepgemm_fp32(x: np.ndarray) -> tuple[np.ndarray, list[float]]:
    """DeepGEMM per_block_cast_to_fp8 (FP32 scales): d = max(amax, 1e-4) / 448 in FP32, the tile
    times FP32(1 / d) cast to E4M3 (saturating), dequantized as E4M3 · d in FP32."""
    out = np.empty_like(x, dtype=np.float32)
    scales = []
    for r, c in _tiles(x):
        tile = x[r, c].astype(F32)
        d = F32(max(F32(np.abs(tile).max()), F32(1e-4)) / F32(448.0))
        q = np.clip(tile * (F32(1.0) / d), -448, 448).astype(E4M3).astype(F32)
        out[r, c] = q * d
        scales.append(float(d))
    return out, scales


def deepgemm_ue8m0(x: np.ndarray) -> np.ndarray:
    """The same with d rounded up to a power of two (use_ue8m0)."""
    out = np.empty_like(x, dtype=np.float32)
    for r, c in _tiles(x):
        tile = x[r, c].astype(F32)
        d = float(F32(max(F32(np.abs(tile).max()), F32(1e-4)) / F32(448.0)))
        m, e = math.frexp(d)
        p = F32(math.ldexp(1.0, e - 1 if m == 0.5 else e))  # the smallest power of two ≥ d
        q = np.clip(tile * (F32(1.0) / p), -448, 448).astype(E4M3).astype(F32)
        out[r, c] = q * p
    return out


def kept_factor(s: float) -> float:
    m, e = math.frexp(s)
    return math.ldexp(1.0, e - 1) / s


def nibble_answer() -> str:
    byte, scale = 0x2F, 128
    lo, hi = byte & 0x0F, byte >> 4
    vals = np.array([lo, hi], np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float64)
    s = float(np.array([scale], np.uint8).view(ml_dtypes.float8_e8m0fnu).astype(np.float64)[0])
    first, second = vals * s
    return f"{first:g} then {second:g}".replace("-", "−")


def requant_answer() -> str:
    w = weight().astype(np.float32)
    stored, _ = deepgemm_fp32(w)
    again = deepgemm_ue8m0(stored).astype(np.float64)
    lab = np.linalg.norm(again - stored) / np.linalg.norm(stored)
    vs_original = np.linalg.norm(again - w) / np.linalg.norm(w)
    if abs(lab - vs_original) < 0.1 * vs_original:
        return "about the error against the original weight"
    return ("smaller than the error against the original weight" if lab < vs_original
            else "larger than the error against the original weight")


def worst_factor() -> float:
    _, scales = deepgemm_fp32(weight().astype(np.float32))
    return min(kept_factor(s) for s in scales)


ORACLES: dict[str, Callable[[], Any]] = {
    "example:ckpt_gptoss_bytes.total_bytes": lambda: 256 * 512 // 2 + 256 * 512 // 32,
    "example:ckpt_modelopt_bytes.total_bytes": lambda: 4096 * 11008 // 2 + 4096 * 11008 // 16 + 4,
    "example:ckpt_nibbles.answer": nibble_answer,
    "example:ckpt_truncation.worst_factor": worst_factor,
    "example:ckpt_truncation.channel_lost": lambda: 1.0 - kept_factor(float(F32(0.0015))),
    "example:ckpt_requant.answer": requant_answer,
}
