"""Exhaustive: every float32 bit pattern through the compiled codec, against the numpy reference.

For E4M3FN, E5M2, E2M1, BF16 and E8M0 under every named convention (ml_dtypes, torch, triton_nvidia,
ocp), all 2^32 inputs are encoded in chunks by both paths and the codes compared as unsigned
integers. Where a convention refuses NaN (E2M1 under torch/triton_nvidia/ocp) the NaN patterns are
left out of the comparison and both paths are checked to raise the same error for them.

Slow (the reference is the numpy codec): `pytest -m slow tests/test_codec_sweep.py`. Knobs for a
partial run, stated in the test output: LOWPREC_SWEEP_STRIDE=k compares every k-th chunk of 2^24
patterns (default 1: all of them); LOWPREC_SWEEP_ONLY=E4M3FN-torch,BF16-ocp runs only those cases.
"""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats import codec

FORMATS = ["E4M3FN", "E5M2", "E2M1", "BF16", "E8M0"]
CONVENTIONS = list(F.CONVENTIONS)
CHUNK = 1 << 24
CASES = [f"{f}-{c}" for f in FORMATS for c in CONVENTIONS]


def _selected(case: str) -> bool:
    only = os.environ.get("LOWPREC_SWEEP_ONLY", "").strip()
    return not only or case in {c.strip() for c in only.split(",")}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES)
def test_every_float32_bit_pattern(case: str) -> None:
    if not _selected(case):
        pytest.skip("not in LOWPREC_SWEEP_ONLY")
    if codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    name, convention = case.split("-")
    fmt = F.get_format(name)
    pol = F.policy_for(convention, fmt)
    refuses_nan = not fmt.has_nan and pol.nan_to_finite is F.NanToFinite.RAISE
    stride = max(1, int(os.environ.get("LOWPREC_SWEEP_STRIDE", "1")))
    t0 = time.perf_counter()
    compared = 0
    for start in range(0, 1 << 32, CHUNK * stride):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        if refuses_nan:
            x = x[~np.isnan(x)]
        with codec.codec_path("fast"):
            fast = F.encode(x, fmt, pol)
        with codec.codec_path("numpy"):
            ref = F.encode(x, fmt, pol)
        bad = np.flatnonzero(fast != ref)
        assert bad.size == 0, (
            f"{bad.size} mismatches in chunk at {start:#010x}; first: bits "
            f"{int(x.view(np.uint32)[bad[0]]):#010x} reference {int(ref[bad[0]]):#x} fast {int(fast[bad[0]]):#x}")
        compared += x.size
    if refuses_nan:
        nan = np.array([0x7FC00000, 0xFFFFFFFF, 0x7F800001], np.uint32).view(np.float32)
        for path in ("fast", "numpy"):
            with codec.codec_path(path), pytest.raises(ValueError, match=f"NaN cannot be encoded in {name}"):
                F.encode(nan, fmt, pol)
    print(f"\n{case}: {compared} patterns compared (stride {stride}) in {time.perf_counter() - t0:.0f} s")
