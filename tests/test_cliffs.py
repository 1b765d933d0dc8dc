"""Precision cliffs (simulations.studies.cliffs) against independent oracles: numpy's IEEE float32/float16
arithmetic, ml_dtypes casts, Fraction arithmetic, torch's fake quantization and autograd."""

from __future__ import annotations

import json
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest
import torch

from lowprec.simulations.studies.cliffs import (absorption, add_in, all_cliffs, exact_sum_round_to_odd, fake_quant,
                                                fake_quant_grad_mask, fake_quant_scalar, flip_sensitive,
                                                qat_linear_fit, saturating_logits, scaling_comparison,
                                                softmax_saturation, tie_flip, tie_points, update_stall_sweep)

# ------------------------------------------------------------------------------------------------
# correctly rounded sums
# ------------------------------------------------------------------------------------------------


def test_round_to_odd_sum_against_fractions() -> None:
    rng = np.random.default_rng(0)
    a = rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 30, 2000)
    b = rng.standard_normal(2000) * 2.0 ** rng.integers(-30, 30, 2000)
    r = exact_sum_round_to_odd(a, b)
    for x, y, s in zip(a, b, r):
        exact = Fraction(float(x)) + Fraction(float(y))
        if Fraction(float(s)) != exact:
            assert int(np.float64(s).view(np.int64)) & 1 == 1  # inexact results are odd …
            lo, hi = sorted((float(s), float(np.nextafter(s, np.inf if exact > Fraction(float(s)) else -np.inf))))
            assert Fraction(lo) < exact < Fraction(hi)  # … and one of the two neighbours of the sum


@pytest.mark.parametrize("fmt, dtype, uint", [("FP32", np.float32, np.uint32), ("FP16", np.float16, np.uint16)])
def test_add_in_matches_ieee_arithmetic(fmt: str, dtype: type, uint: type) -> None:
    rng = np.random.default_rng(1)
    a: np.ndarray = (rng.standard_normal(5000) * 2.0 ** rng.integers(-8, 8, 5000)).astype(dtype)
    b: np.ndarray = (rng.standard_normal(5000) * 2.0 ** rng.integers(-20, 8, 5000)).astype(dtype)
    ours: np.ndarray = add_in(a.astype(np.float64), b.astype(np.float64), fmt).astype(dtype)
    with np.errstate(over="ignore"):
        ref = a + b  # numpy: IEEE addition, correctly rounded (float16 via float32 is innocuous)
    np.testing.assert_array_equal(ours.view(uint), ref.view(uint))


# ------------------------------------------------------------------------------------------------
# absorption and stalled updates
# ------------------------------------------------------------------------------------------------


def test_fp32_absorption() -> None:
    r = absorption("FP32", 1e-8)
    assert np.float32(1e-8) != 0  # 1e-8 is representable (a normal float32) …
    assert np.float32(1.0) + np.float32(1e-8) == np.float32(1.0)  # … yet vanishes in the sum
    assert r.absorbed and r.total == 1.0 and r.x_in_format == float(np.float32(1e-8))
    assert r.threshold == 2.0 ** -24 == float(np.finfo(np.float32).eps) / 2


@pytest.mark.parametrize("fmt, eps", [("FP32", float(np.finfo(np.float32).eps)),
                                      ("BF16", float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps)),
                                      ("FP16", float(np.finfo(np.float16).eps))])
def test_absorption_threshold_is_half_the_gap(fmt: str, eps: float) -> None:
    r = absorption(fmt, 0.0)
    assert r.threshold == eps / 2 and r.gap_above == eps
    # exactly half the gap is a tie; 1's code is even, so it stays 1; a hair more moves up
    assert absorption(fmt, eps / 2).total == 1.0
    assert absorption(fmt, eps / 2 * (1 + 2.0 ** -30)).total == 1.0 + eps


def test_update_stall_against_float32_and_bfloat16_loops() -> None:
    lrs = np.array([2.0 ** -12, 2.0 ** -10, 2.0 ** -9, 2.0 ** -8, 2.0 ** -6])
    steps = 50
    r = update_stall_sweep(lrs, steps=steps)
    assert r.stall_threshold == 2.0 ** -9  # half the gap below 1 in BF16 (1 − 2^-8 … 1)
    for i, lr in enumerate(lrs):
        u = np.float32(lr)
        w32 = np.float32(1.0)
        wbf = ml_dtypes.bfloat16(1.0)
        for _ in range(steps):
            w32 = np.float32(w32 - u)
            # the difference of two powers-of-two-aligned values is exact in float32, so one cast
            wbf = ml_dtypes.bfloat16(np.float32(wbf) - u)
        assert r.change_master[i] == 1.0 - float(w32)
        assert r.change_low[i] == 1.0 - float(wbf)
    # updates up to half the gap (2^-9 is the tie: 1 is even) stall; the master copy keeps them
    assert r.stalled.tolist() == [True, True, True, False, False]
    assert np.all(r.change_master == steps * lrs)


