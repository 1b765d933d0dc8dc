"""MX and NVFP4 against exact oracles where the block tests had none (issue 19):

* the shared exponent of every scale rule at its boundary amaxes — powers of two, F·2^k (rceil),
  the `even` rule's rounding midpoint (2 − 2^-(m+1))·2^k — and one float32 step either side, from
  Fraction arithmetic (floor/ceil of log2 computed exactly);
* the caller's element policy (directed roundings, nearest-away, stochastic) reaching the element
  cast of `quantize_mx` and `quantize_nvfp4`: codes from a Fraction rounding of x / scale onto the
  element grid, the grid and its codes taken from ml_dtypes.

Nothing here calls the code under test to make an expected value.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from fractions import Fraction
from functools import lru_cache

import ml_dtypes
import numpy as np
import pytest

from lowprec.formats import CastPolicy, Overflow, Rounding, get_format
from lowprec.simulations.mx import quantize_mx
from lowprec.simulations.nvfp4 import quantize_nvfp4
from tests.block_oracles import step

MX_ELEMENTS = ("E4M3FN", "E5M2", "E3M2", "E2M3", "E2M1")
#: element format → (ml_dtypes dtype, largest finite value, mantissa bits, exponent of the largest value)
ELEM = {
    "E4M3FN": (ml_dtypes.float8_e4m3fn, 448.0, 3, 8),
    "E5M2": (ml_dtypes.float8_e5m2, 57344.0, 2, 15),
    "E3M2": (ml_dtypes.float6_e3m2fn, 28.0, 2, 4),
    "E2M3": (ml_dtypes.float6_e2m3fn, 7.5, 3, 2),
    "E2M1": (ml_dtypes.float4_e2m1fn, 6.0, 1, 2),
}
BITS = {"E4M3FN": 8, "E5M2": 8, "E3M2": 6, "E2M3": 6, "E2M1": 4}


def floor_log2(v: Fraction) -> int:
    """floor(log2 v) of a positive Fraction, exactly."""
    e = v.numerator.bit_length() - v.denominator.bit_length()
    while Fraction(2) ** e > v:
        e -= 1
    while Fraction(2) ** (e + 1) <= v:
        e += 1
    return e


def ceil_log2(v: Fraction) -> int:
    e = floor_log2(v)
    return e if Fraction(2) ** e == v else e + 1


def oracle_exponent(amax: float, name: str, rule: str) -> int:
    """OCP MX v1.0 shared exponent (floor) and the variants, from the definitions; clamped to ±127,
    -127 for a zero amax."""
    _, fmax, m, emax = ELEM[name]
    a = Fraction(amax)
    if a == 0:
        return -127
    if rule == "floor":  # X = floor(log2 amax) − emax
        x = floor_log2(a) - emax
    elif rule == "ceil":  # X = ceil(log2 amax) − emax
        x = ceil_log2(a) - emax
    elif rule == "rceil":  # the smallest X with amax / 2^X ≤ F
        x = ceil_log2(a / Fraction(fmax))
    else:  # even: amax's significand rounded to m bits, ties away from zero, then floor
        e = floor_log2(a)
        q = Fraction(2) ** (e - m)
        n = a / q
        r = math.floor(n) + (1 if n - math.floor(n) >= Fraction(1, 2) else 0)
        x = floor_log2(r * q) - emax
    return max(-127, min(127, x))


def boundary_amaxes(name: str) -> list[float]:
    """Powers of two, F·2^k and the even midpoint (2 − 2^-(m+1))·2^k, each one float32 step either
    side too; over the whole E8M0 range (including the clamps at ±127)."""
    _, fmax, m, _ = ELEM[name]
    mid = 2.0 - 2.0 ** -(m + 1)
    out: list[float] = []
    for k in (-140, -130, -127, -126, -120, -20, -1, 0, 1, 3, 20, 100, 120, 125):
        for base in (2.0**k, fmax * 2.0**k, mid * 2.0**k):
            if not 1e-44 < base < 3.0e38:
                continue
            for d in (-1, 0, 1):
                v = float(step(base, d))
                if math.isfinite(v) and v > 0:
                    out.append(v)
    return sorted(set(out))


@pytest.mark.parametrize("rule", ["floor", "ceil", "rceil", "even"])
@pytest.mark.parametrize("name", MX_ELEMENTS)
def test_mx_scale_exponent_at_boundary_amaxes(name: str, rule: str) -> None:
    amaxes = boundary_amaxes(name)
    x = np.zeros((len(amaxes), 32), np.float32)
    x[:, 5] = -np.asarray(amaxes, np.float32)  # the amax is a magnitude: its sign must not matter
    x[:, 9] = np.asarray(amaxes, np.float32) / 4
    got = quantize_mx(x, name, 32, rule).scale_exponents.reshape(-1)
    want = np.array([oracle_exponent(a, name, rule) for a in amaxes])
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(amaxes[i].hex(), int(want[i]), int(got[i])) for i in bad[:5]]


def test_even_rule_midpoint_worked_example() -> None:
    # E4M3 has 3 mantissa bits: 1.9375 = 1 + 15/16 is the midpoint between 1.875 (1.111b) and 2.0;
    # ties away from zero round it up to 2.0, so the binade moves up: X = 1 − 8 = −7.
    assert oracle_exponent(1.9375, "E4M3FN", "even") == -7
    assert oracle_exponent(float(step(1.9375, -1)), "E4M3FN", "even") == -8
    got = quantize_mx(np.array([[1.9375], [float(step(1.9375, -1))]], np.float32), "E4M3FN", 1, "even")
    assert got.scale_exponents.reshape(-1).tolist() == [-7, -8]


# ------------------------------------------------------------------------------------------------
# element policies through the block quantizers
# ------------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def grid_of(name: str) -> tuple[list[Fraction], list[int]]:
    """Positive finite grid values (ascending, 0 included) and their codes, from ml_dtypes."""
    dt = ELEM[name][0]
    codes = np.arange(1 << (BITS[name] - 1), dtype=np.uint8)
    vals = codes.view(dt).astype(np.float64)
    keep = np.isfinite(vals)
    pairs = sorted(zip(vals[keep].tolist(), codes[keep].tolist()))
    return [Fraction(v) for v, _ in pairs], [c for _, c in pairs]


def round_on_grid(v: Fraction, name: str, rounding: Rounding) -> int:
    """Code of v rounded onto the element grid by `rounding`, saturating (OCP conversion)."""
    grid, codes = grid_of(name)
    sign = 1 << (BITS[name] - 1) if v < 0 else 0
    a = abs(v)
    if a >= grid[-1]:
        return codes[-1] | sign
    i = bisect_right(grid, a) - 1  # grid[i] ≤ a < grid[i + 1]
    lo, hi = grid[i], grid[i + 1]
    if a == lo:
        return codes[i] | sign
    up = {
        Rounding.TOWARD_ZERO: False,
        Rounding.UP: v > 0,  # toward +inf: magnitude up for positives only
        Rounding.DOWN: v < 0,
        Rounding.NEAREST_AWAY: a - lo >= hi - a,
        Rounding.NEAREST_EVEN: a - lo > hi - a or (a - lo == hi - a and codes[i] % 2 == 1),
    }[rounding]
    return (codes[i + 1] if up else codes[i]) | sign


DIRECTED = (Rounding.UP, Rounding.DOWN, Rounding.TOWARD_ZERO, Rounding.NEAREST_AWAY)


def mx_input(name: str, rows: int = 24, seed: int = 7) -> np.ndarray:
    """Rows of 32 spanning many binades, each with grid midpoints (ties) times its scale."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, 32)) * np.exp2(rng.integers(-12, 12, size=(rows, 1)))
    grid = [float(g) for g in grid_of(name)[0]]
    mids = [(a + b) / 2 for a, b in zip(grid[:-1], grid[1:])]
    for r in range(rows):
        amax = np.abs(x[r]).max()
        scale = 2.0 ** (math.floor(math.log2(amax)) - ELEM[name][3])
        k = min(len(mids), 12)
        x[r, 20:20 + k] = np.array(mids[-k:]) * scale * np.where(np.arange(k) % 2, -1, 1)
    return x.astype(np.float32)


