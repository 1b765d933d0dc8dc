"""Exhaustive: every float32 bit pattern through the compiled codec, against the numpy reference,
and the formats ml_dtypes 0.7 added against ml_dtypes itself.

For E4M3FN, E5M2, E2M1, BF16 and E8M0 under every named convention that provides them (ml_dtypes,
torch, triton_nvidia, ocp), and for ml_dtypes' E3M4, E4M3IEEE, E4M3B11FNUZ, E5M3FNU and P3109's
K8P3 (signed, extended) and K8P1 (unsigned) under theirs, all 2^32 inputs are encoded in chunks by
both paths and the codes compared as unsigned integers. Where a convention refuses NaN (E2M1 under
torch/triton_nvidia/ocp) the NaN patterns are left out of the comparison and both paths are checked
to raise the same error for them. `test_every_float32_vs_ml_dtypes`: every float32 through ml_dtypes
0.7's own cast of E3M4, E4M3IEEE, E4M3B11FNUZ and E5M3FNU (the ml_dtypes convention) and, for the
integer grids int1 … uint4, through ml_dtypes' type after numpy's rint-and-clip (lowprec's integer
rule; ml_dtypes' own float → int cast truncates).

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

FORMATS = ["E4M3FN", "E5M2", "E2M1", "BF16", "E8M0", "E3M4", "E4M3IEEE", "E4M3B11FNUZ", "E5M3FNU",
           "p3109_k8p3se", "p3109_k8p1ue"]
CHUNK = 1 << 24
CASES = [f"{f}-{c}" for f in FORMATS for c in F.providers(f)]
ML_DTYPES_NEW = ["E3M4", "E4M3IEEE", "E4M3B11FNUZ", "E5M3FNU", "INT2", "UINT2", "UINT4", "INT1", "UINT1"]


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
    name, convention = case.rsplit("-", 1)
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


@pytest.mark.slow
@pytest.mark.parametrize("name", ML_DTYPES_NEW)
def test_every_float32_vs_ml_dtypes(name: str) -> None:
    """Issue 28: every float32 against ml_dtypes 0.7, as unsigned integers (LOWPREC_SWEEP_STRIDE /
    LOWPREC_SWEEP_ONLY=<name>-ml_dtypes as above)."""
    import ml_dtypes

    if not _selected(f"{name}-ml_dtypes"):
        pytest.skip("not in LOWPREC_SWEEP_ONLY")
    fmt = F.get_format(name)
    dt = getattr(ml_dtypes, fmt.dtype_name)
    pol = F.policy_for("ml_dtypes", fmt)
    stride = max(1, int(os.environ.get("LOWPREC_SWEEP_STRIDE", "1")))
    t0 = time.perf_counter()
    compared = 0
    for start in range(0, 1 << 32, CHUNK * stride):
        x = np.arange(start, start + CHUNK, dtype=np.uint64).astype(np.uint32).view(np.float32)
        with np.errstate(all="ignore"):
            if isinstance(fmt, F.IntFormat):
                x = x[~np.isnan(x)]  # lowprec's integer rule refuses NaN
                want = np.clip(np.rint(x), np.float32(fmt.min), np.float32(fmt.max)).astype(dt).view(np.uint8)
            else:
                want = x.astype(dt).view(np.uint8)
        got = F.encode(x, fmt, pol)
        bad = np.flatnonzero(got != want)
        assert bad.size == 0, (
            f"{bad.size} mismatches in chunk at {start:#010x}; first: bits "
            f"{int(x.view(np.uint32)[bad[0]]):#010x} ml_dtypes {int(want[bad[0]]):#x} lowprec {int(got[bad[0]]):#x}")
        compared += x.size
    print(f"\n{name} vs ml_dtypes {ml_dtypes.__version__}: {compared} patterns compared (stride {stride}) "
          f"in {time.perf_counter() - t0:.0f} s")