# ------------------------------------------------------------------------------------------------
# softmax saturation
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["FP32", "BF16", "FP16"])
def test_softmax_saturation(fmt: str) -> None:
    r = softmax_saturation(fmt)
    assert r.saturated and r.probs[0] == 1.0
    assert r.grad_naive[0] == 0.0  # p − y lost the negative gradient …
    assert all(g > 0 for g in r.grad_naive[1:])  # … while the other entries stay positive
    # float64 reference computed here, independently
    z = r.logits
    e = [math.exp(v - max(z)) for v in z]
    ref = -math.fsum(e[1:]) / math.fsum(e)
    eps = {"FP32": 2.0 ** -23, "BF16": 2.0 ** -7, "FP16": 2.0 ** -10}[fmt]
    tiny = {"FP32": 2.0 ** -149, "BF16": 2.0 ** -133, "FP16": 2.0 ** -24}[fmt]
    n_ops = len(z) + 2  # exps, the running sum, the division: each adds ≤ eps/2 relative
    assert r.grad_rewritten[0] < 0
    assert abs(r.grad_rewritten[0] - ref) <= n_ops * eps / 2 * abs(ref) + n_ops * tiny
    assert r.grad_reference[0] == pytest.approx(ref, rel=1e-15)


@pytest.mark.parametrize("fmt, dtype", [("FP32", torch.float32), ("BF16", torch.bfloat16),
                                        ("FP16", torch.float16)])
def test_torch_loses_the_same_gradient(fmt: str, dtype: torch.dtype) -> None:
    z = torch.tensor(saturating_logits(fmt), dtype=dtype, requires_grad=True)
    torch.nn.functional.cross_entropy(z[None], torch.tensor([0])).backward()
    assert z.grad is not None
    assert float(z.grad[0]) == 0.0 and float(z.grad[1]) > 0


def test_saturating_logits_gap() -> None:
    # smallest integer d with 2·e^-d < eps/4: FP32 eps 2^-23 → d = 19
    assert saturating_logits("FP32") == [19.0, 0.0, 0.0]
    d = saturating_logits("BF16")[0]
    assert 2 * math.exp(-d) < 2.0 ** -9 <= 2 * math.exp(-(d - 1))


# ------------------------------------------------------------------------------------------------
# tie flips
# ------------------------------------------------------------------------------------------------


def test_bf16_tie_flip() -> None:
    r = tie_flip("BF16", 1.0, 2.0 ** -16)
    assert (r.lower, r.upper, r.midpoint) == (1.0, 1.0 + 2.0 ** -7, 1.0 + 2.0 ** -8)
    # 1 + 1/256 is the midpoint of 1 (mantissa 0, even) and 1 + 1/128: ties-to-even gives 1
    assert r.rounded_midpoint == float(ml_dtypes.bfloat16(1.0 + 2.0 ** -8)) == 1.0
    assert r.rounded_plus == float(ml_dtypes.bfloat16(1.0 + 2.0 ** -8 + 2.0 ** -16)) == 1.0 + 2.0 ** -7
    odd = tie_flip("BF16", 1.0 + 2.0 ** -7)
    # 1 + 3/256: lower neighbour 1 + 1/128 has mantissa 1 (odd), so the tie goes up to 1 + 1/64
    assert not odd.lower_is_even
    assert odd.rounded_midpoint == float(ml_dtypes.bfloat16(1.0 + 3 * 2.0 ** -8)) == 1.0 + 2.0 ** -6


