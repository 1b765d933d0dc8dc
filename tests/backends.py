"""Oracles for the format tests: the installed ml_dtypes (numpy for FP16; 0.5–0.7 are modelled, see
`formats.conventions.ML_DTYPES_RULES`) and torch 2.13 CPU casts.

The dtype of a format in each library is the attribute named by the format record's `dtype_name`
(the one format ↔ dtype table); a wrong name there makes these oracles disagree with the model."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from lowprec import formats as F

#: format name → the ml_dtypes (numpy for FP16 and INT8) dtype of the same layout
ML_DTYPES: dict[str, Any] = {
    f.name: getattr(np if hasattr(np, f.dtype_name) else ml_dtypes, f.dtype_name)
    for f in F.ALL_FORMATS if f.name != "FP32"
}
#: format name → the torch dtype of the same layout, for every format torch 2.13 casts to on CPU
#: (no FP4/FP6 element cast, no int4; float→int casts truncate)
TORCH: dict[str, Any] = {
    f.name: getattr(torch, f.dtype_name) for f in F.FLOAT_FORMATS
    if f.name != "FP32" and f.bits >= 8 and hasattr(torch, f.dtype_name)
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
