"""MX and NVFP4 block quantization against the formulas written here, with element codes from exact
rational rounding on grids decoded by ml_dtypes (tests/scaling_oracles.py); codes compared as
unsigned integers, dequantized values as float32 bit patterns."""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from lowprec import strictjson
from lowprec.config import ConfigError
from lowprec.simulations.blocks import records as BF
from lowprec.simulations import blocks as B
from tests.scaling_oracles import DTYPES, code_value, fmt_max, positive_grid, rne_code

RULES = ("floor", "ceil", "rceil", "even")
ELEMS = ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")
F32_TINY_SUB = float(np.float32(2.0**-149))


def floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def oracle_exponent(amax: Fraction, name: str, rule: str) -> int:
    """The shared exponent X by each rule's formula (OCP floor; ceil; cuBLAS rceil; torchao even)."""
    if amax == 0:
        return -127
    big_f = fmt_max(name)
    emax = floor_log2(big_f)
    e = floor_log2(amax)
    if rule == "floor":
        x = e - emax
    elif rule == "ceil":
        x = (e if amax == Fraction(2) ** e else e + 1) - emax
    elif rule == "rceil":  # smallest X with F · 2^X ≥ amax
        x = e - emax - 1
        while big_f * Fraction(2) ** x < amax:
            x += 1
    else:  # even: amax rounded (half away) to the element's mantissa width, then floor
        nm = ml_dtypes.finfo(DTYPES[name][0]).nmant
        m = amax / Fraction(2) ** e
        mr = Fraction(math.floor(m * 2**nm + Fraction(1, 2)), 2**nm)
        x = e + (1 if mr >= 2 else 0) - emax
    return max(-127, min(127, x))


def adversarial_blocks(name: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    vals, _ = positive_grid(name)
    big_f = float(fmt_max(name))
    mids = [float((vals[i] + vals[i + 1]) / 2) for i in range(min(31, len(vals) - 1))]
    mids = (mids * 32)[:31] + [big_f]
    rows = [
        rng.standard_normal(32),
        rng.standard_normal(32) * 1e-3,
        rng.standard_normal(32) * 1e4,
        np.r_[957.0, rng.standard_normal(31)],
        2.0 ** rng.integers(-20, 20, size=32) * rng.choice([-1.0, 1.0], size=32),
        np.r_[big_f * 2.0**5, rng.standard_normal(31) * big_f],
        np.r_[np.nextafter(np.float32(big_f * 4), np.float32(np.inf)), rng.standard_normal(31)],
        rng.standard_normal(32) * 1e-40,  # float32 subnormals
        np.r_[3e38, rng.standard_normal(31) * 1e30],
        np.r_[1e6, rng.standard_normal(31) * 1e-6],
        np.r_[-0.0, 0.0, rng.standard_normal(30)],
        np.array(mids) * rng.choice([-1.0, 1.0], size=32),
        np.r_[F32_TINY_SUB, np.zeros(31)],
    ]
    return np.array(rows).astype(np.float32)


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("name", ELEMS)
@pytest.mark.usefixtures("each_codec_path")
def test_mx_against_formulas(name: str, rule: str) -> None:
    x = adversarial_blocks(name)
    t = B.quantize_mx(x, name, 32, rule)
    assert t.codes.dtype == np.uint8 and t.codes.shape == x.shape
    assert t.scale_codes.dtype == np.uint8 and t.scale_codes.shape == (x.shape[0], 1)
    want_codes = np.zeros(x.shape, np.uint8)
    want_scale = np.zeros((x.shape[0], 1), np.uint8)
    want_deq = np.zeros(x.shape, np.float32)
    for b in range(x.shape[0]):
        amax = max(Fraction(abs(float(v))) for v in x[b])
        xe = oracle_exponent(amax, name, rule)
        want_scale[b, 0] = xe + 127
        for i, v in enumerate(x[b]):
            c = rne_code(Fraction(float(v)) / Fraction(2) ** xe, name, negative=bool(np.signbit(v)))
            want_codes[b, i] = c
            with np.errstate(over="ignore"):  # 4 × 2^126 is beyond float32: both sides give inf
                want_deq[b, i] = np.float32(code_value(c, name) * 2.0**xe)
    np.testing.assert_array_equal(t.scale_codes.view(np.uint8), want_scale)
    np.testing.assert_array_equal(t.codes.view(np.uint8), want_codes)
    np.testing.assert_array_equal(t.dequantize().view(np.uint32), want_deq.view(np.uint32))


@pytest.mark.usefixtures("each_codec_path")
def test_worked_example_957() -> None:
    x = np.zeros(32, np.float32)
    x[5] = 957.0
    floor = B.quantize_mx(x, "E4M3FN", 32, "floor")
    rceil = B.quantize_mx(x, "E4M3FN", 32, "rceil")
    assert int(floor.scale_codes[0]) == 127 + 1  # 2^1: floor(log2 957) = 9, minus emax 8
    assert float(floor.dequantize()[5]) == 896.0  # 957 / 2 = 478.5 saturates to 448
    assert int(rceil.scale_codes[0]) == 127 + 2  # 957 / 448 = 2.14 rounds up to 4
    assert float(rceil.dequantize()[5]) == 960.0  # 239.25 → 240 (E4M3 step 16 there), × 4
    rows = {r["rule"]: r for r in B.mx_scale_rule_table()}
    assert rows["floor"]["decoded_amax"] == 896.0 and rows["rceil"]["decoded_amax"] == 960.0


@pytest.mark.usefixtures("each_codec_path")
def test_mx_zero_nan_inf_blocks() -> None:
    x = np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)
    x[0] = 0.0
    x[1, 3] = np.nan
    x[2, 7] = -np.inf
    t = B.quantize_mx(x, "E2M1", 32)
    assert t.scale_codes[:, 0].tolist()[:3] == [0x00, 0xFF, 0xFF]  # zero block: 2^-127; NaN/Inf: NaN
    assert (t.codes[:3] == 0).all()
    deq = t.dequantize()
    assert (deq[0] == 0).all() and np.isnan(deq[1]).all() and np.isnan(deq[2]).all()
    alone = B.quantize_mx(x[3:], "E2M1", 32)  # the ordinary block is unaffected by its neighbours
    np.testing.assert_array_equal(t.codes[3:], alone.codes)


