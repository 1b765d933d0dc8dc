"""Encode/decode against real backends, code for code, as unsigned-integer views.

Vectors (gpu.vectors): every representable value, every midpoint between neighbours and one
float32 step either side, overflow thresholds, subnormal boundaries, ±0, ±Inf, NaN payloads, float32
subnormals, and 1M seeded random values over the whole range.
"""

from __future__ import annotations

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.gpu.vectors import all_inputs, structured_inputs
from tests.backends import (
    ML_DTYPES,
    ML_DTYPES_CASTS,
    TORCH,
    ml_dtypes_decode,
    ml_dtypes_encode,
    torch_decode,
    torch_encode,
)

#: the float formats ml_dtypes (numpy for FP16) has a type for: their decode is an oracle
SMALL_FLOATS = [f for f in F.FLOAT_FORMATS if f.bits <= 16 and f.name in ML_DTYPES]


def _mismatch_report(x: np.ndarray, want: np.ndarray, got: np.ndarray) -> str:
    bad = np.flatnonzero(want.astype(np.int64) != got.astype(np.int64))
    rows = [f"x={float(x[i])!r} bits=0x{x.astype(np.float32).view(np.uint32)[i]:08x} "
            f"backend={int(want[i]):#x} model={int(got[i]):#x}" for i in bad[:8]]
    return f"{bad.size} mismatches of {x.size}:\n" + "\n".join(rows)


# ---- decode: every code ------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", SMALL_FLOATS, ids=lambda f: f.name)
def test_decode_every_code_vs_ml_dtypes(fmt: F.FloatFormat) -> None:
    codes = np.arange(fmt.n_codes, dtype=np.uint16 if fmt.bits > 8 else np.uint8)
    want = ml_dtypes_decode(codes, fmt.name).view(np.uint32)
    got = F.decode(codes, fmt).view(np.uint32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(TORCH), ids=str)
def test_decode_every_code_vs_torch(name: str) -> None:
    fmt = F.get_format(name)
    codes = np.arange(fmt.n_codes, dtype=np.uint16 if fmt.bits > 8 else np.uint8)
    want = torch_decode(codes, name).view(np.uint32)
    got = F.decode(codes, fmt, nan_bits="torch").view(np.uint32)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", [F.INT8, F.INT4], ids=lambda f: f.name)
def test_decode_int_grids(fmt: F.IntFormat) -> None:
    codes = np.arange(fmt.n_codes, dtype=np.uint8)
    want = (codes.astype(np.int64) ^ (fmt.n_codes >> 1)) - (fmt.n_codes >> 1)  # two's complement
    np.testing.assert_array_equal(F.decode(codes, fmt), want.astype(np.float32))


@pytest.mark.parametrize("fmt", [f for f in F.FLOAT_FORMATS if f.bits <= 8] + [F.INT4, F.INT8],
                         ids=lambda f: f.name)
def test_scalar_decode_agrees_with_vector_decode(fmt: F.Format) -> None:
    codes = np.arange(fmt.n_codes)
    vec = F.decode(codes, fmt)
    sca = np.array([F.decode_scalar(int(c), fmt) for c in codes], np.float32)
    np.testing.assert_array_equal(np.isnan(vec), np.isnan(sca))
    ok = ~np.isnan(vec)
    np.testing.assert_array_equal(vec[ok].view(np.uint32), sca[ok].view(np.uint32))


# ---- encode: every format × convention with a real backend -------------------------------------

@pytest.mark.parametrize("name", sorted(ML_DTYPES_CASTS), ids=str)
def test_encode_vs_ml_dtypes(name: str) -> None:
    fmt = F.get_format(name)
    x = all_inputs(fmt, n_random=1_000_000, seed=1)
    policy = F.policy_for("ml_dtypes", fmt)
    want = ml_dtypes_encode(x, name)
    got = F.encode(x, fmt, policy)
    assert got.dtype == want.dtype
    assert np.array_equal(got, want), _mismatch_report(x, want, got)