@pytest.mark.parametrize("rounding", DIRECTED, ids=lambda r: r.value)
@pytest.mark.parametrize("name", MX_ELEMENTS)
def test_quantize_mx_applies_the_callers_element_policy(name: str, rounding: Rounding) -> None:
    x = mx_input(name)
    pol = CastPolicy(rounding=rounding, overflow=Overflow.SATURATE)
    got = quantize_mx(x, name, 32, "floor", policy=pol)
    assert got.policy == pol
    want = np.empty(x.shape, np.int64)
    for r in range(x.shape[0]):
        X = oracle_exponent(float(np.abs(x[r]).max()), name, "floor")
        for c in range(32):
            want[r, c] = round_on_grid(Fraction(float(x[r, c])) / Fraction(2) ** X, name, rounding)
    bad = np.argwhere(got.codes.astype(np.int64) != want)
    assert bad.size == 0, [(float(x[i, j]), int(want[i, j]), int(got.codes[i, j])) for i, j in bad[:5]]


def nvfp4_input(seed: int = 3) -> tuple[np.ndarray, list[float]]:
    """Three blocks of 16 whose NVFP4 scales are exact: tensor amax 2688 = 6·448 makes the tensor
    scale 1.0, block amaxes 2688, 6 and 0.75 make the E4M3 block scales 448, 1 and 0.125."""
    rng = np.random.default_rng(seed)
    scales = [448.0, 1.0, 0.125]
    mids = [0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0]  # E2M1 grid midpoints: ties
    x = np.empty((3, 16))
    for b, s in enumerate(scales):
        v = rng.uniform(-6, 6, 16)
        v[:7] = np.array(mids) * np.where(np.arange(7) % 2, -1, 1)
        v[15] = 6.0  # the block amax: 6 · scale
        x[b] = v * s
    return x.astype(np.float32), scales


