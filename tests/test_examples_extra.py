"""The lesson-specific worked examples (simulations/examples_extra.py) against independent oracles:
ml_dtypes and numpy casts, Fraction arithmetic and formulas written out here. The last tests pin the
qualitative claims the lesson prose makes about these numbers, so a change that breaks a sentence
fails here."""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from lowprec import strictjson
from lowprec.simulations.examples import example
from lowprec.simulations.examples_extra import EXAMPLES

BF = ml_dtypes.bfloat16
F8 = ml_dtypes.float8_e4m3fn
F4 = ml_dtypes.float4_e2m1fn


def v(name: str, field: str) -> float:
    value = example(name).values[field]
    assert isinstance(value, (int, float)) and not isinstance(value, bool)
    return float(value)


def sat_cast(x: np.ndarray, dtype: type, fmax: float) -> np.ndarray:
    """Saturating round-to-nearest-even cast through ml_dtypes (clip first: ml_dtypes overflows to NaN)."""
    return np.clip(np.asarray(x, dtype=np.float64), -fmax, fmax).astype(dtype).astype(np.float64)


def scaled(x: np.ndarray, dtype: type, fmax: float, decode_scale: np.ndarray | float) -> np.ndarray:
    return sat_cast(x / decode_scale, dtype, fmax) * decode_scale


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_registered_named_and_json(name: str) -> None:
    ex = example(name)
    assert ex.name == name
    strictjson.loads(strictjson.dumps(ex.to_dict()))
    for field in ex.values:
        assert isinstance(ex.format(field), str)


def test_weight_memory() -> None:
    params = Fraction(7_000_000_000)
    assert v("weight_memory", "bf16_gb") == float(params * 2 / 10**9)  # 2 bytes per BF16 value
    assert v("weight_memory", "fp8_gb") == float(params * 1 / 10**9)
    assert v("weight_memory", "nvfp4_gb") == float(params * (4 + Fraction(8, 16)) / 8 / 10**9)
    assert v("weight_memory", "nvfp4_ratio") == float(Fraction(16) / (4 + Fraction(8, 16)))


def test_fp16_vs_bf16() -> None:
    assert v("fp16_vs_bf16", "fp16_max") == float(np.finfo(np.float16).max)
    assert v("fp16_vs_bf16", "bf16_max") == float(ml_dtypes.finfo(BF).max)
    assert v("fp16_vs_bf16", "fp16_eps") == 2.0**-10
    assert v("fp16_vs_bf16", "bf16_eps") == 2.0**-7
    assert v("fp16_vs_bf16", "x_fp16") == float(np.float16(1.001))
    assert v("fp16_vs_bf16", "x_bf16") == float(BF(1.001))
    assert v("fp16_vs_bf16", "big_fp16") == float("inf")
    assert v("fp16_vs_bf16", "big_bf16") == float(BF(70000.0))


def test_e4m3_variants_and_subnormals() -> None:
    for key, dtype in (("e4m3fn", F8), ("e4m3fnuz", ml_dtypes.float8_e4m3fnuz),
                       ("e5m2", ml_dtypes.float8_e5m2), ("e5m2fnuz", ml_dtypes.float8_e5m2fnuz)):
        assert v("e4m3_variants", f"{key}_max") == float(ml_dtypes.finfo(dtype).max)
    assert example("e4m3_variants").values["e5m2_has_inf"] == "yes"
    assert example("e4m3_variants").values["e4m3fn_has_inf"] == "no"
    assert v("subnormal_flush", "smallest_subnormal") == float(ml_dtypes.finfo(F8).smallest_subnormal)
    x = v("subnormal_flush", "x")
    assert v("subnormal_flush", "x_keep") == float(F8(x)) == 3 * 2.0**-9
    assert v("subnormal_flush", "x_flush") == 0.0


def test_scale_conventions() -> None:
    assert Fraction(v("scale_conventions", "decode_scale")) == Fraction(7, 2) / 448
    assert Fraction(v("scale_conventions", "encode_scale")) == 448 / Fraction(7, 2)
    assert v("scale_conventions", "x_back") == 1.0
    assert v("scale_conventions", "misread_factor") == 128.0**2


