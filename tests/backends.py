"""Oracles for the format tests: the installed ml_dtypes (numpy for FP16; 0.5–0.7 are modelled, see
`formats.conventions.ML_DTYPES_RULES`) and torch 2.13 CPU casts.

Which library has which format, and under what type, is the conventions table's data
(`formats.conventions.CONVENTION_ROWS`: a row's `dtype` and whether the backend's own cast is the
rounding cast, `casts`); a wrong dtype there makes these oracles disagree with the model."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import torch

from lowprec import formats as F
from lowprec.formats.conventions import backend_dtypes

def _ml_dtype(name: str) -> Any:
    return getattr(np if hasattr(np, name) else ml_dtypes, name)


#: format name → the ml_dtypes (numpy for FP16 and INT8) dtype of the same layout: every format
#: the ml_dtypes rows name a type for (the integer grids too, whose casts are not rounding casts)
ML_DTYPES: dict[str, Any] = {
    name: _ml_dtype(row.dtype) for name, row in backend_dtypes("ml_dtypes", casts_only=False).items()
}
#: the formats whose ml_dtypes cast is the ml_dtypes convention's rounding cast (encode oracles)
ML_DTYPES_CASTS: tuple[str, ...] = tuple(backend_dtypes("ml_dtypes"))
#: format name → the torch dtype of the same layout, for every format torch 2.13 casts to on CPU
#: (no FP4/FP6 element cast, no int4; float→int casts truncate)
TORCH: dict[str, Any] = {
    name: getattr(torch, row.dtype) for name, row in backend_dtypes("torch").items()
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


#: the P3109 binary8 formats the codec-path tests run (the whole family is checked against gfloat in
#: tests/test_formats_p3109.py): no mantissa bits, signed (NaN at -0, ±Inf) and unsigned (below
#: float32's normal range), one exponent bit and a 2-bit mantissa; four layouts the others do not have
P3109_SAMPLE: tuple[F.FloatFormat, ...] = tuple(F.get_format(n) for n in (
    "p3109_k8p1se", "p3109_k8p1ue", "p3109_k8p3se", "p3109_k8p8uf"))
#: the formats the generic codec tests parametrize over (each compiles a kernel per policy): the
#: core formats, ml_dtypes' other float types and two of its integer grids, and the P3109 sample
CODEC_FORMATS: tuple[F.Format, ...] = (F.CORE_FORMATS + (F.E3M4, F.E4M3IEEE, F.E4M3B11FNUZ, F.E5M3FNU, F.INT2,
                                                         F.UINT1) + P3109_SAMPLE)