@pytest.mark.parametrize("rounding", DIRECTED, ids=lambda r: r.value)
def test_quantize_nvfp4_applies_the_callers_element_policy(rounding: Rounding) -> None:
    x, scales = nvfp4_input()
    pol = CastPolicy(rounding=rounding, overflow=Overflow.SATURATE)
    got = quantize_nvfp4(x, policy=pol)
    assert got.policy == pol
    assert got.tensor_scale == 1.0
    want_scale_codes = np.array(scales, np.float32).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    np.testing.assert_array_equal(got.scale_codes.reshape(-1), want_scale_codes)
    want = np.array([[round_on_grid(Fraction(float(v)) / Fraction(s), "E2M1", rounding) for v in row]
                     for row, s in zip(x, scales)])
    np.testing.assert_array_equal(got.codes.astype(np.int64), want)


def _neighbour_codes(v: Fraction, name: str) -> tuple[int, int]:
    return round_on_grid(v, name, Rounding.TOWARD_ZERO), round_on_grid(v, name, Rounding.UP if v > 0 else Rounding.DOWN)


def _decode(codes: np.ndarray, name: str) -> np.ndarray:
    return codes.astype(np.uint8).view(ELEM[name][0]).astype(np.float64)


@pytest.mark.parametrize("name", ["E4M3FN", "E2M1"])
def test_quantize_mx_stochastic_policy_rounds_to_a_neighbour_without_bias(name: str) -> None:
    """Stochastic rounding: every code is one of the two neighbours of x / 2^X (exact values kept),
    and over 4000 independent blocks the mean decoded value is x / 2^X within 5 standard errors."""
    row = mx_input(name, rows=1, seed=11)[0]
    n = 4000
    x = np.tile(row, (n, 1))
    pol = CastPolicy(rounding=Rounding.STOCHASTIC, overflow=Overflow.SATURATE)
    got = quantize_mx(x, name, 32, "floor", policy=pol, rng=np.random.default_rng(1))
    X = oracle_exponent(float(np.abs(row).max()), name, "floor")
    vals = _decode(got.codes, name)
    for c in range(32):
        v = Fraction(float(row[c])) / Fraction(2) ** X
        lo_code, hi_code = _neighbour_codes(v, name)
        assert set(np.unique(got.codes[:, c]).tolist()) <= {lo_code, hi_code}, (c, float(v))
        lo, hi = float(_decode(np.array([lo_code]), name)[0]), float(_decode(np.array([hi_code]), name)[0])
        if lo == hi or abs(v) > ELEM[name][1]:
            continue  # exact, or saturated: no randomness
        p = float((v - Fraction(lo)) / (Fraction(hi) - Fraction(lo)))
        se = abs(hi - lo) * math.sqrt(p * (1 - p) / n)
        assert abs(vals[:, c].mean() - float(v)) <= 5 * se + 1e-300, (c, float(v))
    assert (got.codes != got.codes[0]).any(), "no element varied between blocks: the policy was not applied"


def test_quantize_nvfp4_stochastic_policy_rounds_to_a_neighbour() -> None:
    x, scales = nvfp4_input(seed=4)
    n = 2000
    xs = np.tile(x, (n, 1))
    pol = CastPolicy(rounding=Rounding.STOCHASTIC, overflow=Overflow.SATURATE)
    got = quantize_nvfp4(xs, policy=pol, rng=np.random.default_rng(2)).codes.reshape(n, 3, 16)
    for b, s in enumerate(scales):
        for c in range(16):
            v = Fraction(float(x[b, c])) / Fraction(s)
            assert set(np.unique(got[:, b, c]).tolist()) <= set(_neighbour_codes(v, "E2M1")), (b, c)
    assert (got != got[0]).any(), "no element varied: the stochastic policy was not applied"


def test_block_element_formats_match_the_oracle_table() -> None:
    for name, (dt, fmax, m, emax) in ELEM.items():
        f = get_format(name)
        assert (f.max, f.mantissa_bits, f.emax) == (fmax, m, emax)
        assert float(ml_dtypes.finfo(dt).max) == fmax


def test_nvfp4_tensor_amax_rules() -> None:
    """FINITE_BLOCKS (ocp): the largest amax of the blocks without NaN/±Inf; ALL: ±Inf wins."""
    from lowprec.simulations.block_conventions import TensorAmax, nvfp4_tensor_amax

    a = np.array([3.0, np.inf, np.nan, 5.0])
    bad = ~np.isfinite(a)
    assert nvfp4_tensor_amax(a, bad, TensorAmax.FINITE_BLOCKS) == 5.0
    assert nvfp4_tensor_amax(a[:2], bad[:2], TensorAmax.ALL) == np.inf
    assert nvfp4_tensor_amax(np.zeros(0), np.zeros(0, bool), TensorAmax.FINITE_BLOCKS) == 0.0
