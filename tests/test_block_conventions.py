"""The block-convention record and its registry, the refusals, and the named rule each convention
follows on an NVFP4 tensor whose amax is non-finite or overflows the FP32 tensor scale (checked
against exact rational arithmetic and ml_dtypes' grids, tests/scaling_oracles.py)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations import block_conventions as BC
from lowprec.simulations.blocks.comparison import block_conventions_table, compare_conventions
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4
from tests.scaling_oracles import code_value, rne_code

FLT_MAX = Fraction(float(np.finfo(np.float32).max))


def test_registry_names_sources_and_versions() -> None:
    assert list(BC.BLOCK_CONVENTIONS) == ["ocp", "torchao", "transformer_engine"]
    assert BC.DEFAULT_CONVENTION == "ocp"
    assert "0.18.0" in BC.BLOCK_CONVENTIONS["torchao"].source
    assert "2.20.2" in BC.BLOCK_CONVENTIONS["transformer_engine"].source
    assert BC.get_block_convention("TorchAO") is BC.BLOCK_CONVENTIONS["torchao"]
    for conv in BC.BLOCK_CONVENTIONS.values():
        d = strictjson.loads(strictjson.dumps(conv.to_dict()))
        assert d["name"] == conv.name and d["mx_rules"][0]["rule"] == conv.default_rule.value
    with pytest.raises(ValueError, match=r"unknown block convention 'cuda'; known: ocp, torchao, transformer_engine"):
        BC.get_block_convention("cuda")


def test_every_choice_is_documented_with_its_formula() -> None:
    """Each enum member's name appears in its enum's docstring (where its formula is written)."""
    for enum in (BC.AmaxNaN, BC.MXScale, BC.MXElementScaling, BC.ElementCast, BC.TensorAmax, BC.GlobalScale,
                 BC.NVFP4BlockScale, BC.NVFP4ElementScaling):
        doc = enum.__doc__ or ""
        for member in enum:
            assert f"{member.name}:" in doc, f"{enum.__name__}.{member.name} has no formula"


def test_default_is_ocp_and_today_behaviour() -> None:
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    a, b = quantize_mx(x, "E4M3FN"), quantize_mx(x, "E4M3FN", 32, "floor", convention="ocp")
    assert a.convention == "ocp" and a.scale_rule.value == "floor"
    np.testing.assert_array_equal(a.codes, b.codes)
    te = quantize_mx(x, "E4M3FN", convention="transformer_engine")
    assert te.scale_rule.value == "rceil" and te.to_dict()["convention"] == "transformer_engine"
    assert quantize_nvfp4(x).convention == "ocp"


@pytest.mark.parametrize("call, match", [
    (lambda x: quantize_mx(x, "E4M3FN", 32, "floor", convention="transformer_engine"),
     r"^the transformer_engine convention has no scale rule 'floor'; it has rceil$"),
    (lambda x: quantize_mx(x, "E2M1", convention="transformer_engine"),
     r"has no MX blocks of E2M1; it has E4M3FN, E5M2$"),
    (lambda x: quantize_mx(x, "E4M3FN", 16, convention="transformer_engine"),
     r"has MX blocks of 32 elements, not 16$"),
    (lambda x: quantize_mx(x, "E4M3FN", convention="torchao", policy=BC.element_policy(BC.ElementCast.OCP, BC.E4M3FN)),
     r"^the torchao convention fixes its element cast"),
    (lambda x: quantize_mx(x, convention="nvidia"), r"unknown block convention 'nvidia'"),
    (lambda x: quantize_mx(x, scale_rule="nearest", convention="torchao"), r"scale_rule='nearest' is not one of"),
    (lambda x: quantize_nvfp4(x, block_2d=True, convention="torchao"),
     r"^the torchao convention has NVFP4 1×16 blocks only, not 16×16 tiles$"),
    (lambda x: quantize_nvfp4(x, convention="transformer_engine", policy=BC.element_policy(BC.ElementCast.OCP, BC.E2M1)),
     r"^the transformer_engine convention fixes its element cast"),
])
def test_refusals_name_the_value_and_what_is_allowed(call: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call(np.zeros((32, 32), np.float32))  # type: ignore[operator]


# ------------------------------------------------------------------------------------------------
# NVFP4 with a non-finite or overflowing tensor amax: one named rule per convention
# ------------------------------------------------------------------------------------------------


def overflowing_tensor() -> np.ndarray:
    """float64, three blocks of 16: amax 1e42 (its quotient by 2688 is beyond FLT_MAX), one block at
    1e39 (still representable next to the saturated tensor scale) and one at 1."""
    x = np.zeros((1, 48))
    x[0, :16] = np.linspace(-1e42, 1e42, 16)
    x[0, 16:32] = 1e39 * np.linspace(0.25, 1.0, 16)
    x[0, 32:48] = np.linspace(-1, 1, 16)
    return x


def test_ocp_saturates_an_overflowing_tensor_scale() -> None:
    x = overflowing_tensor()
    t = quantize_nvfp4(x)
    assert Fraction(t.tensor_scale) == FLT_MAX  # 1e42 / 2688 > FLT_MAX: saturated, not Inf
    ts = FLT_MAX
    for b in range(3):
        block = x[0, 16 * b:16 * (b + 1)]
        amax = max(Fraction(abs(float(v))) for v in block)
        sc = rne_code(amax / 6 / ts, "E4M3FN")
        assert int(t.scale_codes[0, b]) == sc
        s = Fraction(code_value(sc, "E4M3FN"))
        want = [0] * 16 if s == 0 else [rne_code(Fraction(float(v)) / (s * ts), "E2M1", negative=bool(v < 0))
                                         for v in block]
        assert t.codes[0, 16 * b:16 * (b + 1)].tolist() == want
    assert t.scale_codes[0].tolist()[0] == 0x7E  # the 1e42 block: 448, its ends saturate to ±6
    deq = t.dequantize()
    assert np.isfinite(deq).all()
    assert deq.dtype == np.float64 and Fraction(float(deq[0, 0])) == -6 * 448 * FLT_MAX  # the largest magnitude
    assert np.all(deq[0, 32:] == 0)  # 2^-130 of the amax: far below the block grid


def test_ocp_on_1e300_float64_stays_finite() -> None:
    x = np.ones((2, 32))
    x[1, 7] = 1e300
    t = quantize_nvfp4(x)
    assert Fraction(t.tensor_scale) == FLT_MAX and np.isfinite(t.dequantize()).all()
    assert int(t.scale_codes[1, 0]) == 0x7E and int(t.codes[1, 7]) == 0x7


def test_nonfinite_amax_under_each_convention() -> None:
    """Inf in one block (float32), and 1e300 in float64 (rounded to Inf by the float32 conventions)."""
    x = np.random.default_rng(3).standard_normal((2, 64)).astype(np.float32)
    x[1, 20] = np.inf
    x64 = x.astype(np.float64)
    x64[1, 20] = 1e300
    ocp = quantize_nvfp4(x)
    # ocp: the Inf block alone gets the NaN scale; the others keep the tensor scale of the finite blocks
    finite_amax = np.abs(np.where(np.isfinite(x), x, 0)).max()
    assert ocp.tensor_scale == float(np.float32(float(finite_amax) / 2688))
    assert int(ocp.scale_codes[1, 1]) == 0x7F and np.isfinite(np.delete(ocp.dequantize()[1], np.s_[16:32])).all()
    for data in (x, x64):
        ao = quantize_nvfp4(data, convention="torchao")
        # torchao: ts = Inf; every finite block's scale is clamped up to 2^-6 (code 0x08), its elements
        # multiplied by 1/Inf = 0 (signed zero codes), and dequantizes to 0 · Inf = NaN
        assert ao.tensor_scale == float("inf")
        finite_blocks = np.delete(ao.scale_codes.reshape(-1), 5)
        assert (finite_blocks == 0x08).all()
        assert np.isnan(ao.dequantize()).all()
        te = quantize_nvfp4(data, convention="transformer_engine")
        # Transformer Engine: 2688 / Inf = 0 → the global encode scale becomes 1: blocks are scaled
        # as if there were no tensor scale; the Inf block's scale saturates at 448 and Inf → 6
        assert te.tensor_scale == 1.0
        assert int(te.scale_codes[1, 1]) == 0x7E and int(te.codes[1, 20]) == 0x7
        assert np.isfinite(te.dequantize()).all()
        block = x[0, :16]
        assert int(te.scale_codes[0, 0]) == rne_code(Fraction(float(np.float32(np.abs(block).max()
                                                                                * np.float32(1 / 6)))), "E4M3FN")


def test_nan_amax_under_each_convention() -> None:
    x = np.random.default_rng(4).standard_normal((2, 64)).astype(np.float32)
    x[0, 3] = np.nan
    ocp = quantize_nvfp4(x)
    assert int(ocp.scale_codes[0, 0]) == 0x7F and np.isfinite(ocp.dequantize().reshape(-1)[16:]).all()
    ao = quantize_nvfp4(x, convention="torchao")
    assert ((ao.scale_codes & 0x7F) == 0x7F).all() and np.isnan(ao.dequantize()).all()
    te = quantize_nvfp4(x, convention="transformer_engine")
    assert ((te.scale_codes & 0x7F) == 0x7F).all() and (te.codes == 0).all()


# ------------------------------------------------------------------------------------------------
# the worked block of the lesson, by exact arithmetic
# ------------------------------------------------------------------------------------------------


def test_worked_block_example_against_exact_arithmetic() -> None:
    from lowprec.simulations.examples import example
    from lowprec.simulations.examples_blocks import WORKED_BLOCK

    ex = example("nvfp4_three_conventions").values
    block = [Fraction(float(np.float32(v))) for v in WORKED_BLOCK]
    amax = max(abs(b) for b in block)
    # tensor amax 2688 = 448 · 6: every convention's tensor scale is exactly 1
    assert ex["ocp_tensor_scale"] == ex["torchao_tensor_scale"] == ex["te_tensor_scale"] == 1.0
    # OCP: E4M3(amax / 6) — 0.0058 / 6 < 2^-10, half of E4M3's smallest subnormal 2^-9: rounds to 0
    assert amax / 6 < Fraction(1, 2**10) and rne_code(amax / 6, "E4M3FN") == 0 == ex["ocp_scale_code"]
    assert ex["ocp_nonzero"] == 0 and ex["ocp_rms_rel_error"] == 1.0
    # torchao: the scale is clamped to 2^-6 first (E4M3 code 0 0001 000 = 0x08); elements x · 64
    s = Fraction(1, 64)
    assert rne_code(s, "E4M3FN") == 0x08 == ex["torchao_scale_code"]
    codes = [rne_code(b / s, "E2M1", negative=b < 0) for b in block]
    decoded = [Fraction(code_value(c, "E2M1")) * s for c in codes]
    assert sum(d != 0 for d in decoded) == ex["torchao_nonzero"] == 4  # 0.0058 … 0.0041 → ±0.5 · 2^-6
    err = sum((d - b) ** 2 for d, b in zip(decoded, block)) / sum(b * b for b in block)
    assert ex["torchao_rms_rel_error"] == pytest.approx(float(err) ** 0.5, rel=1e-12)
    # Transformer Engine: E4M3(fl32(amax · fl32(1 · fl32(1/6)))) = 0 as well; the encode scale
    # min(1 / (0 · 1), FLT_MAX) = FLT_MAX; 0.0058 · FLT_MAX clamps to 6: code 0111
    te_scale = Fraction(float(np.float32(np.float32(max(map(float, block))) * np.float32(1 / 6))))
    assert rne_code(te_scale, "E4M3FN") == 0 == ex["te_scale_code"]
    assert ex["te_largest_code"] == rne_code(block[0] * FLT_MAX, "E2M1") == 0x7
    assert ex["te_nonzero"] == 0 and ex["te_rms_rel_error"] == 1.0


def test_table_of_differences_is_computed_per_convention() -> None:
    rows = {p.name: p for p in block_conventions_table()}
    small = rows["NVFP4 small block scale"].comparison
    # 0.06 / 6 = 0.01 < 2^-6: ocp rounds to the subnormal 5 · 2^-9 (0x05); torchao clamps to 2^-6
    assert small.outcome("ocp").scale_code == rne_code(Fraction(float(np.float32(0.06))) / 6, "E4M3FN") == 0x05
    assert small.outcome("torchao").scale_code == 0x08
    zero = rows["NVFP4 zero block scale"].comparison
    assert zero.outcome("transformer_engine").codes[:2].tolist() == [0x7, 0xF]
    assert (zero.outcome("ocp").codes == 0).all()
    nan = rows["MX block with NaN"].comparison
    assert nan.outcome("ocp").scale_code == 0xFF and nan.outcome("transformer_engine").scale_code == 127 - 8
    assert strictjson.loads(strictjson.dumps([p.to_dict() for p in rows.values()]))[0]["name"]
    with pytest.raises(ValueError, match=r"block=5 is out of range: the tensor has 2 blocks of 16"):
        compare_conventions(np.zeros(32, np.float32), "NVFP4", 5)
