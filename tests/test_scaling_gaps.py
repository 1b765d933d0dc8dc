"""Clipped fractions at encode scales ≠ 1 and the Monte-Carlo variance estimator (issue 19).

The clipped-fraction oracle is written from the format: an element clips when its scaled magnitude
lies beyond the top rounding bin of the largest finite value F, i.e. above F + gap/2 (gap = F minus
the next value below, both read from ml_dtypes), or exactly on that edge when F's code is odd (the
nearest-even tie then goes up, past F). The scaled magnitude is |x · encode_scale| — float64 in
`quantize_scaled`, float32 (Transformer Engine's kernels) in the delayed scaler — or |x / decode
scale| with a scale format. Scales are chosen ≠ 1 (powers of two, so that elements can sit exactly
on the edge, and a non-power-of-two), where the encode and the decode scale differ.

The variance estimator is compared with `np.var(ddof=1)`, and through a two-trial run, where the
sample variance is 2·(ΔO₀ − mean)².
"""

from __future__ import annotations

import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from lowprec import formats
from lowprec.simulations.scaling import delayed as D
from lowprec.simulations.studies.attention import _Sums, make_inputs, run_attention
from lowprec.simulations.scaling import clipped_mask, error_report, quantize_scaled
from tests.block_oracles import step

ML = {"E4M3FN": ml_dtypes.float8_e4m3fn, "E5M2": ml_dtypes.float8_e5m2}


def clip_edge(name: str) -> tuple[float, bool]:
    """(F + gap/2, whether the edge itself clips), from ml_dtypes: E4M3FN 464 (0x7E even: no),
    E5M2 61440 (0x7B odd: yes)."""
    dt = ML[name]
    fmax = float(ml_dtypes.finfo(dt).max)
    code = int(np.array([fmax], np.float32).astype(dt).view(np.uint8)[0])
    below = float(np.array([code - 1], np.uint8).view(dt).astype(np.float64)[0])
    return fmax + (fmax - below) / 2, code % 2 == 1


def oracle_clipped(scaled_magnitude: np.ndarray, name: str) -> np.ndarray:
    edge, edge_clips = clip_edge(name)
    v = np.asarray(scaled_magnitude, np.float64)
    return (v > edge) | ((v == edge) & edge_clips)


def test_clip_edges_worked() -> None:
    assert clip_edge("E4M3FN") == (464.0, False)
    assert clip_edge("E5M2") == (61440.0, True)


def data_with_edges(name: str, encode_scale: float, n: int = 2000, seed: int = 0) -> np.ndarray:
    """Normals of about F / encode_scale (so a few per cent clip), plus ±edge / scale and one float32
    step either side (exact for a power-of-two scale)."""
    edge, _ = clip_edge(name)
    fmax = float(ml_dtypes.finfo(ML[name]).max)
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * fmax / encode_scale / 2.2).astype(np.float32)
    e = edge / encode_scale
    extra = [float(step(e, d)) * s for d in (-1, 0, 1) for s in (1, -1)]
    x[: len(extra)] = extra
    return x


@pytest.mark.parametrize("name", list(ML))
@pytest.mark.parametrize("amax_over_max", [0.25, 0.5, 100 / 448])
def test_tensor_clipped_fraction_at_scale_not_one(name: str, amax_over_max: float) -> None:
    fmax = float(ml_dtypes.finfo(ML[name]).max)
    amax = fmax * amax_over_max
    enc = float(np.float32(fmax / amax))  # encode scale F / amax, stored as float32
    assert enc != 1.0
    x = data_with_edges(name, enc)
    st = quantize_scaled(x, name, "tensor", amax=amax)
    assert float(st.encode_scales) == enc
    want = oracle_clipped(np.abs(x.astype(np.float64) * enc), name)
    assert 0 < want.sum() < x.size
    np.testing.assert_array_equal(clipped_mask(x, st), want)
    assert error_report(x, st).clipped_fraction == want.mean()


@pytest.mark.parametrize("name", list(ML))
def test_row_clipped_fractions_with_per_row_amax(name: str) -> None:
    fmax = float(ml_dtypes.finfo(ML[name]).max)
    amax = np.array([fmax / 4, fmax / 16, fmax * 3, fmax / 1024])
    rows = np.stack([data_with_edges(name, fmax / a, 256, seed=i) for i, a in enumerate(amax)])
    st = quantize_scaled(rows, name, "row", amax=amax)
    enc = np.float32(fmax / amax).astype(np.float64)
    want = oracle_clipped(np.abs(rows.astype(np.float64) * enc[:, None]), name)
    rep = error_report(rows, st)
    np.testing.assert_array_equal(rep.group_clipped_fraction, want.mean(axis=1))
    assert rep.clipped_fraction == want.mean()


