"""`gpu/gemm_checks.py` without a GPU: the vectors hold FP8 values (ml_dtypes round trip) of the
kind they name; the comparison finds the promotion interval a backend's bits come from (a backend
that runs the model promoted every 64 is reported as matching "64" and nothing else, one that
differs in one bit matches nothing); the model's "none" candidate of an instruction-sized case is
MMA-Sim's D; the expectations a GPU run is held to; the CPU dry run (torch CPU `_scaled_mm` and the
Triton interpreter) records every setting without judging it (the device script's dry run:
tests/test_gpu_kernels.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from lowprec.gpu import gemm_checks as gc
from lowprec.simulations import gemm
from tests.gemm_oracle import mmasim_available, mmasim_mma

DTYPES = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2}


@pytest.mark.parametrize("case", gc.CASES, ids=lambda c: c.name)
def test_vectors_are_fp8_values_of_their_kind(case: gc.Case) -> None:
    if case.k > 4096:
        pytest.skip("the long case's operands are checked at K = 4096")
    a, b = case.operands()
    for x, fmt in ((a, case.a_fmt), (b, case.b_fmt)):
        back = x.astype(DTYPES[fmt]).astype(np.float64)
        assert np.array_equal(back, x, equal_nan=True), fmt
    exact = a @ b
    if case.kind == "positive":
        assert (a >= 0).all() and (b >= 0).all() and (exact > 0).all()
    if case.kind == "cancellation":
        assert not np.any(exact)
    if case.kind == "nan":
        assert np.isnan(a[0, 0]) and np.isnan(exact[0]).all() and not np.isnan(exact[1:]).any()
    if case.kind == "subnormal":
        assert (np.abs(a) < ml_dtypes.finfo(DTYPES[case.a_fmt]).smallest_normal).all()


def test_the_comparison_names_the_interval_the_bits_come_from() -> None:
    case = gc.Case("t", 64, 8, 256, "E4M3FN", "E4M3FN", "positive", 5)
    a, b = case.operands()
    cands = gc.model_candidates("hopper", case, a, b)
    assert list(cands) == ["none", "32", "64", "128"]
    fake = gemm.matmul(a, b, arch="hopper", instruction="wgmma.m64n8k32.f32.e4m3.e4m3", promote_every=64,
                       reference=False).d.view(np.uint32)
    res = gc.compare(fake, cands)
    assert res["matches"] == ["64"] and res["mismatches"]["64"] == 0 and res["mismatches"]["none"] > 0
    off = fake.copy()
    off[3, 4] ^= 1  # one bit of one output
    res = gc.compare(off, cands)
    assert res["matches"] == [] and res["mismatches"]["64"] == 1


@pytest.mark.skipif(not mmasim_available(), reason="mmasim (the test extra) is not installed")
@pytest.mark.parametrize("case", [c for c in gc.CASES if c.k == 32], ids=lambda c: c.name)
def test_instruction_sized_candidates_are_mmasims(case: gc.Case) -> None:
    a, b = case.operands()
    cands = gc.model_candidates("hopper", case, a, b)
    name = gemm.dense_instruction("hopper", case.a_fmt, case.b_fmt)
    assert list(cands) == ["none"]
    assert np.array_equal(cands["none"], mmasim_mma("hopper", name, a, b, np.zeros((case.m, case.n))))


def test_what_a_gpu_run_is_held_to() -> None:
    short = gc.Case("s", 64, 8, 32, "E4M3FN", "E4M3FN", "normal")
    long = gc.Case("l", 64, 8, 4096, "E4M3FN", "E4M3FN", "normal")
    assert all(gc.expected_match(s, short) == "none" for s in ("scaled_mm fast_accum=False",
                                                               "triton max_num_imprecise_acc=64"))
    assert gc.expected_match("scaled_mm fast_accum=True", long) == "none"
    assert gc.expected_match("scaled_mm fast_accum=False", long) is None  # measured, not assumed
    assert gc.expected_match("triton max_num_imprecise_acc=None", long) == "none"
    assert gc.expected_match("triton max_num_imprecise_acc=128", long) == "128"
    assert gc.ARCH_OF_CAPABILITY[(9, 0)] == "hopper" and gc.ARCH_OF_CAPABILITY[(10, 0)] == "blackwell"


def test_the_cpu_dry_run_records_without_judging(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    out = tmp_path / "gemm.json"
    r = subprocess.run([sys.executable, "-m", "lowprec.gpu.gemm_checks", "--dry-run", "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    report = json.loads(out.read_text())
    assert report["oracle"] is False and report["ok"] is True and report["arch"] == "hopper"
    assert set(report["settings"]) == {"scaled_mm fast_accum=True", "scaled_mm fast_accum=False",
                                       "triton max_num_imprecise_acc=None", "triton max_num_imprecise_acc=32",
                                       "triton max_num_imprecise_acc=64", "triton max_num_imprecise_acc=128"}
    ran = [c for c in report["checks"] if "matches" in c]
    assert ran and all(c["ok"] is None for c in ran)
    assert {c["k"] for c in ran} == {32, 256}
    assert all("error" not in c for c in report["checks"])
    assert "not an oracle" in r.stdout


@pytest.mark.gpu
def test_on_a_gpu_every_expectation_holds() -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA (torch.cuda.is_available() is False)")
    report = gc.run(quick=True)
    bad = [c for c in report["checks"] if c.get("ok") is False or "error" in c]
    assert report["oracle"] and not bad, bad