def test_fixed_scale_shrink() -> None:
    base = np.random.default_rng(0).standard_normal(4096)
    for label, magnitude in (("1", 1.0), ("1e_2", 1e-2), ("1e_3", 1e-3), ("1e_4", 1e-4)):
        x = base * magnitude
        fixed = sat_cast(x, F8, 448.0)
        assert v("fixed_scale_shrink", f"zero_fixed_{label}_pct") == pytest.approx(100 * np.mean(fixed == 0), abs=1e-12)
        rel = np.sqrt(np.mean(((fixed - x) / x) ** 2))
        assert v("fixed_scale_shrink", f"rel_err_fixed_{label}") == pytest.approx(rel, rel=1e-12)
        amax = scaled(x, F8, 448.0, np.max(np.abs(x)) / 448.0)
        rel = np.sqrt(np.mean(((amax - x) / x) ** 2))
        assert v("fixed_scale_shrink", f"rel_err_amax_{label}") == pytest.approx(rel, rel=1e-12)


def test_clip_vs_zero() -> None:
    x = np.random.default_rng(1).standard_t(3, size=8192) * 1e-3
    for label, amax in (("max", np.max(np.abs(x))), ("p99", np.quantile(np.abs(x), 0.99))):
        y = scaled(x, F8, 448.0, amax / 448.0)
        assert v("clip_vs_zero", f"clipped_{label}_pct") == pytest.approx(100 * np.mean(np.abs(x) > amax), abs=1e-12)
        assert v("clip_vs_zero", f"rms_err_{label}") == pytest.approx(np.sqrt(np.mean((y - x) ** 2)), rel=1e-12)


def test_outlier_group() -> None:
    x = np.random.default_rng(0).standard_normal((16, 64))
    x[3, 5] = 100.0
    ordinary = np.ones_like(x, dtype=bool)
    ordinary[3, 5] = False
    for key, dtype, fmax in (("e4m3fn", F8, 448.0), ("e2m1", F4, 6.0)):
        amax_row = np.max(np.abs(x), axis=1, keepdims=True)
        amax_block = np.repeat(np.max(np.abs(x.reshape(16, 2, 32)), axis=2), 32, axis=1)
        for label, amax in (("tensor", np.max(np.abs(x))), ("row", amax_row), ("block32", amax_block)):
            y = scaled(x, dtype, fmax, amax / fmax)
            rel = ((y - x) / x)[ordinary]
            assert v("outlier_group", f"{key}_{label}_rms_rel_err") == pytest.approx(np.sqrt(np.mean(rel**2)), rel=1e-12)
            assert v("outlier_group", f"{key}_{label}_zero_pct") == pytest.approx(100 * np.mean(y[ordinary] == 0), abs=1e-12)


def test_metadata_cost() -> None:
    assert v("metadata_cost", "block32_e8m0_bits") == 8 / 32
    assert v("metadata_cost", "block16_e4m3fn_bits") == 8 / 16
    assert v("metadata_cost", "row_fp32_bits") == 32 / 4096
    assert v("metadata_cost", "tensor_fp32_bits") == 32 / 4096**2


def test_router_stall_and_loss_scaling() -> None:
    assert v("router_near_tie", "logit_b_bf16") == float(BF(3.005))
    assert v("router_near_tie", "bf16_gap_at_3") == float(np.nextafter(BF(3.0), BF(4.0))) - 3.0
    w = BF(1.0)
    master = np.float32(1.0)
    for _ in range(100):
        w = BF(np.float32(w) + np.float32(1e-3))
        master = np.float32(master + np.float32(1e-3))
    assert v("stalled_update", "bf16_only_final") == float(w)
    assert v("stalled_update", "master_final") == float(master)
    assert v("stalled_update", "master_cast_bf16") == float(BF(master))
    assert v("loss_scaling", "grad_fp16") == float(np.float16(1e-8))
    assert v("loss_scaling", "scaled_fp16") == float(np.float16(1e-8 * 2.0**16))
    assert v("loss_scaling", "unscaled_fp32") == float(np.float32(np.float16(1e-8 * 2.0**16)) / np.float32(2.0**16))