@pytest.mark.usefixtures("each_codec_path")
def test_mx_axis_layout() -> None:
    """Blocks along axis 0 of a 3-D array: each block is the oracle's block of 32 along that axis."""
    x = np.random.default_rng(1).standard_normal((64, 3, 2)).astype(np.float32) * 10
    t = B.quantize_mx(x, "E4M3FN", 32, "floor", axis=0)
    assert t.codes.shape == x.shape and t.scale_codes.shape == (2, 3, 2)
    for blk in range(2):
        for j in range(3):
            for k in range(2):
                col = x[blk * 32:(blk + 1) * 32, j, k]
                xe = oracle_exponent(max(Fraction(abs(float(v))) for v in col), "E4M3FN", "floor")
                assert int(t.scale_codes[blk, j, k]) == xe + 127
                want = [rne_code(Fraction(float(v)) / Fraction(2) ** xe, "E4M3FN") for v in col]
                assert t.codes[blk * 32:(blk + 1) * 32, j, k].tolist() == want


@pytest.mark.usefixtures("each_codec_path")
def test_mx_float64_input_matches_float32() -> None:
    x = np.random.default_rng(2).standard_normal((8, 64)).astype(np.float32)
    a = B.quantize_mx(x, "E5M2", 32)
    b = B.quantize_mx(x.astype(np.float64), "E5M2", 32)
    np.testing.assert_array_equal(a.codes, b.codes)
    np.testing.assert_array_equal(a.scale_codes, b.scale_codes)