@pytest.mark.parametrize("fmt, dtype", [("E4M3FN", ml_dtypes.float8_e4m3fn), ("E5M2", ml_dtypes.float8_e5m2),
                                        ("FP16", np.float16), ("BF16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("lower", [1.0, 1.25, 0.75, -2.0])
def test_tie_direction_matches_ml_dtypes(fmt: str, dtype: type, lower: float) -> None:
    if float(dtype(lower)) != lower:
        pytest.skip(f"{lower} not representable in {fmt}")
    r = tie_flip(fmt, lower, 2.0 ** -20)
    uint = np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16
    code = np.array([lower], dtype=np.float32).astype(dtype).view(uint).astype(np.int64)
    # next value up: magnitude code +1 for positives, −1 for negatives
    nxt = (code + (1 if lower > 0 else -1)).astype(uint)
    assert r.upper == float(nxt.view(dtype)[0])
    assert r.rounded_midpoint == float(np.float32(r.midpoint).astype(dtype))
    assert r.rounded_plus == float(np.float32(r.midpoint + 2.0 ** -20).astype(dtype))
    assert r.rounded_minus == float(np.float32(r.midpoint - 2.0 ** -20).astype(dtype))
    assert r.rounded_plus != r.rounded_minus  # the perturbation always decides


@pytest.mark.parametrize("fmt, dtype", [("E4M3FN", ml_dtypes.float8_e4m3fn), ("E5M2", ml_dtypes.float8_e5m2),
                                        ("E2M1", ml_dtypes.float4_e2m1fn), ("BF16", ml_dtypes.bfloat16)])
def test_tie_points_match_ml_dtypes(fmt: str, dtype: type) -> None:
    t = tie_points(fmt, 0.01, 8.0)
    assert t.midpoint.size > 0
    assert np.all((t.midpoint >= 0.01) & (t.midpoint <= 8.0))
    rounded = t.midpoint.astype(np.float32).astype(dtype).astype(np.float64)
    np.testing.assert_array_equal(rounded, np.where(t.rounds_up, t.upper, t.lower))
    # the neighbours are values of the format
    assert np.all(t.lower.astype(np.float32).astype(dtype).astype(np.float64) == t.lower)
    with pytest.raises(ValueError, match="lo"):
        tie_points(fmt, 2.0, 1.0)


def test_flip_sensitive_marks_points_near_midpoints() -> None:
    x = np.array([1.0 + 2.0 ** -8, 1.0 + 2.0 ** -9, 1.0, 1.0 + 2.0 ** -8 - 2.0 ** -18])
    delta = 2.0 ** -16
    got = flip_sensitive(x, "BF16", delta)
    ref = [float(ml_dtypes.bfloat16(v - delta)) != float(ml_dtypes.bfloat16(v + delta)) for v in x]
    assert got.tolist() == ref == [True, False, False, True]


# ------------------------------------------------------------------------------------------------
# fake quantization and the STE
# ------------------------------------------------------------------------------------------------


def test_fake_quant_scalars() -> None:
    assert fake_quant_scalar(0.6, 0.25) == 0.5  # 2.4 → 2 → 0.5
    assert fake_quant_scalar(2.0, 0.25) == 1.75  # 8 → clamp 7 → 1.75
    ref = torch.fake_quantize_per_tensor_affine(torch.tensor([0.6, 2.0]), 0.25, 0, -7, 7)
    assert ref.tolist() == [0.5, 1.75]


@pytest.mark.parametrize("scale", [0.25, 2.0 ** -5, 1.0])
@pytest.mark.parametrize("zero_point", [0, 3, -2])
def test_fake_quant_tensor_and_ste_match_torch(scale: float, zero_point: int) -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(4000) * 8 * scale).astype(np.float32)
    x[:8] = (np.arange(8) - 4 + 0.5).astype(np.float32) * scale  # exact ties x/s = k + 0.5
    ours = fake_quant(x, scale, zero_point, -8, 7)
    xt = torch.from_numpy(x).requires_grad_(True)
    ref = torch.fake_quantize_per_tensor_affine(xt, scale, zero_point, -8, 7)
    np.testing.assert_array_equal(ours.astype(np.float32).view(np.uint32),
                                  ref.detach().numpy().view(np.uint32))
    ref.sum().backward()
    assert xt.grad is not None
    np.testing.assert_array_equal(fake_quant_grad_mask(x, scale, zero_point, -8, 7).astype(np.float32),
                                  xt.grad.numpy())


def test_fake_quant_broadcasts_per_channel() -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 50)).astype(np.float32)
    scales = np.array([0.5, 0.25, 0.125, 2.0 ** -6])
    zps = np.array([0, 1, -1, 2])
    ours = fake_quant(x, scales[:, None], zps[:, None], -8, 7)
    ref = torch.fake_quantize_per_channel_affine(torch.from_numpy(x), torch.from_numpy(scales).float(),
                                                 torch.from_numpy(zps).int(), 0, -8, 7)
    np.testing.assert_array_equal(ours.astype(np.float32).view(np.uint32), ref.numpy().view(np.uint32))


