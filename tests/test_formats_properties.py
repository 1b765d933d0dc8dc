"""Properties of every format × rounding mode (hypothesis), the readable scalar codec against the
vectorised one, and stochastic rounding's statistics against the binomial distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lowprec import formats as F
from lowprec.formats.codec import _chunk_random_u32, _chunk_seeds
from lowprec.gpu.vectors import random_inputs, structured_inputs

DETERMINISTIC = ["nearest_even", "nearest_away", "toward_zero", "up", "down"]
SIGNED_FLOATS = [f for f in F.FLOAT_FORMATS if f.signed and f.bits <= 16]
ALL_SMALL = SIGNED_FLOATS + [F.E8M0, F.INT8, F.INT4]


def _policy(fmt: F.Format, rounding: str, overflow: str = "saturate") -> F.CastPolicy:
    return F.CastPolicy(rounding=rounding, overflow=overflow, unsigned_zero="smallest",
                        unsigned_negative="magnitude", nan_to_finite="zero")


def _finite_floats(fmt: F.Format) -> st.SearchStrategy[float]:
    if fmt is F.FP32:  # float64 inputs: the interesting direction for an FP32 target
        return st.floats(-1e39, 1e39, allow_nan=False, allow_infinity=False, width=64)
    bound = float(np.float32(min(fmt.max * 4, 3.0e38)))
    return st.floats(-bound, bound, allow_nan=False, allow_infinity=False, width=32)


@pytest.mark.parametrize("rounding", DETERMINISTIC)
@pytest.mark.parametrize("fmt", ALL_SMALL, ids=lambda f: f.name)
def test_scalar_codec_agrees_with_vector_codec(fmt: F.Format, rounding: str) -> None:
    x = structured_inputs(fmt)
    x = x[~np.isnan(x)]
    if x.size > 3000:  # 16-bit formats: a seeded sample of their structured vectors
        x = np.random.default_rng(0).choice(x, 3000, replace=False)
    for overflow in (["saturate", "nonfinite"] if (fmt.has_inf or fmt.has_nan) else ["saturate"]):
        pol = _policy(fmt, rounding, overflow)
        vec = F.encode(x, fmt, pol)
        sca = np.array([F.encode_scalar(float(v), fmt, pol) for v in x])
        bad = np.flatnonzero(vec.astype(np.int64) != sca)
        assert bad.size == 0, [(float(x[i]), int(sca[i]), int(vec[i])) for i in bad[:5]]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", ALL_SMALL + [F.FP32], ids=lambda f: f.name)
def test_stochastic_fast_and_general_paths_match_the_scalar_rule(fmt: F.Format, dtype: type) -> None:
    """One chunk: the vectorised result equals encode_scalar fed the same 32 random bits."""
    x = structured_inputs(fmt) if fmt.bits <= 16 else random_inputs(fmt, 4000, seed=3)
    x = x[~np.isnan(x)]
    if not fmt.signed and isinstance(fmt, F.FloatFormat):
        x = np.abs(x)
    x = np.random.default_rng(1).choice(x, min(x.size, 4000), replace=False).astype(dtype)
    if dtype == np.float64:  # values between float32 neighbours, so float64 bits matter
        x = x * (1 + 2.0**-30)
    pol = _policy(fmt, "stochastic")
    got = F.encode(x, fmt, pol, rng=np.random.default_rng(7))
    u32 = _chunk_random_u32(int(_chunk_seeds(np.random.default_rng(7), 1)[0]), x.size)
    want = np.array([F.encode_scalar(float(v), fmt, pol, u32=int(u)) for v, u in zip(x, u32)])
    np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("rounding", DETERMINISTIC)
@pytest.mark.parametrize("fmt", SIGNED_FLOATS + [F.FP32, F.E8M0, F.INT8, F.INT4], ids=lambda f: f.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_monotone_idempotent_symmetric_within_one_gap(fmt: F.Format, rounding: str,
                                                      data: st.DataObject) -> None:
    dtype = np.float64 if fmt is F.FP32 else np.float32
    xs = np.array(data.draw(st.lists(_finite_floats(fmt), min_size=2, max_size=20)), dtype)
    if not fmt.signed and isinstance(fmt, F.FloatFormat):  # E8M0: positive magnitudes only
        xs = np.abs(xs)
        xs = xs[xs > 0] if np.any(xs > 0) else np.array([1.0], np.float32)
    pol = _policy(fmt, rounding)
    q = F.quantize(xs, fmt, pol).astype(np.float64)
    order = np.argsort(xs, kind="stable")
    assert np.all(np.diff(q[order]) >= 0), "not monotone"
    np.testing.assert_array_equal(F.quantize(q, fmt, pol), q.astype(np.float32))  # idempotent
    mirrored = {"up": "down", "down": "up"}.get(rounding, rounding)
    if not fmt.signed and isinstance(fmt, F.FloatFormat):
        return
    q_neg = F.quantize(-xs, fmt, _policy(fmt, mirrored)).astype(np.float64)
    sym = np.abs(xs) <= fmt.max  # INT8's extra -128 breaks symmetry beyond ±max
    np.testing.assert_array_equal(q_neg[sym], -q[sym])  # sign symmetry (directed modes mirror)
    inside = np.abs(xs) <= fmt.max
    if fmt is F.FP32:  # 2^32 codes: the neighbours are the float32 values around x
        for x, v in zip(xs[inside], q[inside]):
            lo = np.float32(x) if np.float32(x) <= x else np.nextafter(np.float32(x), np.float32(-np.inf))
            hi = np.nextafter(lo, np.float32(np.inf)) if lo != x else lo
            assert v in (float(lo), float(hi)), f"{x} → {v} is not one of {lo}, {hi}"
        return
    table = F.code_table(fmt)
    grid = np.unique(table.value[np.isfinite(table.value)])
    for x, v in zip(xs[inside].astype(np.float64), q[inside]):
        i = np.searchsorted(grid, x)
        lo, hi = grid[max(i - 1, 0)], grid[min(i, grid.size - 1)]
        assert lo <= v <= hi or v == x, f"{x} → {v} is not one of its neighbours {lo}, {hi}"


@pytest.mark.parametrize("fmt", [F.E4M3FN, F.E5M2, F.E2M1, F.BF16, F.INT8], ids=lambda f: f.name)
@settings(max_examples=15, deadline=None)
@given(frac=st.floats(0.02, 0.98), seed=st.integers(0, 2**32 - 1))
def test_stochastic_rounding_is_unbiased(fmt: F.Format, frac: float, seed: int) -> None:
    """x = lo + frac·gap: the rounded mean is within 5 standard errors of x, and the share of
    round-ups within 5 binomial standard errors of frac (false-failure rate below 1e-6)."""
    lo = 1.0 if fmt is not F.INT8 else 3.0
    gap = fmt.eps if fmt is not F.INT8 else 1.0
    x = np.float32(lo + frac * gap)
    frac_exact = (float(x) - lo) / gap  # the float32 input's own fractional position
    n = 20000
    q = F.quantize(np.full(n, x), fmt, _policy(fmt, "stochastic"), rng=np.random.default_rng(seed))
    ups = np.mean(q > lo)
    se = math.sqrt(frac_exact * (1 - frac_exact) / n)
    assert abs(ups - frac_exact) <= 5 * se + 2.0**-32
    assert abs(float(np.mean(q.astype(np.float64))) - float(x)) <= 5 * se * gap + 1e-12
    assert set(np.unique(q).tolist()) <= {lo, lo + gap}


def test_stochastic_rounding_is_reproducible_and_thread_independent() -> None:
    x = np.random.default_rng(0).standard_normal(3 * F.CHUNK + 17).astype(np.float32)
    pol = F.CastPolicy(rounding="stochastic", overflow="saturate")
    a = F.encode(x, F.E4M3FN, pol, rng=np.random.default_rng(42))
    b = F.encode(x, F.E4M3FN, pol, rng=np.random.default_rng(42))
    np.testing.assert_array_equal(a, b)
    big = np.tile(x, 6)  # ≥ 1M elements: the threaded path
    c = F.encode(big, F.E4M3FN, pol, rng=np.random.default_rng(42))
    np.testing.assert_array_equal(c[: x.size], a)


def test_directed_overflow_follows_ieee() -> None:
    big = np.array([1e6, -1e6, np.inf], np.float32)
    pol = F.CastPolicy(overflow="nonfinite")
    assert F.quantize(big, F.E5M2, pol.with_(rounding="toward_zero")).tolist() == [57344.0, -57344.0, np.inf]
    assert F.quantize(big, F.E5M2, pol.with_(rounding="up")).tolist() == [np.inf, -57344.0, np.inf]
    assert F.quantize(big, F.E5M2, pol.with_(rounding="down")).tolist() == [57344.0, -np.inf, np.inf]


def test_flush_subnormals() -> None:
    sub = F.E4M3FN.smallest_subnormal
    x = np.array([sub, -3 * sub, F.E4M3FN.smallest_normal], np.float32)
    got = F.quantize(x, F.E4M3FN, F.CastPolicy(subnormals="flush"))
    assert got.view(np.uint32).tolist() == np.array([0.0, -0.0, 2.0**-6], np.float32).view(np.uint32).tolist()
