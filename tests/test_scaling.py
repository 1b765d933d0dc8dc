"""Scales, granularities, scaled casts, error metrics and the grouping studies, against formulas
written here and exact rational rounding on grids decoded by ml_dtypes."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations.studies import grouping as G
from lowprec.simulations.studies import hadamard as H
from lowprec.simulations import scaling as S
from lowprec.simulations.scaling.granularity import group_amax, parse_granularity
from lowprec.simulations.scaling.metrics import error_metrics
from lowprec.simulations.scaling.scales import decode_scale, encode_scale
from tests.scaling_oracles import half_gap_at, rne_code

F_E4M3 = 448.0
F_E5M2 = 57344.0


# ---- scales ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt, big_f", [("E4M3FN", F_E4M3), ("E5M2", F_E5M2), ("E2M1", 6.0)])
def test_scales_formula(fmt: str, big_f: float) -> None:
    amax = np.array([0.5, 3.0, 957.0, 1e-30, 7e37])
    for margin in (0, 1, 3):
        enc = encode_scale(amax, fmt, margin)
        dec = decode_scale(amax, fmt, margin)
        for a, e, d in zip(amax, enc, dec):
            assert e == float(Fraction(big_f) / Fraction(a) / 2**margin)
            assert d == float(Fraction(a) * 2**margin / Fraction(big_f))
    assert encode_scale(2.0, fmt, 1) == encode_scale(2.0, fmt, 0) / 2  # margin halves the scale


def test_safe_scale_and_bad_amax() -> None:
    out = encode_scale(np.array([0.0, -0.0, np.inf, np.nan]), "E4M3FN")
    assert out.tolist() == [1.0, 1.0, 1.0, 1.0]
    assert decode_scale(0.0, "E4M3FN") == 1.0
    with pytest.raises(ValueError, match="negative"):
        encode_scale(-1.0, "E4M3FN")
    with pytest.raises(ValueError, match="margin"):
        encode_scale(1.0, "E4M3FN", -1)
    with pytest.raises(TypeError, match="margin"):
        encode_scale(1.0, "E4M3FN", 0.5)  # type: ignore[arg-type]


# ---- granularities -----------------------------------------------------------------------------


def loop_amax(x: np.ndarray, spec: str) -> np.ndarray:
    m, n = x.shape
    if spec == "tensor":
        return np.array(max(abs(float(v)) for v in x.ravel()))
    if spec == "row":
        return np.array([max(abs(float(v)) for v in x[i]) for i in range(m)])
    if spec == "column":
        return np.array([max(abs(float(x[i, j])) for i in range(m)) for j in range(n)])
    if spec == "block8":
        return np.array([[max(abs(float(v)) for v in x[i, b * 8:(b + 1) * 8]) for b in range(n // 8)] for i in range(m)])
    if spec == "block4@0":  # grid: the other axis first, then the blocks along axis 0
        return np.array([[max(abs(float(x[i, j])) for i in range(b * 4, (b + 1) * 4)) for b in range(m // 4)]
                         for j in range(n)])
    if spec == "block4x8":
        return np.array([[max(abs(float(v)) for v in x[r * 4:(r + 1) * 4, c * 8:(c + 1) * 8].ravel())
                          for c in range(n // 8)] for r in range(m // 4)])
    raise AssertionError(spec)


@pytest.mark.parametrize("spec", ["tensor", "row", "column", "block8", "block4@0", "block4x8"])
def test_group_amax_against_loop(spec: str) -> None:
    x = np.random.default_rng(0).standard_normal((8, 16)).astype(np.float32)
    x[3, 5] = -40.0
    np.testing.assert_array_equal(group_amax(x, spec), loop_amax(x, spec))


@pytest.mark.parametrize("spec", ["tensor", "row", "column", "block8", "block4@0", "block4x8"])
def test_groups_round_trip(spec: str) -> None:
    g = parse_granularity(spec)
    x = np.arange(8 * 16, dtype=np.float32).reshape(8, 16)
    np.testing.assert_array_equal(g.from_groups(g.to_groups(x), x.shape), x)


@pytest.mark.parametrize("spec, shape, match", [
    ("block5", (4, 16), "does not divide"),
    ("block4x3", (8, 16), "do not divide"),
    ("block4x4", (4, 4, 4), "2-D"),
    ("block4@2", (4, 16), "out of range"),
    ("blocky", (4, 16), "not one of"),
    ("diagonal", (4, 16), "not one of"),
    ("block0", (4, 16), "positive integer"),
])
def test_bad_granularity(spec: str, shape: tuple, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        S.quantize_scaled(np.ones(shape, np.float32), "E4M3FN", spec)


# ---- scaled casts --------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["E4M3FN", "E5M2", "E2M1"])
@pytest.mark.parametrize("spec", ["tensor", "row", "block8", "block4x8"])
def test_quantize_scaled_against_oracle(fmt: str, spec: str) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_t(3, size=(8, 16)) * 10.0 ** rng.integers(-3, 3, size=(8, 1))).astype(np.float32)
    x[2, 3] = 0.0
    st = S.quantize_scaled(x, fmt, spec)
    big_f = {"E4M3FN": F_E4M3, "E5M2": F_E5M2, "E2M1": 6.0}[fmt]
    amax = loop_amax(x, spec)
    g = parse_granularity(spec)
    enc_want = np.float32(big_f / amax)  # F / amax, stored as float32
    np.testing.assert_array_equal(st.encode_scales.astype(np.float32).view(np.uint32),
                                  np.asarray(enc_want, np.float32).view(np.uint32))
    groups = g.to_groups(x)
    codes = g.to_groups(st.codes)
    deq = g.to_groups(st.dequantize())
    for k, e in enumerate(np.asarray(enc_want).reshape(-1)):
        e_q = Fraction(float(e))
        for i, v in enumerate(groups[k]):
            q = Fraction(float(v)) * e_q
            assert int(codes[k, i]) == rne_code(q, fmt, negative=bool(np.signbit(v)))
            # dequantize(quantize(x)) within the format's half-gap, in the group's scale
            assert Fraction(abs(float(deq[k, i]) - float(v))) <= half_gap_at(abs(q), fmt) / e_q * (1 + Fraction(1, 2**40))


def test_scale_format_e8m0_rounds_up() -> None:
    x = np.random.default_rng(2).standard_normal((4, 64)).astype(np.float32) * 3
    st = S.quantize_scaled(x, "E4M3FN", "block32", scale_format="E8M0")
    amax = group_amax(x, "block32")
    assert st.scale_codes is not None
    for a, d, c in zip(amax.ravel(), st.decode_scales.ravel(), st.scale_codes.ravel()):
        k = math.ceil(math.log2(a / F_E4M3))  # smallest power of two ≥ amax / F
        assert d == 2.0**k and int(c) == k + 127
    assert S.error_report(x, st).clipped_fraction == 0.0
    assert st.bits_per_element == 8 + 8 / 32


def test_bits_per_element() -> None:
    x = np.ones((16, 64), np.float32)
    assert S.quantize_scaled(x, "E4M3FN", "tensor").bits_per_element == 8 + 32 / 1024
    assert S.quantize_scaled(x, "E4M3FN", "row").bits_per_element == 8 + 32 / 64
    assert S.quantize_scaled(x, "E4M3FN", "column").bits_per_element == 8 + 32 / 16
    assert S.quantize_scaled(x, "E2M1", "block16", scale_format="E4M3FN").bits_per_element == 4.5


def test_zero_and_nonfinite_groups() -> None:
    x = np.ones((3, 8), np.float32)
    x[0] = 0.0
    st = S.quantize_scaled(x, "E4M3FN", "row")
    assert st.encode_scales[0] == 1.0 and (st.codes[0] == 0).all()
    y = x.copy()
    y[1, 2] = np.inf
    st2 = S.quantize_scaled(y, "E4M3FN", "row")
    assert st2.encode_scales[1] == 1.0 and int(st2.codes[1, 2]) == 0x7E  # Inf saturates to 448
    assert st2.encode_scales[2] == np.float32(F_E4M3)


# ---- error metrics -------------------------------------------------------------------------------


def test_error_metrics_formulas() -> None:
    x = np.array([1.0, 2.0, 3.0, 4.0, 0.5, 0.0, -2.0, 8.0])
    xh = np.array([1.0, 2.0, 3.0, 5.0, 0.0, 0.0, -2.5, 8.0])
    clipped = np.array([0, 0, 0, 1, 0, 0, 0, 0], bool)
    r = error_metrics(x, xh, clipped, "block4")
    sig, err = sum(v * v for v in x), sum((a - b) ** 2 for a, b in zip(x, xh))
    assert r.rms_rel_error == pytest.approx(math.sqrt(err / sig), rel=1e-15)
    assert r.sqnr_db == pytest.approx(10 * math.log10(sig / err), rel=1e-15)
    assert r.max_abs_error == 1.0
    assert r.clipped_fraction == 1 / 8
    assert r.flushed_fraction == 1 / 8  # 0.5 → 0; the zero input is not "flushed"
    assert r.group_rms_rel_error.tolist() == pytest.approx([math.sqrt(1 / 30), math.sqrt((0.25 + 0.25) / (0.25 + 4 + 64))])
    assert r.group_clipped_fraction.tolist() == [0.25, 0.0]
    assert r.group_flushed_fraction.tolist() == [0.0, 0.25]
    exact = error_metrics(x, x)
    assert exact.rms_rel_error == 0.0 and exact.sqnr_db == math.inf


def test_clipped_count_fixed_scale() -> None:
    x = np.random.default_rng(3).standard_normal(4096).astype(np.float32) * 300
    st = S.quantize_scaled(x, "E4M3FN", "tensor", amax=F_E4M3)  # encode scale 1
    rep = S.error_report(x, st)
    # E4M3FN: 448's bin ends at 464 (the tie 464 goes to 448, whose code is even)
    assert rep.clipped_fraction == np.count_nonzero(np.abs(x) > 464) / x.size
    assert rep.clipped_fraction > 0


# ---- studies --------------------------------------------------------------------------------------


def test_outlier_study() -> None:
    s = G.outlier_study("INT8", (64, 64), 1000.0, (21, 12), seed=0)
    by = {e.granularity: e for e in s.entries}
    assert by["tensor"].groups_affected_fraction == 1.0
    assert by["row"].groups_affected_fraction == 1 / 64
    assert by["block32"].groups_affected_fraction == 1 / 128
    assert by["block16x16"].groups_affected_fraction == 1 / 16
    # INT8 sized for 1000 has a step of 1000/127 ≈ 7.9: N(0, 1) neighbours of the outlier round to 0
    for e in s.entries:
        assert e.outlier_group_rms_rel_error > 0.9
    # the other rows keep the resolution of an outlier-free per-tensor cast (same order of error)
    assert by["row"].other_groups_rms_rel_error < 2 * s.baseline_rms_rel_error
    assert by["block32"].ordinary_rms_rel_error < by["row"].ordinary_rms_rel_error < by["tensor"].ordinary_rms_rel_error
    strictjson.loads(strictjson.dumps(s.to_dict()))


def test_scale_choice_study() -> None:
    mags = [1e-9, 1.0, 1e4]
    s = G.scale_choice_study(("E4M3FN", "E5M2"), mags, n=512)
    e4 = s.rms_rel_error_fixed["E4M3FN"]
    assert s.flushed_fixed["E4M3FN"][0] == 1.0 and e4[0] == 1.0  # 1e-9 · N(0,1) all below 2^-10
    assert s.clipped_fixed["E4M3FN"][2] > 0.5  # 1e4 · N(0,1) mostly above 464
    assert s.clipped_fixed["E5M2"][2] == 0.0  # E5M2 reaches 57344
    amax_curve = s.rms_rel_error_amax["E4M3FN"]
    assert max(amax_curve) < 0.05  # the amax scale adapts at every magnitude
    strictjson.loads(strictjson.dumps(s.to_dict()))


def _e4m3_blocks_oracle(x: np.ndarray, axis: int, block: int) -> np.ndarray:
    """Blocks of `block` along `axis`, encode scale float32(448 / block amax), product in float64,
    saturating ml_dtypes E4M3FN cast, decoded and divided by the scale (float64)."""
    import ml_dtypes

    xt = np.moveaxis(np.asarray(x, np.float64), axis, -1)
    g = xt.reshape(*xt.shape[:-1], -1, block)
    enc = np.asarray(F_E4M3 / np.abs(g).max(axis=-1, keepdims=True), np.float32).astype(np.float64)
    q = np.clip(g * enc, -F_E4M3, F_E4M3).astype(ml_dtypes.float8_e4m3fn).astype(np.float64) / enc
    return np.moveaxis(q.reshape(xt.shape), -1, axis)


def test_transpose_study() -> None:
    t = G.transpose_study("E4M3FN", (64, 64), 32, seed=0)
    assert t.rms_rel_error_col_from_rows > t.rms_rel_error_col_from_source  # two roundings
    assert 0 < t.codes_differ_fraction < 1
    strictjson.loads(strictjson.dumps(t.to_dict()))
    # the three errors recomputed with ml_dtypes on the study's own data (Student t, 3 dof)
    x = np.random.default_rng(0).standard_t(3, size=(64, 64)).astype(np.float32).astype(np.float64)

    def rms_rel(xh: np.ndarray) -> float:
        return float(np.sqrt(np.sum((xh - x) ** 2) / np.sum(x * x)))

    rows = _e4m3_blocks_oracle(x, 1, 32)
    # rel 1e-5: the study divides by the scale where the oracle may multiply by its reciprocal
    # (one float rounding per element, ~1e-7 of a value whose error is ~1e-2 of it)
    assert t.rms_rel_error_row == pytest.approx(rms_rel(rows), rel=1e-5)
    assert t.rms_rel_error_col_from_source == pytest.approx(rms_rel(_e4m3_blocks_oracle(x, 0, 32)), rel=1e-5)
    assert t.rms_rel_error_col_from_rows == pytest.approx(rms_rel(_e4m3_blocks_oracle(rows, 0, 32)), rel=1e-5)
    assert t.extra_rms_rel_error == pytest.approx(t.rms_rel_error_col_from_rows - t.rms_rel_error_col_from_source)


# ---- Hadamard -------------------------------------------------------------------------------------


def test_sylvester_and_random_hadamard() -> None:
    h2 = np.array([[1, 1], [1, -1]])
    np.testing.assert_array_equal(H.sylvester(4), np.kron(h2, h2))
    signs = [1, -1] * 8
    h = H.random_hadamard(16, signs=signs)
    assert set(np.abs(h).ravel().tolist()) == {0.25}
    np.testing.assert_array_equal(h @ h.T, np.eye(16))  # entries ±1/4: the products are exact
    # the signs on the inputs: H = diag(d) · S_16 / 4, so row i of S_16 carries d_i
    np.testing.assert_array_equal(h, np.array(signs)[:, None] * np.kron(np.kron(h2, h2), np.kron(h2, h2)) / 4)
    with pytest.raises(ValueError, match="power of two"):
        H.sylvester(12)
    with pytest.raises(ValueError, match="signs"):
        H.random_hadamard(16, signs=[1, 0] * 8)


def test_hadamard_study() -> None:
    s = H.hadamard_study((16, 64), outlier=100.0, seed=1)
    assert s.gemm_max_abs_diff < 1e-9  # (A H)(Hᵀ B) = A B before quantization
    assert s.block_crest_before > 3.5 and s.block_crest_after < 2.0  # the outlier is spread
    strictjson.loads(strictjson.dumps(s.to_dict()))
