"""Round to odd and stochastic rounding with N random bits against gfloat (issue 28 item 5).

- Round to odd (`rounding='to_odd'`) on the OCP/IEEE formats under every overflow rule, composed
  from gfloat's directed roundings (`tests.gfloat_oracle.round_to_odd`).
- Stochastic rounding with `random_bits=N` and each `sr_fraction` rule against gfloat's
  `round_float(..., srbits, srnumbits=N)` in the matching stochastic mode, on a fixed random
  stream: element i's 32 random bits are the Philox word `formats.philox.random_u32(seed, i)` and
  gfloat is handed srbits = the top N bits of its complement (the rule `SrFraction` states).
- The default (random_bits=None) is the 32-bit truncating rule code for code; integer grids under
  both new modes against the rule written with Python fractions.
Codes are compared as unsigned integers, on both codec paths where stated."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats import codec, philox
from tests.gfloat_oracle import codes_report, comparable, format_inputs, gfloat_codes

OVERFLOWS = ("nonfinite", "saturate", "saturate_propagate")
RTO_FORMATS = ("E4M3FN", "E5M2", "E2M1", "E3M2", "BF16", "FP16")
SR_FORMATS = ("E4M3FN", "E5M2", "E2M1", "BF16", "p3109_k8p3se", "p3109_k8p1ue", "p3109_k8p4uf")
SR_FRACTIONS = ("truncate", "nearest_even", "nearest_odd", "half")
SEED = 0x5EED_0F_B175


def _inputs(name: str, n_random: int) -> np.ndarray:
    x = format_inputs(name, n_random=n_random)
    fmt = F.get_format(name)
    return x if fmt.has_nan else x[~np.isnan(x)]


def _overflows(name: str) -> tuple[str, ...]:
    fmt = F.get_format(name)
    return OVERFLOWS if (fmt.has_inf or fmt.has_nan) else ("saturate",)


@pytest.mark.parametrize("name", RTO_FORMATS)
def test_round_to_odd_as_gfloat(name: str) -> None:
    x = _inputs(name, 400)
    if name in ("BF16", "FP16"):  # the 16-bit grids: a sample of their values and midpoints
        x = np.random.default_rng(1).choice(x, 6000, replace=False)
    for overflow in _overflows(name):
        pol = F.CastPolicy(rounding="to_odd", overflow=overflow)
        want = comparable(gfloat_codes(name, x, "to_odd", overflow), name)
        for path in ("numpy", "fast"):
            with codec.codec_path(path):
                got = comparable(F.encode(x, name, pol), name)
            assert np.array_equal(got, want), codes_report(x, want, got, f"{overflow}/{path}")


def test_round_to_odd_keeps_the_sticky_bit() -> None:
    """Why round to odd exists: rounding to odd at p + 2 bits, then to nearest even at p bits, is the
    single rounding (here BF16 → E4M3FN from float32: 9 bits kept, then 4)."""
    x = format_inputs("E4M3FN", n_random=3000)
    x = x[np.isfinite(x) & (np.abs(x) <= 448)]
    via = F.quantize(F.quantize(x, "BF16", F.CastPolicy(rounding="to_odd")), "E4M3FN",
                     F.CastPolicy(overflow="saturate"))
    once = F.quantize(x, "E4M3FN", F.CastPolicy(overflow="saturate"))
    np.testing.assert_array_equal(via.view(np.uint32), once.view(np.uint32))
    twice = F.quantize(F.quantize(x, "BF16"), "E4M3FN", F.CastPolicy(overflow="saturate"))
    assert not np.array_equal(twice, once)  # nearest-even twice does double-round somewhere


def _sr_case(name: str, bits: int, fraction: str, overflow: str, path: str, x: np.ndarray) -> None:
    pol = F.CastPolicy(rounding="stochastic", random_bits=bits, sr_fraction=fraction, overflow=overflow,
                       unsigned_negative="nan")
    u = philox.random_u32(SEED, 0, x.size)
    srbits = (~u) >> np.uint32(32 - bits)
    want = comparable(gfloat_codes(name, x, "stochastic", overflow, srbits=srbits, srnumbits=bits,
                                   sr_fraction=fraction), name)
    with codec.codec_path(path):
        got = comparable(F.encode(x, name, pol, seed=SEED), name)
    assert np.array_equal(got, want), codes_report(x, want, got, f"N={bits}/{fraction}/{overflow}/{path}")


@pytest.mark.parametrize("name", SR_FORMATS)
def test_stochastic_bits_as_gfloat_srnumbits(name: str) -> None:
    """Every fraction rule × N ∈ {1, 2, 3, 5, 8, 13, 32} × overflow rules, on the numpy reference path."""
    x = _inputs(name, 300)
    if name == "BF16":
        x = np.random.default_rng(2).choice(x, 4000, replace=False)
    for bits in (1, 2, 3, 5, 8, 13, 32):
        for fraction in SR_FRACTIONS:
            for overflow in _overflows(name)[:2]:
                _sr_case(name, bits, fraction, overflow, "numpy", x)


@pytest.mark.parametrize("name", ["E4M3FN", "p3109_k8p1ue", "p3109_k8p3se"])
@pytest.mark.parametrize("fraction", SR_FRACTIONS)
def test_stochastic_bits_as_gfloat_compiled(name: str, fraction: str) -> None:
    """The compiled kernels on the same streams (N = 3: the fraction's rounding and the half rule's
    offset decide often enough to be seen)."""
    if codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    x = _inputs(name, 300)
    _sr_case(name, 3, fraction, "nonfinite", "fast", x)


@pytest.mark.parametrize("path", ["numpy", "fast"])
@pytest.mark.parametrize("name", ["E4M3FN", "E2M1", "INT8", "E8M0"])
def test_default_is_32_truncated_bits(path: str, name: str) -> None:
    """random_bits=None is the rule u < floor(f·2^32), i.e. random_bits=32 with the fraction
    truncated, code for code (the random bits are the word's complement for that reason)."""
    fmt = F.get_format(name)
    x = np.random.default_rng(3).standard_normal(40_000).astype(np.float32) * 3
    if not fmt.signed:
        x = np.abs(x) + np.float32(2.0**-100)
    base = F.CastPolicy(rounding="stochastic", overflow="saturate")
    with codec.codec_path(path):
        a = F.encode(x, fmt, base, seed=SEED)
        b = F.encode(x, fmt, base.with_(random_bits=32, sr_fraction="truncate"), seed=SEED)
        c = F.encode(x, fmt, base.with_(random_bits=8), seed=SEED)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


def _int_rule(v: float, rounding: str, u: int, bits: int, fraction: str) -> int:
    """An integer grid's rounding of v written with fractions (INT8: clamp to -128..127)."""
    q = Fraction(v)
    mag = abs(q)
    n = math.floor(mag)
    f = mag - n
    if f == 0:
        up = False
    elif rounding == "to_odd":
        up = n % 2 == 0
    else:
        qbits = bits + 1 if fraction == "half" else bits
        scaled = f * 2**qbits
        t = math.floor(scaled)
        d = scaled - t
        if fraction in ("nearest_even", "nearest_odd") and (
                d > Fraction(1, 2) or (d == Fraction(1, 2) and (t % 2 == (1 if fraction == "nearest_even" else 0)))):
            t += 1
        r = ((~u) & 0xFFFFFFFF) >> (32 - bits)
        up = (t + 2 * r + 1 >= 2**qbits) if fraction == "half" else (t + r >= 2**qbits)
    m = n + int(up)
    return max(-128, min(127, -m if q < 0 else m)) & 0xFF


@pytest.mark.parametrize("path", ["numpy", "fast"])
def test_integer_grids_round_to_odd_and_with_few_bits(path: str) -> None:
    x = np.concatenate([np.arange(-140, 140, 0.25), np.random.default_rng(4).uniform(-150, 150, 3000)])
    x = x.astype(np.float32)
    u = philox.random_u32(SEED, 0, x.size)
    cases = [("to_odd", 32, "truncate")] + [("stochastic", b, fr) for b in (1, 3) for fr in SR_FRACTIONS]
    for rounding, bits, fraction in cases:
        pol = F.CastPolicy(rounding=rounding, random_bits=bits, sr_fraction=fraction, overflow="saturate")
        want = np.array([_int_rule(float(v), rounding, int(w), bits, fraction) for v, w in zip(x, u)])
        with codec.codec_path(path):
            got = F.encode(x, F.INT8, pol, seed=SEED)
        assert np.array_equal(got.astype(np.int64), want), codes_report(x, want, got, f"{rounding}/{bits}/{fraction}")


def test_policy_fields_are_checked() -> None:
    with pytest.raises(ValueError, match=r"random_bits=0 must be None .* or an integer in 1\.\.32"):
        F.CastPolicy(rounding="stochastic", random_bits=0)
    with pytest.raises(ValueError, match=r"random_bits=33"):
        F.CastPolicy(random_bits=33)
    with pytest.raises(ValueError, match="sr_fraction='up' is not one of"):
        F.CastPolicy(sr_fraction="up")
    assert F.CastPolicy(rounding="round_to_odd").rounding is F.Rounding.TO_ODD
    assert F.CastPolicy(rounding="TiesToAway").rounding is F.Rounding.NEAREST_AWAY
    assert F.CastPolicy(overflow="SatPropagate").overflow is F.Overflow.SATURATE_PROPAGATE
    assert F.CastPolicy(overflow="satfinite").overflow is F.Overflow.SATURATE
    assert F.CastPolicy(overflow="OvfInf").overflow is F.Overflow.NONFINITE
    with pytest.raises(ValueError, match="overflow='saturate_propagate' needs a format with Inf or NaN"):
        F.encode([1.0], "E2M1", F.CastPolicy(overflow="saturate_propagate"))


@pytest.mark.parametrize("name", ["E4M3FN", "E8M0", "p3109_k8p1se", "p3109_k8p4ue", "INT4"])
def test_scalar_twin_agrees_on_the_new_modes(name: str) -> None:
    """`encode_scalar` (exact rationals) fed each element's 32 random bits gives the array codec's
    codes under round to odd and every N-bit stochastic rule."""
    fmt = F.get_format(name)
    x = np.random.default_rng(6).standard_normal(1500).astype(np.float32) * 4
    if not fmt.signed:
        x = np.abs(x) + np.float32(2.0**-20)
    u = philox.random_u32(SEED, 0, x.size)
    policies = [F.CastPolicy(rounding="to_odd", overflow="saturate")] + [
        F.CastPolicy(rounding="stochastic", random_bits=b, sr_fraction=fr, overflow="saturate")
        for b in (2, 7) for fr in SR_FRACTIONS]
    for pol in policies:
        got = F.encode(x, fmt, pol, seed=SEED)
        want = [F.encode_scalar(float(v), fmt, pol, u32=int(w)) for v, w in zip(x, u)]
        assert got.astype(np.int64).tolist() == want, pol
