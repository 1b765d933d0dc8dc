"""Stochastic rounding's random stream (formats.philox) and what the codec does with it.

Philox-4x32-10 against Random123's known-answer vectors, in its three implementations (pure Python,
numpy, compiled); the element → (counter, word) layout; stochastic codes of both codec paths against
the scalar twin fed the same bits; independence from threads, chunk sizes and paths; how rng= and
seed= become the key; and the statistics: P(up) equals the input's fractional position between its
grid neighbours, within binomial tolerance.
"""

from __future__ import annotations

import math
from typing import Iterator

import numpy as np
import pytest

from lowprec import formats as F
from lowprec.formats import codec, philox
from lowprec.gpu.vectors import random_inputs, structured_inputs
from tests.backends import CODEC_FORMATS

# Random123 kat_vectors: "philox4x32 10" counter[4] key[2] -> output[4]
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]
PATHS = ["numpy", "fast"]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "fast" and codec.compiled_kernels() is None:
        pytest.skip("numba is not installed: no compiled path")
    with codec.codec_path(request.param):
        yield request.param


@pytest.mark.parametrize("counter, key, want", KAT)
def test_philox_known_answers(counter: tuple[int, int, int, int], key: tuple[int, int],
                              want: tuple[int, int, int, int]) -> None:
    assert philox.philox4x32_10(counter, key) == want


def test_philox_implementations_agree_with_known_answer_and_each_other() -> None:
    # our streams use counters (n lo, n hi, 0, 0): the first KAT vector is n = 0 under key 0
    np.testing.assert_array_equal(np.stack(philox.philox4x32_10_array(np.array([0]), 0), 1)[0], KAT[0][2])
    n = np.array([0, 1, 255, 256, 2**32 - 1, 2**32, 2**40 + 12345, 2**64 - 1], np.uint64)
    key = 0x0123456789ABCDEF
    want = np.array([philox.philox4x32_10((int(c) & 0xFFFFFFFF, int(c) >> 32, 0, 0),
                                          (key & 0xFFFFFFFF, key >> 32)) for c in n], np.uint32)
    np.testing.assert_array_equal(np.stack(philox.philox4x32_10_array(n, key), 1), want)
    kernels = codec.compiled_kernels()
    if kernels is not None:
        np.testing.assert_array_equal(kernels.philox_words(n, key & 0xFFFFFFFF, key >> 32), want)


def test_element_layout() -> None:
    # element i: counter = i without bits 8–9, word = bits 8–9 of i
    assert philox.element_counter(0) == (0, 0)
    assert philox.element_counter(255) == (255, 0)
    assert philox.element_counter(256) == (0, 1)
    assert philox.element_counter(1023) == (255, 3)
    assert philox.element_counter(1024) == (256, 0)
    assert philox.element_counter(5 * 1024 + 2 * 256 + 7) == (5 * 256 + 7, 2)
    with pytest.raises(ValueError, match="must be non-negative"):
        philox.element_counter(-1)
    key = 2**64 - 3
    for lo, hi in [(0, 1), (0, 3000), (700, 2100), (2**33 - 5, 2**33 + 1030)]:
        want = np.array([philox.random_u32_scalar(key, i) for i in range(lo, hi)], np.uint32)
        np.testing.assert_array_equal(philox.random_u32(key, lo, hi), want)


# ---- the codes -----------------------------------------------------------------------------------

def _sr_policy(fmt: F.Format) -> F.CastPolicy:
    return F.CastPolicy(rounding="stochastic", overflow="saturate", unsigned_zero="smallest",
                        unsigned_negative="magnitude", nan_to_finite="zero")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", list(CODEC_FORMATS), ids=lambda f: f.name)
def test_stochastic_codes_match_the_scalar_rule(path: str, fmt: F.Format, dtype: type) -> None:
    """Element i rounds with random_u32_scalar(key, i): both paths equal encode_scalar fed it."""
    x = structured_inputs(fmt) if fmt.bits <= 16 else random_inputs(F.BF16, 4000, seed=3)
    x = x[~np.isnan(x)]
    x = np.random.default_rng(2).choice(x, min(x.size, 3000), replace=False).astype(dtype)
    if dtype == np.float64:
        x = x * (1 + 2.0**-30)
    key = 0xDEADBEEF12345678
    pol = _sr_policy(fmt)
    got = F.encode(x, fmt, pol, seed=key)
    u32 = philox.random_u32(key, 0, x.size)
    want = np.array([F.encode_scalar(float(v), fmt, pol, u32=int(u)) for v, u in zip(x, u32)])
    np.testing.assert_array_equal(got.astype(np.int64), want)


