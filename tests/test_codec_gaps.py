"""The stochastic-rounding threshold at its own edge (issue 19, found by the mutation harness).

The rule is "round up iff the element's 32 random bits u < floor(frac · 2^32)", frac the position
of x between its two grid neighbours. Random data hits u == floor(frac · 2^32) with probability
2^-32, so a `<=` slip survives every statistical test. Here x is built from the element's own
random word (`formats.philox.random_u32`, checked against the Random123 known answers in
test_codec_stream) so that frac · 2^32 equals u exactly (round down) or u + 1 (round up), on both
codec paths, for a normal value (the fused paths) and a subnormal one (the general path).
"""

from __future__ import annotations

import numpy as np
import pytest

from lowprec.formats import CastPolicy, Rounding, codec, encode
from lowprec.formats.philox import random_u32

SEED = 2026
#: (grid value, its E4M3FN code, the quantum there): 1.0 = 0 0111 000 (normal, the next value 1.125
#: is code 0x39); 3·2^-9 = 0 0000 011 (subnormal, taken by the general path under stochastic
#: rounding; the next value 4·2^-9 is code 0x04)
BASES = {"normal": (1.0, 0x38, 2.0**-3), "subnormal": (3 * 2.0**-9, 0x03, 2.0**-9)}


@pytest.mark.parametrize("base", list(BASES))
@pytest.mark.parametrize("path", ["numpy", "fast"])
def test_stochastic_threshold_is_strict(path: str, base: str) -> None:
    value, code, quantum = BASES[base]
    n = 16
    words = random_u32(SEED, 0, n).astype(np.int64)
    i = int(np.flatnonzero((words > 0) & (words < 2**32 - 1))[0])
    u = int(words[i])
    pol = CastPolicy(rounding=Rounding.STOCHASTIC)
    x = np.full(n, value)
    x[i] = value + u * quantum / 2.0**32  # frac · 2^32 == u: up iff u < u, never (exact in float64)
    assert (x[i] - value) / quantum * 2.0**32 == u
    with codec.codec_path(path):
        assert int(encode(x, "E4M3FN", pol, seed=SEED)[i]) == code
        x[i] = value + (u + 1) * quantum / 2.0**32  # frac · 2^32 == u + 1: u < u + 1, always up
        assert int(encode(x, "E4M3FN", pol, seed=SEED)[i]) == code + 1


@pytest.mark.parametrize("path", ["numpy", "fast"])
@pytest.mark.parametrize("negative", ["raise", "nan"])
def test_minus_zero_is_a_zero_for_unsigned_formats(path: str, negative: str) -> None:
    """-0 follows the zero rule, never the negative-number rule: with zeros mapped to the smallest
    value (E8M0 code 0x00 = 2^-127) it encodes like +0, whatever negatives do."""
    from lowprec.formats import UnsignedNegative, UnsignedZero

    pol = CastPolicy(unsigned_zero=UnsignedZero.SMALLEST, unsigned_negative=UnsignedNegative(negative))
    with codec.codec_path(path):
        assert encode(np.array([-0.0, 0.0], np.float32), "E8M0", pol).tolist() == [0x00, 0x00]
        assert encode(np.array([-0.0, 0.0]), "E8M0", pol).tolist() == [0x00, 0x00]


@pytest.mark.parametrize("base", list(BASES))
def test_stochastic_threshold_is_floored(base: str) -> None:
    """frac · 2^32 = u + 1/2 is not an integer: the threshold floor(u + 1/2) = u, so u itself rounds
    down (a ceiling would send it up), in the one-value twin and in both vector paths."""
    from lowprec.formats.scalar import encode_scalar

    value, code, quantum = BASES[base]
    words = random_u32(SEED, 0, 16).astype(np.int64)
    i = int(np.flatnonzero((words > 0) & (words < 2**32 - 1))[0])
    u = int(words[i])
    pol = CastPolicy(rounding=Rounding.STOCHASTIC)
    x = np.full(16, value)
    x[i] = value + (u + 0.5) * quantum / 2.0**32
    assert (x[i] - value) / quantum * 2.0**32 == u + 0.5
    assert encode_scalar(float(x[i]), "E4M3FN", pol, u32=u) == code
    assert encode_scalar(float(x[i]), "E4M3FN", pol, u32=u - 1) == code + 1
    for path in ("numpy", "fast"):
        with codec.codec_path(path):
            assert int(encode(x, "E4M3FN", pol, seed=SEED)[i]) == code, path