def test_fake_quant_bad_input() -> None:
    with pytest.raises(ValueError, match="scale"):
        fake_quant(1.0, 0.0)
    with pytest.raises(ValueError, match="qmin"):
        fake_quant(1.0, 1.0, 0, 7, -7)
    with pytest.raises(ValueError, match="zero_point"):
        fake_quant(1.0, 1.0, 9, -7, 7)
    with pytest.raises(TypeError, match="zero_point"):
        fake_quant(1.0, 1.0, 0.5)
    with pytest.raises(ValueError, match="non-finite"):
        fake_quant(np.array([np.nan]), 1.0)


def test_qat_fit_clips_and_stalls() -> None:
    r = qat_linear_fit(steps=150)
    assert r.loss[-1] < r.loss[0] / 2
    assert r.clipped_fraction[0] == 0 and r.clipped_fraction[-1] == 1 / 8
    reach = (r.qmax + 0.5) * r.scale  # beyond this the STE gradient is zero
    assert r.w_latent[0] > reach and r.w_quantized[0] == r.qmax * r.scale
    assert np.all(np.abs(r.w_latent[1:]) < reach)
    # the float fit reaches the noise floor; the clipped weight keeps the quantized fit above it
    assert r.loss_float[-1] < 0.01 < r.loss[-1]


# ------------------------------------------------------------------------------------------------
# loss scaling versus tensor scaling
# ------------------------------------------------------------------------------------------------


def test_scaling_comparison_against_ml_dtypes() -> None:
    r = scaling_comparison("E5M2", n=2048, seed=4)
    rng = np.random.default_rng(4)
    data = []
    for _, c, s in (("a", -9.0, 0.5), ("b", -5.0, 0.5), ("c", -1.0, 0.5)):
        mags = 10.0 ** (c + s * rng.standard_normal(2048))
        data.append(mags * rng.choice([-1.0, 1.0], 2048))
    amax = max(float(np.max(np.abs(d))) for d in data)
    assert r.loss_scale * amax <= 57344.0 < 2 * r.loss_scale * amax
    assert math.log2(r.loss_scale) == int(math.log2(r.loss_scale))

    def underflow(d: np.ndarray, es: float) -> float:
        y = np.clip(d * es, -57344.0, 57344.0).astype(np.float32).astype(ml_dtypes.float8_e5m2)
        return float(np.mean(y.astype(np.float64) == 0))

    for i, d in enumerate(data):
        es = 57344.0 / float(np.max(np.abs(d)))
        assert r.underflow_fraction["none"][i] == underflow(d, 1.0)
        assert r.underflow_fraction["loss_scale"][i] == underflow(d, r.loss_scale)
        assert r.underflow_fraction["tensor_scale"][i] == underflow(d, es)
    # no scaling loses the smallest tensor; one loss scale rescues the middle one but not the
    # smallest (the tensors span more than E5M2's range); per-tensor scales keep every tensor
    assert r.underflow_fraction["none"][0] == 1.0
    assert r.underflow_fraction["loss_scale"][1] == 0.0 < r.underflow_fraction["loss_scale"][0]
    assert max(r.underflow_fraction["tensor_scale"]) == 0.0


def test_all_cliffs_is_json(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from lowprec.simulations.studies.cliffs import main

    json.dumps(all_cliffs(), allow_nan=False)
    out = tmp_path / "cliffs.json"
    assert main(["--json", str(out)]) == 0
    assert set(json.loads(out.read_text())) >= {"absorption", "softmax_saturation", "tie_flip", "qat_fit"}


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="base"):
        absorption("FP32", 1e-8, base=1.1)  # 1.1 is not a float32 value
    with pytest.raises(ValueError, match="signed floating-point"):
        absorption("INT8")
    with pytest.raises(ValueError, match="target"):
        softmax_saturation("FP32", [1.0, 2.0], target=2)
    with pytest.raises(ValueError, match="finite"):
        softmax_saturation("FP32", [1.0, float("nan")])
    with pytest.raises(ValueError, match="largest finite"):
        tie_flip("E4M3FN", 448.0)
    with pytest.raises(ValueError, match="lrs"):
        update_stall_sweep([0.0])
    with pytest.raises(ValueError, match="steps"):
        update_stall_sweep(steps=0)
