"""Test vectors for cross-checking casts, generated from the format models.

Per format: every code's value, every midpoint between neighbouring values and the float32 values
one step either side of it, overflow thresholds (max, the midpoint above it, just above), subnormal
boundaries, ±0, ±Inf, NaNs with several payloads, float32 subnormals, and seeded random values over
the whole range (a uniformly drawn binary exponent, both signs; the same values on every CPU). All as float32 (the dtype kernels read);
`bf16_inputs` gives BF16 values (as float32) for kernels that read BF16: the same vectors truncated
to BF16 and, around every value and midpoint, the BF16 neighbours one step either side. The
generators are deterministic in (format, n_random, seed); a report stores the sha256 of the inputs
it used (`gpu.crosscheck.inputs_sha256`) so a replay knows it regenerated the same ones.
"""

from __future__ import annotations

import math

import numpy as np

from lowprec.formats import FloatFormat, Format, IntFormat, code_table, get_format

_NAN_BITS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA00000, 0x7F812345, 0xFFFFFFFF,
                      0xFF812345], np.uint32)


def _neighbours32(v: np.ndarray) -> np.ndarray:
    """v and the float32 values one step below and above it."""
    v = v.astype(np.float32)
    with np.errstate(over="ignore"):
        return np.concatenate([v, np.nextafter(v, np.float32(-np.inf)), np.nextafter(v, np.float32(np.inf))])


def special_inputs() -> np.ndarray:
    """±0, ±Inf, NaN payloads, float32 subnormal edges, float32 extremes."""
    f32 = np.finfo(np.float32)
    base = np.array([0.0, -0.0, np.inf, -np.inf, f32.max, -f32.max, f32.smallest_normal,
                     f32.smallest_subnormal, -f32.smallest_subnormal, 2.0**-127, 1.5 * 2.0**-127,
                     3 * 2.0**-128, 2.0**-140, 1.0, -1.0], np.float32)
    sub = np.arange(1, 1 << 23, 4099, dtype=np.uint32).view(np.float32)
    return np.concatenate([base, _NAN_BITS.view(np.float32), _neighbours32(base[np.isfinite(base)]),
                           sub, -sub])


def structured_inputs(fmt: str | Format) -> np.ndarray:
    """Every value, midpoint (±1 float32 ulp) and threshold of `fmt`, plus specials; float32."""
    f = get_format(fmt)
    if f.bits > 16:
        raise ValueError(f"vectors enumerate formats up to 16 bits; {f.name} has {f.bits}")
    t = code_table(f)
    # sorted, -0 merged with +0; which zero np.unique keeps depends on the sort the CPU runs
    # (x86-simd-sort on AVX-512 keeps -0 for some sizes), so the zero is made +0 (adding +0.0
    # changes no other value): the vectors, and the sha256 the reports record, are the same everywhere
    vals = np.unique(t.value[np.isfinite(t.value)]) + 0.0
    mids = (vals[:-1] + vals[1:]) / 2  # exact in float64; float32 holds them for ≤ 16-bit formats
    parts = [_neighbours32(vals), _neighbours32(mids)]
    mx = f.max
    top_gap = float(vals[-1] - vals[-2])
    thresholds = np.array([mx, mx + top_gap / 2, mx + top_gap, 2 * mx, mx * 1.5, -(mx + top_gap / 2),
                           -(mx + top_gap), -2 * mx], np.float64)
    with np.errstate(over="ignore"):
        parts.append(_neighbours32(thresholds.astype(np.float32)))
    if isinstance(f, FloatFormat):
        sn, nm = f.smallest_subnormal, f.smallest_normal
        edges = np.array([sn / 2, sn / 4, sn * 0.75, nm, nm - sn / 2, -sn / 2, -nm], np.float64)
        parts.append(_neighbours32(edges.astype(np.float32)))
    if isinstance(f, IntFormat):
        parts.append(_neighbours32(np.arange(f.min - 2, f.max + 2.5, 0.25)))
    parts.append(special_inputs())
    return np.concatenate(parts).astype(np.float32)


def random_inputs(fmt: str | Format, n: int = 1_000_000, seed: int = 0) -> np.ndarray:
    """n seeded float32 values: magnitudes from below the smallest subnormal to above max with a
    binary exponent drawn uniformly and a significand uniform in [1, 2), random signs (a third of
    them uniform within [-max, max] to stress the dense region). The same values on every machine:
    no transcendental function is applied to an array (numpy's SIMD `exp2`/`log2` differ by an ulp
    between CPUs, AVX-512 against AVX2, which changed these vectors and so the sha256 the committed
    cross-check reports record); the exponent is applied exactly (`ldexp`)."""
    f = get_format(fmt)
    rng = np.random.default_rng(seed)
    lo = math.log2(max(f.smallest_subnormal / 8, 2.0**-149))
    top = max(f.max, 1.0)  # INT1's max is 0: its random values still reach past -1
    hi = min(math.log2(top) + 2, 127.9)
    k = n - n // 3
    exponents = np.floor(rng.uniform(lo, hi, k)).astype(np.int64)
    mags = np.ldexp(1.0 + rng.random(k), exponents)
    signs = rng.choice([-1.0, 1.0], size=k)
    dense = rng.uniform(-top, top, n // 3)
    with np.errstate(over="ignore"):
        return np.concatenate([mags * signs, dense]).astype(np.float32)


def all_inputs(fmt: str | Format, n_random: int = 1_000_000, seed: int = 0) -> np.ndarray:
    return np.concatenate([structured_inputs(fmt), random_inputs(fmt, n_random, seed)])


def bf16_inputs(fmt: str | Format, n_random: int = 100_000, seed: int = 0) -> np.ndarray:
    """Inputs exactly representable in BF16 (as float32), for kernels that read BF16: every
    structured input of `fmt` truncated to BF16 and the BF16 values one step either side of it
    (a midpoint of an 8-bit format is itself a BF16 value, so this brackets every tie by one BF16
    step), NaN payloads with BF16 bits, and the seeded random values truncated to BF16."""
    bf16_step = np.uint32(1 << 16)  # one unit in the last place of BF16, in float32 bits
    trunc = structured_inputs(fmt).view(np.uint32) & np.uint32(0xFFFF0000)
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F810000, 0xFFFF0000], np.uint32)
    rand = random_inputs(fmt, n_random, seed).view(np.uint32) & np.uint32(0xFFFF0000)
    # uint32 wrap-around at the ends of the bit range only produces other valid BF16 patterns
    bits = np.concatenate([trunc, trunc - bf16_step, trunc + bf16_step, nans, rand])
    return bits.view(np.float32)