@pytest.mark.parametrize("name", sorted(TORCH), ids=str)
def test_encode_vs_torch(name: str) -> None:
    fmt = F.get_format(name)
    x = all_inputs(fmt, n_random=1_000_000, seed=2)
    got = F.encode(x, fmt, F.policy_for("torch", fmt))
    want = torch_encode(x, name)
    assert np.array_equal(got, want), _mismatch_report(x, want, got)


@pytest.mark.parametrize("backend", ["ml_dtypes", "torch"])
@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "BF16", "FP16", "E8M0", "E2M1", "E4M3FNUZ"])
def test_encode_float64_inputs_vs_backends(backend: str, name: str) -> None:
    if backend == "torch" and name not in TORCH:
        pytest.skip(f"torch 2.13 has no CPU cast to {name}")
    fmt = F.get_format(name)
    x32 = all_inputs(fmt, n_random=200_000, seed=3)
    # float64 values between float32 neighbours expose double rounding through float32 (torch,
    # ml_dtypes < 0.7) or its absence (ml_dtypes 0.7)
    x = x32.astype(np.float64) * (1 + 2.0**-30)
    want = ml_dtypes_encode(x, name) if backend == "ml_dtypes" else torch_encode(x, name)
    got = F.encode(x, fmt, F.policy_for(backend, fmt))
    assert np.array_equal(got, want), _mismatch_report(x, want, got)


INT_GRIDS = [f for f in F.ALL_FORMATS if isinstance(f, F.IntFormat)]


@pytest.mark.parametrize("fmt", INT_GRIDS, ids=lambda f: f.name)
def test_int_grids_decode_and_encode_vs_ml_dtypes(fmt: F.IntFormat) -> None:
    """Every integer grid (ml_dtypes 0.7's int1/uint1/int2/uint2/uint4 too): every code decodes as
    ml_dtypes (numpy for INT8) reads it, and every value, midpoint ±1 float32 step and random value
    encodes (nearest-even, saturating: lowprec's integer rule) to the ml_dtypes code of numpy's
    rint-and-clip of it — ml_dtypes' own float → int cast truncates, so it is the layout oracle only."""
    dt = ML_DTYPES[fmt.name]
    codes = np.arange(fmt.n_codes, dtype=np.uint8)
    want = codes.view(dt).astype(np.float32)
    np.testing.assert_array_equal(F.decode(codes, fmt).view(np.uint32), want.view(np.uint32))
    x = all_inputs(fmt, n_random=200_000, seed=4)
    x = x[~np.isnan(x)]
    with np.errstate(invalid="ignore"):
        ref = np.clip(np.rint(x.astype(np.float64)), fmt.min, fmt.max).astype(dt).view(np.uint8)
    for conv in F.providers(fmt):
        got = F.encode(x, fmt, F.policy_for(conv, fmt))
        assert np.array_equal(got, ref), _mismatch_report(x, ref, got)


def test_int8_vs_numpy_rint_clip() -> None:
    x = np.concatenate([np.arange(-140, 140, 0.25), np.random.default_rng(0).uniform(-300, 300, 10000)])
    want = np.clip(np.rint(x), -128, 127).astype(np.int8).view(np.uint8)  # rint: ties to even
    np.testing.assert_array_equal(F.encode(x, F.INT8), want)
    want4 = (np.clip(np.rint(x), -8, 7).astype(np.int8).view(np.uint8)) & 0x0F
    np.testing.assert_array_equal(F.encode(x, F.INT4), want4)


# ---- facts stated in the issue -----------------------------------------------------------------

def _code(x: float, fmt: F.Format, conv: str) -> int:
    return int(F.encode(np.array([x], np.float32), fmt, F.policy_for(conv, fmt))[0])