@pytest.mark.usefixtures("each_codec_path")
def test_mx_stochastic_reproducible() -> None:
    from lowprec.formats import CastPolicy

    x = np.random.default_rng(3).standard_normal((4, 64)).astype(np.float32)
    pol = CastPolicy(rounding="stochastic", overflow="saturate")  # type: ignore[arg-type]
    a = B.quantize_mx(x, "E2M1", policy=pol, rng=np.random.default_rng(5))
    b = B.quantize_mx(x, "E2M1", policy=pol, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(a.codes, b.codes)


@pytest.mark.parametrize("kwargs, match", [
    ({"block_size": 24}, "does not divide"),
    ({"block_size": 0}, "positive integer"),
    ({"scale_rule": "nearest"}, "scale_rule"),
    ({"elem_format": "BF16"}, "not allowed"),
    ({"axis": 3}, "out of range"),
])
def test_mx_bad_input(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        B.quantize_mx(np.zeros((4, 32), np.float32), **kwargs)


def test_bits_per_element() -> None:
    assert BF.mx_bits_per_element("E4M3FN", 32) == 8.25
    assert BF.mx_bits_per_element("E3M2", 32) == 6.25
    assert BF.mx_bits_per_element("E2M1", 32) == 4.25
    assert BF.nvfp4_bits_per_element() == 4.5
    assert BF.nvfp4_bits_per_element(1024) == 4.5 + 32 / 1024
    assert B.quantize_mx(np.zeros((2, 64), np.float32)).bits_per_element == 8.25
    assert B.quantize_nvfp4(np.ones((4, 64), np.float32)).bits_per_element == 4.5 + 32 / 256


# ------------------------------------------------------------------------------------------------
# NVFP4
# ------------------------------------------------------------------------------------------------


def f32(q: Fraction) -> Fraction:
    # float(q) is the correctly rounded double; a float32 quotient of a float32 by 2688 cannot land
    # on a float32 midpoint within 2^-53, so rounding the double to float32 is the correct rounding
    return Fraction(float(np.float32(float(q))))


def nvfp4_oracle(blocks: np.ndarray) -> tuple[list[int], list[list[int]], float]:
    """Per block of 16: E4M3 scale code and E2M1 codes by the issue's formulas (exact rationals)."""
    finite_rows = [r for r in blocks if np.isfinite(r).all()]
    amax = max((Fraction(abs(float(v))) for r in finite_rows for v in r), default=Fraction(0))
    ts = Fraction(1) if amax == 0 else f32(amax / Fraction(448 * 6))
    scales, codes = [], []
    for r in blocks:
        if not np.isfinite(r).all():
            scales.append(0x7F)
            codes.append([0] * len(r))
            continue
        bam = max(Fraction(abs(float(v))) for v in r)
        sc = rne_code(bam / 6 / ts, "E4M3FN")
        s = Fraction(code_value(sc, "E4M3FN"))
        scales.append(sc)
        if s == 0:
            codes.append([0] * len(r))
        else:
            codes.append([rne_code(Fraction(float(v)) / (s * ts), "E2M1", negative=bool(np.signbit(v))) for v in r])
    return scales, codes, float(ts)


def nvfp4_data() -> np.ndarray:
    rng = np.random.default_rng(11)
    x = rng.standard_normal((8, 64)).astype(np.float32)
    x[0, :16] = 0.0  # zero block
    x[1, :16] *= 1e-7  # block whose E4M3 scale underflows next to the tensor amax
    x[2, 16:32] = np.float32(6.0 * 1.0625 * 2.0**-3)  # block scale rounds down → elements saturate at 6
    x[2, 17] = np.float32(0.2)
    x[3, :] *= 100.0  # sets the tensor amax
    x[4, 32:48] = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 6.0] * 2, np.float32) * np.float32(0.5)  # ties
    x[5, 48:64] *= 1e-3
    return x