def test_sr_variance() -> None:
    grid = np.sort(np.arange(256, dtype=np.uint8).view(F8).astype(np.float64))
    grid = grid[np.isfinite(grid)]
    p = 0.3
    lo, hi = float(grid[grid <= p].max()), float(grid[grid >= p].min())
    assert (v("sr_variance", "lo"), v("sr_variance", "hi")) == (lo, hi)
    assert v("sr_variance", "nearest") == float(F8(p))
    assert v("sr_variance", "sr_var") == pytest.approx((hi - p) * (p - lo), rel=1e-12)
    assert v("sr_variance", "sr_mean") == pytest.approx(p, rel=1e-12)


def test_recompute_stale_scale() -> None:
    assert v("recompute_stale_scale", "scale_ratio") == pytest.approx(1.5 / 1.2, rel=1e-12)
    assert v("recompute_stale_scale", "inserts_defective") == 2
    assert v("recompute_stale_scale", "inserts_fixed") == 1
    x = np.random.default_rng(0).standard_normal(1024)
    x *= 1.5 / np.max(np.abs(x))
    fwd = scaled(x, F8, 448.0, 1.2 / 448.0)
    rec = scaled(x, F8, 448.0, 1.5 / 448.0)
    assert v("recompute_stale_scale", "differ_pct") == pytest.approx(100 * np.mean(fwd != rec), abs=1e-12)
    assert v("recompute_stale_scale", "fixed_differ_pct") == 0.0


def test_fp4_kv_bits() -> None:
    assert v("fp4_kv_bits", "bits_per_element") == 4 + 8 / 16
    assert v("fp4_kv_bits", "vs_bf16") == 16 / 4.5


# claims the lesson prose makes about these numbers -------------------------------------------------


def test_claims_in_lesson_4() -> None:
    # "max scaling wins here on both error measures"
    assert v("clip_vs_zero", "rms_err_max") < v("clip_vs_zero", "rms_err_p99")
    assert v("clip_vs_zero", "max_abs_err_max") < v("clip_vs_zero", "max_abs_err_p99")
    # "with an amax scale the relative error does not depend on the magnitude"
    errs = [v("fixed_scale_shrink", f"rel_err_amax_{m}") for m in ("1", "1e_2", "1e_3", "1e_4")]
    assert max(errs) - min(errs) < 1e-9
    # the fixed scale gets worse as the magnitude shrinks, ending with everything at zero
    zeros = [v("fixed_scale_shrink", f"zero_fixed_{m}_pct") for m in ("1", "1e_2", "1e_3", "1e_4")]
    assert zeros == sorted(zeros) and zeros[-1] == 100.0


def test_claims_in_lessons_5_9_10_12() -> None:
    # lesson 5: E4M3FN barely notices the outlier; E2M1 per tensor rounds every ordinary value to zero
    assert v("outlier_group", "e4m3fn_tensor_rms_rel_err") < 1.1 * v("outlier_group", "e4m3fn_block32_rms_rel_err")
    assert v("outlier_group", "e2m1_tensor_zero_pct") == 100.0
    assert v("outlier_group", "e2m1_block32_zero_pct") < v("outlier_group", "e2m1_tensor_zero_pct")
    # lesson 9: the router logits tie in BF16
    assert example("router_near_tie").values["top1_bf16"] == "tie"
    # lesson 10: every update is absorbed; the gradient flushes to zero without loss scaling
    assert v("stalled_update", "bf16_only_final") == v("stalled_update", "w0")
    assert v("loss_scaling", "grad_fp16") == 0.0 < v("loss_scaling", "scaled_fp16")
    # lesson 12: the step's amax is above the history, so the forward clips and the recompute differs
    assert v("recompute_stale_scale", "clipped_forward_pct") > 0
    assert v("recompute_stale_scale", "differ_pct") > 0


def test_zero_tensor_scale() -> None:
    # simulations.scaling.scales documents the identity as the safe scale of a zero or non-finite amax
    assert v("zero_tensor_scale", "decode_scale_zero") == 1.0
    assert v("zero_tensor_scale", "encode_scale_zero") == 1.0
    assert v("zero_tensor_scale", "decode_scale_nan") == 1.0
    assert v("zero_tensor_scale", "decode_scale_3_5") == 3.5 / 448
