"""The random stream of stochastic rounding: Philox-4x32-10 keyed by a 64-bit seed, counted by element.

Stochastic rounding needs 32 random bits per element (`Rounding.STOCHASTIC`: round up when
u < floor(2^32 · fraction)). They come from a counter-based generator, so an element's bits depend
only on the key and the element's index in the flattened array: never on threads, chunk sizes or
which code path (compiled kernel or numpy reference) ran.

The stream, exactly:

* **Generator.** Philox-4x32 with 10 rounds (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as
  easy as 1, 2, 3", SC'11; the Random123 reference; what cuRAND, torch and JAX's `rbg` use on GPUs).
  Round: with the counter (c0, c1, c2, c3) and key (k0, k1),
  `hi0:lo0 = 0xD2511F53 · c0`, `hi1:lo1 = 0xCD9E8D57 · c2` (32×32 → 64-bit products),
  `(c0, c1, c2, c3) ← (hi1 ⊕ c1 ⊕ k0, lo1, hi0 ⊕ c3 ⊕ k1, lo0)`, then
  `k0 += 0x9E3779B9`, `k1 += 0xBB67AE85` (mod 2^32). Ten rounds give four 32-bit words.
  Checked against Random123's known-answer vectors (tests/test_codec_stream.py).
* **Key.** A 64-bit integer `key`: k0 = key mod 2^32, k1 = key >> 32. `encode(..., seed=S)` uses
  key = S (0 ≤ S < 2^64). `encode(..., rng=G)` (a numpy Generator) draws the key once per call:
  `key = G.integers(0, 2**64, dtype=numpy.uint64)`, so a call advances G by one draw whatever the
  array size.
* **Counter and word of element i** (its index in the C-order flattened input): elements go in tiles
  of 1024; in tile t = i >> 10, element i takes word w = (i >> 8) & 3 of the Philox output for the
  counter n = (t << 8) | (i & 255), i.e. n is i with bits 8–9 removed and those two bits pick the word.
  The counter words are (c0, c1, c2, c3) = (n mod 2^32, n >> 32, 0, 0). One Philox call thus serves
  elements i, i + 256, i + 512, i + 768 of a tile: each call's four words are used once, and a
  vectorised loop over 256 consecutive elements reads four unit-stride rows.
* **Comparison value.** u = that 32-bit word; the element rounds away from its lower neighbour iff
  u < floor(2^32 · (x − lo) / (hi − lo)) (integer formats: the fraction of |x|).

`philox4x32_10` and `random_u32_scalar` are the readable one-value versions; `random_u32` is the
vectorised numpy one the reference codec uses; the compiled kernels (`formats._kernels`) implement
the same stream and tests compare all three bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

PHILOX_M0 = 0xD2511F53  # multiplier of counter word 0
PHILOX_M1 = 0xCD9E8D57  # multiplier of counter word 2
PHILOX_W0 = 0x9E3779B9  # key increment of k0 per round (golden ratio)
PHILOX_W1 = 0xBB67AE85  # key increment of k1 per round (sqrt(3) - 1)
PHILOX_ROUNDS = 10
TILE = 1024  # elements per tile: 256 counters × 4 words
_MASK32 = 0xFFFFFFFF


def philox4x32_10(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """The four 32-bit output words of Philox-4x32-10 for one counter and key (pure Python)."""
    c0, c1, c2, c3 = (int(c) & _MASK32 for c in counter)
    k0, k1 = (int(k) & _MASK32 for k in key)
    for _ in range(PHILOX_ROUNDS):
        p0 = PHILOX_M0 * c0
        p1 = PHILOX_M1 * c2
        hi0, lo0 = p0 >> 32, p0 & _MASK32
        hi1, lo1 = p1 >> 32, p1 & _MASK32
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
        k0 = (k0 + PHILOX_W0) & _MASK32
        k1 = (k1 + PHILOX_W1) & _MASK32
    return c0, c1, c2, c3


def element_counter(i: int) -> tuple[int, int]:
    """(counter n, word w) of element i: n = i with bits 8–9 removed, w = bits 8–9 of i."""
    if i < 0:
        raise ValueError(f"element index {i} must be non-negative")
    return ((i >> 10) << 8) | (i & 255), (i >> 8) & 3


def random_u32_scalar(key: int, i: int) -> int:
    """The 32 random bits of element i under `key` (readable, one element)."""
    n, w = element_counter(i)
    return philox4x32_10((n & _MASK32, n >> 32, 0, 0), (key & _MASK32, key >> 32))[w]


def check_seed(seed: Any) -> int:
    """`seed` as the 64-bit key, or ValueError/TypeError naming what is allowed."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer in [0, 2**64), got {type(seed).__name__}")
    s = int(seed)
    if not 0 <= s < 1 << 64:
        raise ValueError(f"seed={s} is out of range: it must be in [0, 2**64)")
    return s


def stochastic_key(rng: np.random.Generator | None = None, seed: Any = None) -> int:
    """The 64-bit Philox key of one stochastic-rounding call: `seed` itself, or one draw from `rng`.

    Exactly one of them must be given (TypeError otherwise)."""
    if rng is not None and seed is not None:
        raise TypeError("stochastic rounding takes rng= or seed=, not both")
    if seed is not None:
        return check_seed(seed)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "stochastic rounding needs rng=numpy.random.Generator (e.g. default_rng(0)) or an "
            "integer seed="
        )
    return int(rng.integers(0, 2**64, dtype=np.uint64))


def _mulhilo(m: int, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    p = c.astype(np.uint64) * np.uint64(m)
    return (p >> np.uint64(32)).astype(np.uint32), p.astype(np.uint32)


def philox4x32_10_array(n: np.ndarray, key: int) -> tuple[np.ndarray, ...]:
    """Philox-4x32-10 words for an array of 64-bit counters n (counter words (n lo, n hi, 0, 0))."""
    n64 = np.asarray(n, dtype=np.uint64)
    c0 = (n64 & np.uint64(_MASK32)).astype(np.uint32)
    c1 = (n64 >> np.uint64(32)).astype(np.uint32)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = key & _MASK32, key >> 32
    for _ in range(PHILOX_ROUNDS):
        hi0, lo0 = _mulhilo(PHILOX_M0, c0)
        hi1, lo1 = _mulhilo(PHILOX_M1, c2)
        c0, c1, c2, c3 = hi1 ^ c1 ^ np.uint32(k0), lo1, hi0 ^ c3 ^ np.uint32(k1), lo0
        k0 = (k0 + PHILOX_W0) & _MASK32
        k1 = (k1 + PHILOX_W1) & _MASK32
    return c0, c1, c2, c3


def random_u32(key: int, lo: int, hi: int) -> np.ndarray:
    """The 32 random bits (uint32) of elements lo..hi-1 under `key` (vectorised numpy)."""
    if not 0 <= lo <= hi:
        raise ValueError(f"element range [{lo}, {hi}) is not a range of non-negative indices")
    t0, t1 = lo // TILE, -(-hi // TILE)
    tiles = np.arange(t0, t1, dtype=np.uint64)
    counters = (tiles[:, None] << np.uint64(8)) | np.arange(256, dtype=np.uint64)[None, :]
    words = philox4x32_10_array(counters, key)  # 4 × (tiles, 256)
    block = np.stack(words, axis=1)  # (tiles, word, 256): element t·1024 + w·256 + k
    return block.reshape(-1)[lo - t0 * TILE: hi - t0 * TILE].copy()