@pytest.mark.parametrize("name", ["E4M3FN", "E5M2", "E2M1", "BF16", "E8M0", "FP16", "INT8", "INT4"])
def test_stream_is_independent_of_threads_chunks_and_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fmt = F.get_format(name)
    x = np.random.default_rng(5).standard_normal(2 * (1 << 20) + 1234).astype(np.float32)
    pol = _sr_policy(fmt)
    results = []
    for path_name in PATHS:
        if path_name == "fast" and codec.compiled_kernels() is None:
            continue
        with codec.codec_path(path_name):
            for threads in (1, 2, 3):
                before = codec.set_codec_threads(threads)
                try:
                    results.append(F.encode(x, fmt, pol, seed=77))
                finally:
                    codec.set_codec_threads(before)
    with codec.codec_path("numpy"):
        monkeypatch.setattr(codec, "CHUNK", 3000)  # chunks that split tiles
        results.append(F.encode(x, fmt, pol, seed=77))
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])
    # and the first elements are those of a shorter call: the stream is indexed, not sequential
    np.testing.assert_array_equal(F.encode(x[:5000], fmt, pol, seed=77), results[0][:5000])


def test_rng_and_seed_give_the_key(path: str) -> None:
    x = np.random.default_rng(0).standard_normal(40_000).astype(np.float32)
    pol = _sr_policy(F.E4M3FN)
    rng = np.random.default_rng(123)
    by_rng = F.encode(x, F.E4M3FN, pol, rng=rng)
    reference = np.random.default_rng(123)
    key = int(reference.integers(0, 2**64, dtype=np.uint64))
    np.testing.assert_array_equal(by_rng, F.encode(x, F.E4M3FN, pol, seed=key))
    assert rng.integers(0, 2**32) == reference.integers(0, 2**32)  # one draw per call, whatever the size
    assert not np.array_equal(F.encode(x, F.E4M3FN, pol, seed=key + 1), by_rng)
    np.testing.assert_array_equal(F.quantize(x, F.E4M3FN, pol, seed=key),
                                  F.decode(by_rng, F.E4M3FN))


def test_seed_errors() -> None:
    pol = _sr_policy(F.E4M3FN)
    x = np.ones(3, np.float32)
    with pytest.raises(ValueError, match=r"seed=-1 is out of range: it must be in \[0, 2\*\*64\)"):
        F.encode(x, F.E4M3FN, pol, seed=-1)
    with pytest.raises(ValueError, match="out of range"):
        F.encode(x, F.E4M3FN, pol, seed=2**64)
    with pytest.raises(TypeError, match="seed must be an integer"):
        F.encode(x, F.E4M3FN, pol, seed=1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="seed must be an integer"):
        F.encode(x, F.E4M3FN, F.CastPolicy(), seed="7")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="rng= or seed=, not both"):
        F.encode(x, F.E4M3FN, pol, rng=np.random.default_rng(0), seed=1)
    with pytest.raises(TypeError, match="needs rng=numpy.random.Generator"):
        F.encode(x, F.E4M3FN, pol)


# ---- statistics ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, lo, gap", [
    ("E4M3FN", 1.0, 2.0**-3), ("E4M3FN", -2.0**-7, -2.0**-9),  # a normal gap; a negative subnormal one
    ("E5M2", 2.0**10, 2.0**8), ("E2M1", 4.0, 2.0), ("E2M1", 0.0, 0.5), ("BF16", 3.0, 2.0**-6),
    ("E8M0", 2.0**5, 2.0**5), ("INT8", -7.0, -1.0), ("FP16", 2.0**-24, 2.0**-24),
])
@pytest.mark.parametrize("frac", [0.0625, 0.3, 0.5, 0.875])
def test_probability_up_is_the_fractional_position(path: str, name: str, lo: float, gap: float,
                                                   frac: float) -> None:
    """x = lo + frac·gap between grid neighbours lo and lo + gap: the share of elements rounded to
    lo + gap is within 5 binomial standard errors of frac (false failure rate < 1e-6 per case)."""
    fmt = F.get_format(name)
    x = np.float32(lo + frac * gap)
    frac = (float(x) - lo) / gap  # the float32 input's own position (0.3 is not exact)
    n = 200_000
    q = F.quantize(np.full(n, x), fmt, _sr_policy(fmt), seed=int(frac * 1e6) + n)
    ups = float(np.mean(q == np.float32(lo + gap)))
    assert set(np.unique(q).tolist()) <= {lo, lo + gap}
    se = math.sqrt(frac * (1 - frac) / n)
    assert abs(ups - frac) <= 5 * se + 2.0**-32, (ups, frac, se)


def test_random_words_are_uniform() -> None:
    """The compiled stream's words: each of the 32 bits is set with probability 1/2 (5 s.e.)."""
    words = philox.random_u32(0x5EED, 0, 1 << 20)
    bits = (words[:, None] >> np.arange(32, dtype=np.uint32)) & 1
    share = bits.mean(axis=0)
    se = math.sqrt(0.25 / words.size)
    assert np.all(np.abs(share - 0.5) <= 5 * se), share