@pytest.mark.parametrize("block_2d", [False, True])
def test_nvfp4_against_formulas(block_2d: bool) -> None:
    x = nvfp4_data() if not block_2d else np.random.default_rng(4).standard_t(3, size=(32, 48)).astype(np.float32)
    t = B.quantize_nvfp4(x, block_2d=block_2d)
    if block_2d:
        blocks = x.reshape(2, 16, 3, 16).transpose(0, 2, 1, 3).reshape(-1, 256)
        assert t.scale_codes.shape == (2, 3)
    else:
        blocks = x.reshape(-1, 16)
        assert t.scale_codes.shape == (8, 4)
    scales, codes, ts = nvfp4_oracle(blocks)
    assert t.tensor_scale == ts
    assert t.scale_codes.reshape(-1).tolist() == scales
    got = t.codes.reshape(2, 16, 3, 16).transpose(0, 2, 1, 3).reshape(-1, 256) if block_2d else t.codes.reshape(-1, 16)
    assert got.tolist() == codes
    deq = t.dequantize()
    want = np.array([[code_value(c, "E2M1") * code_value(s, "E4M3FN") * ts for c in cs]
                     for s, cs in zip(scales, codes)], np.float32)
    got_deq = deq.reshape(2, 16, 3, 16).transpose(0, 2, 1, 3).reshape(-1, 256) if block_2d else deq.reshape(-1, 16)
    np.testing.assert_array_equal(got_deq.view(np.uint32), want.view(np.uint32))


def test_nvfp4_edge_blocks() -> None:
    x = nvfp4_data()
    t = B.quantize_nvfp4(x)
    assert int(t.scale_codes[0, 0]) == 0 and (t.codes[0, :16] == 0).all()  # zero block
    assert int(t.scale_codes[1, 0]) == 0 and (t.codes[1, :16] == 0).all()  # scale underflows E4M3
    assert (t.codes[2, 16:32][np.arange(16) != 1] == 0x7).all()  # 6.375 saturates to code 0b0111 = 6
    y = x.copy()
    y[6, 5] = np.nan
    y[7, 40] = np.inf
    u = B.quantize_nvfp4(y)
    assert int(u.scale_codes[6, 0]) == 0x7F and int(u.scale_codes[7, 2]) == 0x7F
    d = u.dequantize()
    assert np.isnan(d[6, :16]).all() and np.isnan(d[7, 32:48]).all()
    assert np.isfinite(np.delete(d.reshape(-1, 16), [24, 30], axis=0)).all()
    assert u.tensor_scale == t.tensor_scale  # NaN/Inf blocks do not set the tensor amax
    z = B.quantize_nvfp4(np.zeros((2, 32), np.float32))
    assert z.tensor_scale == 1.0 and (z.codes == 0).all() and (z.dequantize() == 0).all()


