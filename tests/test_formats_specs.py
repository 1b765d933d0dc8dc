"""Format properties against ml_dtypes.finfo / torch.finfo, and the registry's names and errors."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec import formats as F
from tests.backends import ML_DTYPES, TORCH

FLOATS_WITH_ORACLE = [f for f in F.FLOAT_FORMATS if f.name in ML_DTYPES]


@pytest.mark.parametrize("fmt", FLOATS_WITH_ORACLE, ids=lambda f: f.name)
def test_finfo_matches_ml_dtypes(fmt: F.FloatFormat) -> None:
    fi = ml_dtypes.finfo(ML_DTYPES[fmt.name]) if fmt.name != "FP16" else np.finfo(np.float16)
    assert fmt.max == float(fi.max)
    assert fmt.smallest_normal == float(fi.smallest_normal)
    assert fmt.smallest_subnormal == float(fi.smallest_subnormal)
    assert fmt.eps == float(fi.eps)
    assert fmt.bits == fi.bits


@pytest.mark.parametrize("name", sorted(TORCH), ids=str)
def test_finfo_matches_torch(name: str) -> None:
    fmt, fi = F.get_format(name), torch.finfo(TORCH[name])
    assert fmt.max == fi.max
    assert fmt.smallest_normal == fi.smallest_normal
    if fmt.name.endswith("FNUZ"):
        # torch 2.13 reports eps = 2^-(m+1) for the fnuz types (0.125 for E5M2FNUZ, whose gap at 1 is
        # 0.25); ml_dtypes and the decoded code table agree on 2^-m, checked here instead.
        one = int(F.encode(np.array([1.0]), fmt)[0])
        assert float(F.decode(np.array([one + 1]), fmt)[0]) - 1.0 == fmt.eps
    else:
        assert fmt.eps == fi.eps


def test_fp32_matches_numpy() -> None:
    fi = np.finfo(np.float32)
    assert (F.FP32.max, F.FP32.smallest_normal, F.FP32.smallest_subnormal, F.FP32.eps) == (
        float(fi.max), float(fi.smallest_normal), float(fi.smallest_subnormal), float(fi.eps))


def test_known_layouts() -> None:
    # OCP OFP8: E4M3FN max = 1.75 × 2^8, E5M2 max = 1.75 × 2^15; MX v1.0: E8M0 spans 2^-127..2^127
    assert F.E4M3FN.max == float.fromhex("0x1.cp8") and F.E4M3FN.emax == 8 and F.E4M3FN.emin == -6
    assert F.E5M2.max == float.fromhex("0x1.cp15") and F.E5M2.emax == 15 and F.E5M2.emin == -14
    assert F.E8M0.max == 2.0**127 and F.E8M0.smallest_normal == 2.0**-127 and F.E8M0.n_codes == 256
    assert F.E2M1.max == 6.0 and F.E2M1.smallest_subnormal == 0.5 and F.E2M1.bits == 4
    assert F.INT8.max == 127 and F.INT8.min == -128 and F.INT4.max == 7 and F.INT4.min == -8


@pytest.mark.parametrize("alias,name", [
    ("e4m3fn", "E4M3FN"), ("float8_e4m3fn", "E4M3FN"), ("FP8_E4M3", "E4M3FN"), ("bfloat16", "BF16"),
    ("bf16", "BF16"), ("float8_e5m2", "E5M2"), ("fp4", "E2M1"), ("float4_e2m1fn", "E2M1"),
    ("float8_e8m0fnu", "E8M0"), ("half", "FP16"), ("float32", "FP32"), ("int8", "INT8"),
    (" E3M2 ", "E3M2"), ("float6_e2m3fn", "E2M3"), ("float8_e4m3fnuz", "E4M3FNUZ"),
])
def test_aliases(alias: str, name: str) -> None:
    assert F.get_format(alias).name == name


def test_unknown_format_lists_known_names() -> None:
    with pytest.raises(ValueError, match="E4M3FN.*E5M2"):
        F.get_format("e4m4")
    with pytest.raises(TypeError, match="format must be a name or a FloatFormat, got int"):
        F.get_format(3)  # type: ignore[arg-type]


def test_constants_are_registered_once() -> None:
    names = F.format_names()
    # the 13 core formats, ml_dtypes 0.7's nine others, the 30 P3109 binary8 formats (issue 28)
    assert len(names) == len(set(names)) == 13 + 9 + 30
    assert [f.name for f in F.CORE_FORMATS] == names[:13]


@pytest.mark.parametrize("alias,name", [
    ("float8_e4m3", "E4M3IEEE"), ("E4M3", "E4M3FN"), ("e4m3", "E4M3FN"), ("float8_e3m4", "E3M4"),
    ("float8_e4m3b11fnuz", "E4M3B11FNUZ"), ("float8_e5m3fnu", "E5M3FNU"), ("int2", "INT2"),
    ("uint2", "UINT2"), ("uint4", "UINT4"), ("int1", "INT1"), ("uint1", "UINT1"),
    ("p3109_k8p3se", "p3109_k8p3se"), ("P3109_K8P3SE", "p3109_k8p3se"), (" p3109_K8p8UF ", "p3109_k8p8uf"),
])
def test_new_names_resolve(alias: str, name: str) -> None:
    """Issue 28: each ml_dtypes 0.7 dtype name means that dtype; the short name E4M3 keeps meaning
    OCP E4M3FN; P3109 names are gfloat's, case-insensitive."""
    assert F.get_format(alias).name == name


@pytest.mark.parametrize("name, match", [
    ("p3109_k8p8se", r"precision 8 is not in 1\.\.7 \(signed formats\)"),
    ("p3109_k8p0ue", r"precision 0 is not in 1\.\.8"),
    ("p3109_k16p5se", "P3109 binary8 family"),
])
def test_p3109_names_outside_the_family_are_refused(name: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        F.get_format(name)