def test_issue_facts_e4m3fn() -> None:
    for conv in ("ml_dtypes", "torch", "triton_nvidia", "ocp"):
        assert _code(464.0, F.E4M3FN, conv) == 0x7E  # 464 is the midpoint of 448 (even) and 480
    assert _code(465.0, F.E4M3FN, "ml_dtypes") == 0x7F  # NaN
    assert _code(465.0, F.E4M3FN, "torch") == 0x7E  # 448
    assert _code(np.inf, F.E4M3FN, "ml_dtypes") == 0x7F and _code(-np.inf, F.E4M3FN, "ml_dtypes") == 0xFF
    assert _code(np.inf, F.E4M3FN, "torch") == 0x7E and _code(-np.inf, F.E4M3FN, "torch") == 0xFE


def test_issue_facts_e5m2() -> None:
    assert _code(61440.0, F.E5M2, "ml_dtypes") == 0x7C == _code(61440.0, F.E5M2, "torch")  # Inf
    assert _code(61440.0, F.E5M2, "triton_nvidia") == 0x7B  # 57344, cvt.rn.satfinite


def test_issue_facts_e8m0() -> None:
    for conv in ("ml_dtypes", "torch"):
        assert _code(3.0, F.E8M0, conv) == 127 + 2  # 3 → 4: the tie goes up, not to even
        assert _code(0.75, F.E8M0, conv) == 127  # 0.75 → 1
    assert _code(0.0, F.E8M0, "ml_dtypes") == 0xFF and _code(0.0, F.E8M0, "torch") == 0x00
    assert _code(-1.0, F.E8M0, "ml_dtypes") == 0xFF and _code(-1.0, F.E8M0, "torch") == 127


def test_issue_facts_e2m1() -> None:
    x = np.array([0.25, 1.25, 2.5, 5.0, 6.5, 1e9, np.inf, -np.inf], np.float32)
    got = F.decode(F.encode(x, F.E2M1, F.policy_for("ml_dtypes", F.E2M1)), F.E2M1)
    np.testing.assert_array_equal(got, [0.0, 1.0, 2.0, 4.0, 6.0, 6.0, 6.0, -6.0])


def test_float64_is_rounded_once_by_default() -> None:
    # 1 + 2^-8 + 2^-40 lies just above the BF16 midpoint of 1 and 1 + 2^-7: exact rounding goes up,
    # but rounding to float32 first lands on the midpoint, which ties to even (1.0)
    x = np.array([1 + 2.0**-8 + 2.0**-40])
    assert int(F.encode(x, F.BF16)[0]) == 0x3F81
    assert int(F.encode(x, F.BF16, F.policy_for("torch", F.BF16))[0]) == 0x3F80
    assert int(F.encode(x, F.BF16, F.policy_for("ml_dtypes", F.BF16, version="0.6.0"))[0]) == 0x3F80
    assert int(F.encode(x, F.BF16, F.policy_for("ml_dtypes", F.BF16, version="0.7.0"))[0]) == 0x3F81


# ---- shapes, dtypes, bad input -------------------------------------------------------------------