def test_nvfp4_bad_input() -> None:
    with pytest.raises(ValueError, match="does not divide"):
        B.quantize_nvfp4(np.zeros((4, 24), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        B.quantize_nvfp4(np.zeros((16, 16, 2), np.float32), block_2d=True)
    with pytest.raises(ValueError, match="do not divide"):
        B.quantize_nvfp4(np.zeros((16, 24), np.float32), block_2d=True)


@pytest.mark.parametrize("knobs, match", [
    ({"rows": 15}, r"^rows: must be ≥ 16, got 15$"),
    ({"rows": 24}, r"^rows: must be a multiple of 16 \(16×16 tiles\), got 24$"),
    ({"rows": 16, "transposed_view": True}, r"^rows: must be a multiple of 32 \(column blocks"),
    ({"cols": 33}, r"^cols: must be a multiple of 32"),
    ({"rows": -16}, r"^rows: must be ≥ 16"),
    ({"row": 32}, r"^row: must be < rows \(32\), got 32$"),
    ({"recipe": "MXFP9"}, r"^recipe: must be one of MXFP8_E4M3, MXFP8_E5M2, MXFP6_E3M2, MXFP6_E2M3, MXFP4, NVFP4"),
])
def test_blocks_config_refuses_bad_values(knobs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        B.simulate_blocks(**knobs)


def test_blocks_simulation_json() -> None:
    s = B.simulate_blocks(rows=16, cols=64, seed=1)
    d = strictjson.loads(strictjson.dumps(s.to_dict()))
    schemes = {e["scheme"]: e for e in d["entries"]}
    assert len(schemes) == 5 * 4 + 2  # every MX block format × every rule, NVFP4 1×16 and 16×16
    assert schemes["MXFP8_E4M3 floor"]["bits_per_element"] == 8.25
    assert schemes["NVFP4 1x16"]["bits_per_element"] == 4.5 + 32 / (16 * 64)
    # more element bits, less error (same rule): MXFP8 E4M3 < MXFP6 E2M3 < MXFP4
    assert schemes["MXFP8_E4M3 rceil"]["rms_rel_error"] < schemes["MXFP6_E2M3 rceil"]["rms_rel_error"] \
        < schemes["MXFP4 rceil"]["rms_rel_error"]
    assert d["config"] == {"recipe": "MXFP8_E4M3", "scale_rule": "floor", "hadamard": False,
                           "distribution": "student_t", "outlier": 0.0, "row": 0, "seed": 1,
                           "transposed_view": False, "rows": 16, "cols": 64, "convention": "ocp"}
    assert d["selected"]["block_format"]["name"] == "MXFP8_E4M3" and d["selected"]["transposed"] is None


def test_blocks_simulation_under_a_convention() -> None:
    """The comparison covers what the implementation has; the recipe in detail is its quantization."""
    te = B.simulate_blocks(rows=32, cols=64, seed=1, convention="transformer_engine", scale_rule="rceil",
                           transposed_view=True)
    assert [e.scheme for e in te.entries] == ["MXFP8_E4M3 rceil", "MXFP8_E5M2 rceil", "NVFP4 1x16", "NVFP4 16x16"]
    assert te.selected is not None and te.selected.quantized.convention == "transformer_engine"
    want = B.quantize_mx(te.x_in, "E4M3FN", 32, "rceil", convention="transformer_engine")
    np.testing.assert_array_equal(te.selected.quantized.codes, want.codes)
    ao = B.simulate_blocks(rows=16, cols=64, seed=1, convention="torchao", recipe="NVFP4")
    assert "NVFP4 16x16" not in {e.scheme for e in ao.entries} and len(ao.entries) == 5 * 4 + 1
    assert ao.selected is not None and ao.selected.quantized.convention == "torchao"
    assert "transformer_engine convention" in "\n".join(B.summary_lines(te))


@pytest.mark.parametrize("knobs, match", [
    ({"convention": "transformer_engine"},
     r"^scale_rule: the transformer_engine convention has no scale rule 'floor'; it has rceil$"),
    ({"convention": "transformer_engine", "recipe": "MXFP4", "scale_rule": "rceil"},
     r"^recipe: the transformer_engine convention has no MX blocks of E2M1"),
    ({"convention": "cuda"}, r"^convention: must be one of ocp, torchao, transformer_engine"),
])
def test_blocks_config_refuses_what_a_convention_lacks(knobs: dict, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        B.BlocksConfig(**knobs)


def test_blocks_comparison_against_ml_dtypes() -> None:
    """Each MX floor entry's RMS relative error recomputed with ml_dtypes casts (OCP floor rule)."""
    s = B.simulate_blocks(rows=16, cols=64, seed=2, distribution="normal")
    x = B.sample_tensor("normal", (16, 64), 2).astype(np.float64)
    assert np.array_equal(x, np.random.default_rng(2).standard_normal((16, 64)).astype(np.float32))
    for bf in (BF.MXFP8_E4M3, BF.MXFP8_E5M2, BF.MXFP6_E3M2, BF.MXFP6_E2M3, BF.MXFP4):
        dtype = DTYPES[bf.element.name][0]
        emax, fmax = int(ml_dtypes.finfo(dtype).maxexp) - 1, float(ml_dtypes.finfo(dtype).max)
        b = x.reshape(-1, 32)
        _, e = np.frexp(np.abs(b).max(axis=1))
        scale = np.ldexp(1.0, (e - 1 - emax).astype(np.int64))[:, None]
        x_hat = (np.clip(b / scale, -fmax, fmax).astype(np.float32).astype(dtype).astype(np.float64) * scale)
        expected = math.sqrt(float(np.sum((x_hat - b) ** 2)) / float(np.sum(b * b)))
        entry = next(en for en in s.entries if en.scheme == f"{bf.name} floor")
        assert entry.rms_rel_error == pytest.approx(expected, rel=1e-12, abs=0)


# ------------------------------------------------------------------------------------------------
# block formats as data
# ------------------------------------------------------------------------------------------------


def test_block_format_registry() -> None:
    assert list(BF.BLOCK_FORMATS) == ["MXFP8_E4M3", "MXFP8_E5M2", "MXFP6_E3M2", "MXFP6_E2M3", "MXFP4", "NVFP4"]
    for bf in BF.BLOCK_FORMATS.values():
        assert BF.get_block_format(bf.name.lower().replace("_", "-")) is bf
        # OCP MX v1.0: 32 elements under one E8M0 scale; NVFP4: 16 elements under one E4M3 scale
        expected = (32, "E8M0", None) if bf.family == "MX" else (16, "E4M3FN", "FP32")
        tensor_scale = None if bf.tensor_scale is None else bf.tensor_scale.name
        assert (bf.block_size, bf.scale.name, tensor_scale) == expected
        assert bf.element.max == float(ml_dtypes.finfo(DTYPES[bf.element.name][0]).max)
    assert [bf.bits_per_element for bf in BF.BLOCK_FORMATS.values()] == [8.25, 8.25, 6.25, 6.25, 4.25, 4.5]
    assert BF.MX_ELEMENT_FORMATS == ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")
    with pytest.raises(ValueError, match="unknown block format 'MXFP5'; known: MXFP8_E4M3, "):
        BF.get_block_format("MXFP5")


@pytest.mark.parametrize("name", list(BF.BLOCK_FORMATS))
def test_quantize_block_dispatches_on_the_record(name: str) -> None:
    x = np.random.default_rng(3).standard_t(3, size=(64, 16)).astype(np.float32)
    q = B.quantize_block(x, name, "rceil", axis=0)
    bf = BF.BLOCK_FORMATS[name]
    direct = (B.quantize_nvfp4(x, axis=0) if bf.family == "NVFP4"
              else B.quantize_mx(x, bf.element.name, 32, "rceil", axis=0))
    assert np.array_equal(q.codes.view(np.uint8), direct.codes.view(np.uint8))
    assert np.array_equal(q.scale_codes.view(np.uint8), direct.scale_codes.view(np.uint8))


def test_results_to_dict_json() -> None:
    from lowprec.simulations.scaling import quantize_scaled

    x = np.random.default_rng(9).standard_normal((16, 32)).astype(np.float32)
    x[0, 0] = np.nan
    for obj in (B.quantize_mx(x, "E4M3FN"), B.quantize_nvfp4(x, block_2d=True),
                quantize_scaled(np.nan_to_num(x), "E5M2", "block16", scale_format="E8M0")):
        d = strictjson.loads(strictjson.dumps(obj.to_dict()))
        assert np.array(d["codes"]).shape == x.shape


@settings(max_examples=60, deadline=None)
@given(arrays(np.float32, (2, 32), elements=st.floats(-2.0**100, 2.0**100, width=32, allow_subnormal=True)),
       st.sampled_from(ELEMS), st.sampled_from(RULES))
def test_mx_sign_symmetric_and_idempotent(x: np.ndarray, name: str, rule: str) -> None:
    t = B.quantize_mx(x, name, 32, rule)
    neg = B.quantize_mx(-x, name, 32, rule)
    sign = np.uint8(1 << (DTYPES[name][1] - 1))
    np.testing.assert_array_equal(neg.codes, t.codes ^ sign)  # -x: same magnitude codes, flipped sign bit
    np.testing.assert_array_equal(neg.scale_codes, t.scale_codes)
    d = t.dequantize()
    again = B.quantize_mx(d, name, 32, "rceil")
    if rule == "rceil":  # rceil never saturates, so its output is on its own grid: a fixed point
        np.testing.assert_array_equal(again.dequantize().view(np.uint32), d.view(np.uint32))
