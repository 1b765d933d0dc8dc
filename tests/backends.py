"""Oracles for the format tests: ml_dtypes 0.6 (numpy for FP16) and torch 2.13 CPU casts."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

ML_DTYPES: dict[str, Any] = {
    "E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2,
    "E2M1": ml_dtypes.float4_e2m1fn, "E8M0": ml_dtypes.float8_e8m0fnu,
    "BF16": ml_dtypes.bfloat16, "FP16": np.float16, "E3M2": ml_dtypes.float6_e3m2fn,
    "E2M3": ml_dtypes.float6_e2m3fn, "E4M3FNUZ": ml_dtypes.float8_e4m3fnuz,
    "E5M2FNUZ": ml_dtypes.float8_e5m2fnuz, "INT8": np.int8, "INT4": ml_dtypes.int4,
}
TORCH: dict[str, Any] = {
    "E4M3FN": torch.float8_e4m3fn, "E5M2": torch.float8_e5m2, "E8M0": torch.float8_e8m0fnu,
    "BF16": torch.bfloat16, "FP16": torch.float16, "E4M3FNUZ": torch.float8_e4m3fnuz,
    "E5M2FNUZ": torch.float8_e5m2fnuz,
}
_UINT = {1: np.uint8, 2: np.uint16}


def ml_dtypes_encode(x: np.ndarray, name: str) -> np.ndarray:
    dt = ML_DTYPES[name]
    with np.errstate(all="ignore"):
        y = x.astype(dt)
    return y.view(_UINT[np.dtype(dt).itemsize]).copy()


def ml_dtypes_decode(codes: np.ndarray, name: str) -> np.ndarray:
    dt = ML_DTYPES[name]
    return codes.astype(_UINT[np.dtype(dt).itemsize]).view(dt).astype(np.float32)


def torch_encode(x: np.ndarray, name: str) -> np.ndarray:
    t = torch.from_numpy(np.ascontiguousarray(x).reshape(-1)).to(TORCH[name])
    size = t.element_size()
    view = t.view(torch.uint8) if size == 1 else t.view(torch.int16)
    return view.numpy().view(_UINT[size]).reshape(x.shape).copy()


def torch_decode(codes: np.ndarray, name: str) -> np.ndarray:
    dt = TORCH[name]
    size = torch.empty(0, dtype=dt).element_size()
    raw = torch.from_numpy(codes.astype(_UINT[size]).view(np.uint8 if size == 1 else np.int16))
    return raw.view(dt).float().numpy()