def test_shapes_are_kept() -> None:
    assert F.encode(np.float32(1.5), F.E4M3FN).shape == ()
    assert F.encode(np.zeros((0, 3), np.float32), F.E4M3FN).shape == (0, 3)
    x = np.arange(24, dtype=np.float64).reshape(2, 3, 4)[:, ::2, ::-1]  # non-contiguous
    codes = F.encode(x, F.E5M2)
    assert codes.shape == x.shape and codes.dtype == np.uint8
    np.testing.assert_array_equal(codes, F.encode(np.ascontiguousarray(x), F.E5M2))
    assert F.encode([1.0, 2.0], "bf16").dtype == np.uint16
    assert F.encode(np.array([1.0], np.float32), F.FP32).dtype == np.uint32
    assert F.quantize([0.3], "E2M1").dtype == np.float32


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown format"):
        F.encode([1.0], "E9M9")
    with pytest.raises(TypeError, match="complex"):
        F.encode(np.array([1 + 2j]), F.E4M3FN)
    with pytest.raises(TypeError, match="object|expected real"):
        F.encode(np.array([object()]), F.E4M3FN)
    with pytest.raises(TypeError, match="expected real"):
        F.encode(np.array(["1.0"]), F.E4M3FN)
    with pytest.raises(ValueError, match="out of range"):
        F.decode(np.array([16]), F.E2M1)
    with pytest.raises(ValueError, match="out of range"):
        F.decode(np.array([-1]), F.E4M3FN)
    with pytest.raises(TypeError, match="integer"):
        F.decode(np.array([1.0]), F.E4M3FN)
    with pytest.raises(ValueError, match="NaN cannot be encoded in E2M1"):
        F.encode(np.array([1.0, np.nan], np.float32), F.E2M1)
    with pytest.raises(ValueError, match="zero cannot be encoded in E8M0"):
        F.encode(np.array([0.0]), F.E8M0)
    with pytest.raises(ValueError, match="negative value"):
        F.encode(np.array([-2.0]), F.E8M0)
    with pytest.raises(ValueError, match="nonfinite"):
        F.encode([1.0], F.E2M1, F.CastPolicy(overflow="nonfinite"))
    with pytest.raises(ValueError, match="rounding='sideways'"):
        F.CastPolicy(rounding="sideways")
    with pytest.raises(TypeError, match="rng"):
        F.encode([1.0], F.E4M3FN, F.CastPolicy(rounding="stochastic"))
    with pytest.raises(ValueError, match="unknown convention"):
        F.policy_for("jax", F.E4M3FN)


def test_nan_rules_for_nan_less_formats() -> None:
    x = np.array([np.nan, -np.nan], np.float32)
    pol = F.CastPolicy(overflow="saturate")
    assert F.encode(x, F.E2M1, pol.with_(nan_to_finite="zero")).tolist() == [0, 0]
    assert F.encode(x, F.E2M1, pol.with_(nan_to_finite="signed_max")).tolist() == [0x7, 0xF]
    assert F.encode(x, F.E2M1, pol.with_(nan_to_finite="negated_zero")).tolist() == [0x8, 0x0]


def test_pack_unpack_fp4() -> None:
    codes = np.array([[0x1, 0xF, 0x7, 0x8]], np.uint8)
    packed = F.pack_fp4(codes)
    assert packed.tolist() == [[0xF1, 0x87]]  # even element in the low nibble
    np.testing.assert_array_equal(F.unpack_fp4(packed), codes)
    with pytest.raises(ValueError, match=r"even-length last axis, got shape \(3,\)"):
        F.pack_fp4(np.array([1, 2, 3], np.uint8))
    with pytest.raises(ValueError, match=r"FP4 codes must be in 0\.\.15"):
        F.pack_fp4(np.array([16, 1], np.uint8))


def test_structured_vectors_cover_midpoints() -> None:
    x = structured_inputs(F.E4M3FN)
    assert np.any(x == 464.0) and np.any(x == np.nextafter(np.float32(464), np.float32(0)))
    assert np.isnan(x).sum() >= 5 and np.any(np.isinf(x))


# ---- the readable scalar codec against the same oracles ----------------------------------------

@pytest.mark.parametrize("backend", ["ml_dtypes", "torch"])
@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "E2M1", "E3M2", "E2M3", "E8M0", "E4M3FNUZ", "E5M2FNUZ", "BF16", "FP16"])
def test_scalar_encode_vs_backends(backend: str, name: str) -> None:
    if backend == "torch" and name not in TORCH:
        pytest.skip(f"torch 2.13 has no CPU cast to {name}")
    fmt = F.get_format(name)
    x = structured_inputs(fmt)
    x = x[~np.isnan(x)]  # the scalar codec takes NaN as payload-free; payload rules are the array codec's
    x = np.random.default_rng(5).choice(x, min(x.size, 2500), replace=False)
    want = ml_dtypes_encode(x, name) if backend == "ml_dtypes" else torch_encode(x, name)
    pol = F.policy_for(backend, fmt)
    got = np.array([F.encode_scalar(float(v), fmt, pol) for v in x])
    assert np.array_equal(got, want.astype(np.int64)), _mismatch_report(x, want, got)
