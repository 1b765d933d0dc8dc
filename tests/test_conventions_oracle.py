"""The `ocp` and `triton_nvidia` conventions against an oracle that needs no GPU (issue 19).

Both are "round to nearest even, saturate": for finite x (and ±Inf, which saturate too) the code is
the ml_dtypes cast of x clipped to ±max (numpy's own cast for FP16), compared as unsigned integers
over every cross-check vector of `gpu.vectors` (every value, midpoint ±1 float32 step, overflow
thresholds, subnormal boundaries, specials, seeded random values). Under `ocp` the non-MX formats
(BF16, FP16, the fnuz pair) keep IEEE overflow, so their oracle is the unclipped cast.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from lowprec.formats import encode, get_format, policy_for
from lowprec.gpu.vectors import all_inputs

#: format → (numpy/ml_dtypes dtype, unsigned view of its codes)
DTYPES = {
    "E4M3FN": (ml_dtypes.float8_e4m3fn, np.uint8),
    "E5M2": (ml_dtypes.float8_e5m2, np.uint8),
    "E2M1": (ml_dtypes.float4_e2m1fn, np.uint8),
    "E3M2": (ml_dtypes.float6_e3m2fn, np.uint8),
    "E2M3": (ml_dtypes.float6_e2m3fn, np.uint8),
    "E4M3FNUZ": (ml_dtypes.float8_e4m3fnuz, np.uint8),
    "E5M2FNUZ": (ml_dtypes.float8_e5m2fnuz, np.uint8),
    "BF16": (ml_dtypes.bfloat16, np.uint16),
    "FP16": (np.float16, np.uint16),
}
MX_ELEMENTS = ("E4M3FN", "E5M2", "E2M1", "E3M2", "E2M3")  # the OCP spec's saturating conversions
CASES = ([("triton_nvidia", name, True) for name in DTYPES]
         + [("ocp", name, name in MX_ELEMENTS) for name in DTYPES])


def oracle_codes(x: np.ndarray, name: str, clip: bool) -> np.ndarray:
    dt, view = DTYPES[name]
    fmax = float(ml_dtypes.finfo(dt).max) if dt is not np.float16 else float(np.finfo(np.float16).max)
    y = np.clip(x, np.float32(-fmax), np.float32(fmax)) if clip else x
    with np.errstate(over="ignore"):
        return y.astype(dt).view(view)


@pytest.mark.parametrize("convention, name, clip", CASES,
                         ids=[f"{c}-{n}" for c, n, _ in CASES])
def test_convention_equals_ml_dtypes_of_clipped_input(convention: str, name: str, clip: bool) -> None:
    x = all_inputs(name, n_random=4_000)
    x = x[~np.isnan(x)]  # NaN payload rules are the conventions' own (tested with the codec)
    want = oracle_codes(x, name, clip)
    got = encode(x, name, policy_for(convention, name))
    bad = np.flatnonzero(got.astype(np.int64) != want.astype(np.int64))
    assert bad.size == 0, (f"{bad.size} of {x.size} differ; first: "
                           + ", ".join(f"{float(x[i])!r}: want {int(want[i]):#x} got {int(got[i]):#x}"
                                       for i in bad[:4]))


@pytest.mark.parametrize("convention", ["ocp", "triton_nvidia"])
def test_overflow_saturates_for_the_mx_element_types(convention: str) -> None:
    # 2·max lies far beyond the top rounding bin: saturation gives ±max's code (0x7E / 0xFE for
    # E4M3FN: 0 1111 110; 0x7B / 0xFB for E5M2: 0 11110 11), never Inf (0x7C) or NaN (0x7F)
    for name, pos_code in (("E4M3FN", 0x7E), ("E5M2", 0x7B)):
        fmax = get_format(name).max
        x = np.array([2 * fmax, -2 * fmax, np.inf, -np.inf], np.float32)
        got = encode(x, name, policy_for(convention, name)).astype(np.int64).tolist()
        assert got == [pos_code, pos_code | 0x80, pos_code, pos_code | 0x80], (name, got)