def test_clipped_fraction_with_an_e8m0_scale_format() -> None:
    """With scale_format E8M0 (rounding up) the decode scale is 2^ceil(log2(amax / F)) and elements
    are divided by it."""
    name = "E4M3FN"
    fmax = 448.0
    amax = np.array([100.0, 3000.0, 0.3])  # decode scales 2^-2, 2^3, 2^-10
    dec = np.array([2.0 ** math.ceil(math.log2(Fraction(a) / Fraction(fmax))) for a in amax])
    np.testing.assert_array_equal(dec, [0.25, 8.0, 2.0**-10])
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 512)) * amax[:, None] * 1.2).astype(np.float32)
    st = quantize_scaled(x, name, "row", scale_format="E8M0", amax=amax)
    want = oracle_clipped(np.abs(x.astype(np.float64) / dec[:, None]), name)
    assert 0 < want.sum()
    np.testing.assert_array_equal(clipped_mask(x, st), want)
    np.testing.assert_array_equal(error_report(x, st).group_clipped_fraction, want.mean(axis=1))
    # the elements are x / decode scale (exact: powers of two), cast nearest-even with saturation
    # (the OCP reading): ml_dtypes of the clipped quotient
    q = np.clip(x.astype(np.float64) / dec[:, None], -fmax, fmax).astype(np.float32)
    np.testing.assert_array_equal(st.codes, q.astype(ML[name]).view(np.uint8))


@pytest.mark.parametrize("name", list(ML))
@pytest.mark.parametrize("scale", [4.0, 0.37, 1 / 8])
def test_delayed_step_clipped_fraction_at_scale_not_one(name: str, scale: float) -> None:
    x = data_with_edges(name, scale, seed=2)
    scaler = D.DelayedScaler(name, initial_encode_scale=scale)
    out = scaler.quantize(x)
    s32 = np.float32(scale)
    assert out.encode_scale == float(s32)
    want = oracle_clipped(np.abs(x * s32), name)  # float32 product, as TE's cast kernel
    assert 0 < want.sum() < x.size
    m = D.cast_metrics(x, out, formats.get_format(name), 0)
    assert m["clipped_fraction"] == want.sum() / x.size
    assert m["encode_scale"] == float(s32)


@pytest.mark.parametrize("name", list(ML))
def test_delayed_block_clipped_fractions_at_scales_not_one(name: str) -> None:
    scales = np.array([4.0, 0.37, 1 / 8, 1.0, 2.5])
    xs = np.stack([data_with_edges(name, float(np.float32(s)), 512, seed=i) for i, s in enumerate(scales)])
    scaler = D.DelayedScaler(name)
    m = D.block_metrics(xs, xs.astype(np.float64), scales, scaler, formats.get_format(name))
    want = oracle_clipped(np.abs(xs * scales.astype(np.float32)[:, None]), name).mean(axis=1)
    np.testing.assert_array_equal(m["clipped_fraction"], want)


# ------------------------------------------------------------------------------------------------
# the Monte-Carlo variance estimator
# ------------------------------------------------------------------------------------------------


def test_variance_sums_equal_numpy_var_ddof1() -> None:
    rng = np.random.default_rng(9)
    samples = rng.standard_normal((37, 3, 4)) * 0.01 + 5.0
    s = _Sums((3, 4))
    for lo, hi in ((0, 10), (10, 30), (30, 37)):
        s.add(samples[lo:hi])
    np.testing.assert_allclose(s.mean, samples.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(s.variance, np.var(samples, axis=0, ddof=1), rtol=1e-9)
    one = _Sums((2,))
    one.add(np.ones((1, 2)))
    np.testing.assert_array_equal(one.variance, [0.0, 0.0])  # one draw: no variance estimate


def test_two_trial_variance_is_the_ddof1_sample_variance() -> None:
    """Two trials a, b with mean μ: the ddof = 1 variance is (a − b)²/2 = 2(a − μ)²; trial 0's ΔO
    is reported, so the run's own variance can be checked (ddof = 0 would give half)."""
    inp = make_inputs(8, 4, seed=3)
    r = run_attention(inp, "E4M3FN", "stochastic", trials=2, seed=1)
    want = 2.0 * (r.delta_o - r.mc_mean_error) ** 2
    assert want.max() > 0
    np.testing.assert_allclose(r.mc_variance, want, rtol=1e-3, atol=1e-6 * want.max())


def test_a_nan_amax_in_the_history_holds_the_scale_until_it_leaves_the_window() -> None:
    """Transformer Engine reduces the history with a max that propagates NaN, and keeps the previous
    scale for a non-finite amax: one NaN step freezes the scale for `history_len` updates."""
    s = D.DelayedScaler("E4M3FN", history_len=4)
    s.update(1.0)
    assert s.encode_scale == 448.0
    s.update(float("nan"))
    s.update(2.0)  # history [1, nan, 2]: NaN, the scale stays 448 / 1
    assert math.isnan(s.amax_from_history()) and s.encode_scale == 448.0
    for _ in range(3):  # [1, nan, 2, 3] → [nan, 2, 3, 3] → [2, 3, 3, 3]
        s.update(3.0)
    assert s.encode_scale == float(np.float32(448.0) / np.float32(3.0))
