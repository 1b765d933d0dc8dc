"""The recipe lab's compiled metric kernels (numba): each chunk's sums in one pass per recipe, with no
per-element temporaries, giving exactly the numbers of `measure`'s numpy code (the readable
reference, which stays and runs where numba is missing or `LOWPREC_CODEC=numpy`).

Exactness. Every figure of the report is a function of per-row sums (accumulated exactly by
`measure.ExactSum`), maxima and counts, so the kernels must give the *same per-row sums* as numpy,
bit for bit, not merely close ones:

- a row's sum is numpy's own pairwise summation of the row (`_pairwise`: runs of fewer than 8 summed
  in order; up to 128 elements in 8 interleaved accumulators combined as ((r0+r1)+(r2+r3)) +
  ((r4+r5)+(r6+r7)), the tail added in order; longer runs split at half, rounded down to a multiple
  of 8, and the halves summed recursively), added to 0.0 as `np.add.reduce` does;
- a column's sum over the rows of a chunk is the rows added in order from 0.0 (numpy's reduction
  along a non-contiguous axis);
- the dequantized values are decode(code) × the element's decode scale (`QuantResult.element_scales`,
  read per block here: `block_scales`), rounded to float32 where the scheme's `dequantize` returns
  float32 (MX, NVFP4, MXINT8 from float32 input; FP8 tiles always) — the same one product and one
  rounding as each scheme's `dequantize`;
- the inverse Hadamard transform and the forward one are 16-term dot products summed in order from
  0.0 (every product is exact: H's entries are ±1/4), as OpenBLAS's dgemm does for the lab's
  (blocks × 16) · (16 × 16) products (checked against `numpy.matmul` in the tests; a single block,
  which numpy sends to gemv, takes the numpy path); Transformer Engine's float32 in-order
  accumulation is the float32 loop of `quant.rht`;
- x / 2^e is `ldexp`, exact or correctly rounded as numpy's; squares, differences and divisions are
  the same IEEE operations (numba compiles without fast-math: no contraction into FMAs).

Kernels: `stats_first` (pass 1: finite and zero counts, amax, row sums of x), `stats_second` (pass 2:
row sums of (x/2^e)², of d² and d⁴ for d = (x − mean)/2^e, column sums of squares and finite counts),
`recipe_sums` (one recipe on one chunk: row sums of ((x̂ − x)/2^e)², max |x̂ − x|, clipped and flushed
counts, optionally x̂ itself for the tests), `rht_forward` (the transformed operand of an RHT recipe)
and `exact_grow` (`ExactSum`'s Shewchuk partials, the same loop as the Python one). Each works on a
row range [lo, hi) so a chunk can be split over the codec's threads (they release the GIL).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit  # type: ignore[import-untyped]

from lowprec.formats import _kernels as K

__all__ = ["descale_factor", "exact_grow", "recipe_sums", "rht_forward", "stats_first", "stats_second"]



def _jit(fn: Any) -> Any:
    """`formats._kernels._jit` (njit, nogil, the disk cache where writable) with numpy's error model:
    x / 0 is ±inf or NaN, as in numpy, not a ZeroDivisionError."""
    if K._DISK_CACHE:
        try:
            return njit(nogil=True, cache=True, error_model="numpy")(fn)
        except RuntimeError:  # no writable cache directory
            pass
    return njit(nogil=True, cache=False, error_model="numpy")(fn)


_TINY = 2.0**-1000


@_jit  # type: ignore[misc]
def _pairwise_leaf(a: Any, lo: int, n: int) -> float:
    """numpy's pairwise sum of a run of at most 128 elements a[lo:lo + n]."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[lo + i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@_jit  # type: ignore[misc]
def _pairwise(a: Any, lo: int, n: int) -> float:
    """numpy's pairwise sum of a[lo:lo + n] (float64), operation for operation: runs over 128 split
    at half (rounded down to a multiple of 8) and the halves' sums added. Without recursion (numba's
    disk cache does not keep recursive functions): the split tree walked with explicit stacks."""
    if n <= 128:
        return _pairwise_leaf(a, lo, n)
    node_lo = np.empty(192, np.int64)
    node_n = np.empty(192, np.int64)
    node_done = np.empty(192, np.bool_)
    vals = np.empty(96)
    top = 0
    nv = 0
    node_lo[0] = lo
    node_n[0] = n
    node_done[0] = False
    top = 1
    while top > 0:
        top -= 1
        l, m, done = node_lo[top], node_n[top], node_done[top]
        if m <= 128:
            vals[nv] = _pairwise_leaf(a, l, m)
            nv += 1
        elif done:
            nv -= 1
            vals[nv - 1] = vals[nv - 1] + vals[nv]  # left + right
        else:
            m2 = m // 2
            m2 -= m2 % 8
            node_lo[top], node_n[top], node_done[top] = l, m, True
            node_lo[top + 1], node_n[top + 1], node_done[top + 1] = l + m2, m - m2, False
            node_lo[top + 2], node_n[top + 2], node_done[top + 2] = l, m2, False  # the left half first
            top += 3
    return vals[0]


@_jit  # type: ignore[misc]
def _row_sum(a: Any, n: int) -> float:
    """`np.add.reduce` of a row: 0.0 plus its pairwise sum."""
    return 0.0 + _pairwise(a, 0, n)


@_jit  # type: ignore[misc]
def _descale(v: float, e: int, factor: float) -> float:
    """v / 2^e, as `np.ldexp(v, -e)`: v · factor with factor = 2^-e where that power of two is a
    float64 (normal or subnormal: one correctly rounded product, which is what ldexp returns), else
    ldexp itself (factor 0: a tensor whose amax is below 2^-1023)."""
    if factor != 0.0:
        return v * factor
    return math.ldexp(v, -e)


def descale_factor(e: int) -> float:
    """The factor `_descale` multiplies by: 2^-e, or 0.0 where 2^-e is not a float64 (then ldexp)."""
    return math.ldexp(1.0, -e) if -1074 <= -e <= 1023 else 0.0


@_jit  # type: ignore[misc]
def stats_first(x: Any, lo: int, hi: int, row_sums: Any) -> Any:
    """Rows lo..hi of x (2-D float32/float64): each row's Σx over its finite elements (into
    row_sums[r]); returns (finite count, exact zeros, amax of the finite elements)."""
    cols = x.shape[1]
    buf = np.empty(cols)
    finite = 0
    zeros = 0
    amax = 0.0
    for r in range(lo, hi):
        for j in range(cols):
            v = np.float64(x[r, j])
            fin = abs(v) < np.inf
            zeros += np.int64(v == 0)
            finite += np.int64(fin)
            a = abs(v) if fin else 0.0
            amax = a if a > amax else amax
            buf[j] = v if fin else 0.0
        row_sums[r] = _row_sum(buf, cols)
    return finite, zeros, amax


@_jit  # type: ignore[misc]
def stats_second(x: Any, lo: int, hi: int, e: int, factor: float, mean: float, sumsq: Any, m2: Any, m4: Any,
                 col_sumsq: Any, col_count: Any, channels: bool) -> int:
    """Rows lo..hi of x: row sums of (x/2^e)², of d² and of d⁴ with d = (x − mean)/2^e (finite
    elements; the others count 0), and, with `channels`, each column's Σ(x/2^e)² and finite count
    added in row order into col_sumsq / col_count (which start at 0 for the chunk); returns the
    count of finite elements."""
    cols = x.shape[1]
    b1 = np.empty(cols)
    b2 = np.empty(cols)
    b3 = np.empty(cols)
    finite = 0
    for r in range(lo, hi):
        for j in range(cols):
            v = np.float64(x[r, j])
            fin = abs(v) < np.inf
            finite += np.int64(fin)
            xs = _descale(v, e, factor)
            d = _descale(v - mean, e, factor)
            d2 = d * d
            sq = xs * xs if fin else 0.0
            b1[j] = sq
            b2[j] = d2 if fin else 0.0
            b3[j] = d2 * d2 if fin else 0.0
            if channels:
                col_sumsq[j] += sq
                col_count[j] += np.int64(fin)
        sumsq[r] = _row_sum(b1, cols)
        m2[r] = _row_sum(b2, cols)
        m4[r] = _row_sum(b3, cols)
    return finite


@_jit  # type: ignore[misc]
def recipe_sums(x: Any, codes: Any, table: Any, scales: Any, br: int, bc: int, round32: bool, cin: Any,
                h_inv: Any, edge: float, edge_overflows: bool, e: int, factor: float, all_finite: bool, lo: int,
                hi: int, err: Any, x_hat_out: Any) -> Any:
    """One recipe on rows lo..hi of a chunk x (2-D): the dequantized values x̂ = decode × scale
    (table[code] · scales[r // br, c // bc], rounded to float32 with `round32`), transformed back
    by h_inv (16 × 16, Hᵀ) when it is non-empty; per row Σ((x̂ − x)/2^e)² over the finite elements of
    x (into err[r]; `all_finite`: x has no other); returns (max |x̂ − x| over them, whether one was
    NaN, clipped count, flushed count). Clipped: |cin| / scale beyond `edge` (or at it when
    `edge_overflows`), for a finite cin under a positive finite scale; flushed: cin ≠ 0 finite and
    its dequantized value 0 (cin: the values that entered the cast). With a non-empty x_hat_out, x̂
    is written there (tests)."""
    cols = x.shape[1]
    out = np.empty(cols)
    srow = np.empty(cols)
    lrow = np.empty(cols)
    back = np.empty(cols)
    sq = np.empty(cols)
    rht = h_inv.shape[0] == 16
    keep = x_hat_out.shape[0] > 0
    max_abs = 0.0
    nan = False
    clipped = 0
    zeroed = 0
    for r in range(lo, hi):
        sr = r // br
        for b0 in range(0, cols, bc):
            s = scales[sr, b0 // bc]
            # below lim, |cin| / s is surely inside the edge (a 1 % margin over the rounding of both
            # products; s below 2^-1000 may be subnormal, whose products lose relative precision)
            lim = edge * s * 0.99 if s >= _TINY else 0.0
            for j in range(b0, min(cols, b0 + bc)):
                out[j] = table[codes[r, j]] * s
                srow[j] = s
                lrow[j] = lim
        if round32:
            for j in range(cols):
                out[j] = np.float64(np.float32(out[j]))
        for j in range(cols):
            c = np.float64(cin[r, j])
            zeroed += np.int64((abs(c) < np.inf) & (c != 0) & (out[j] == 0))
        for j in range(cols):
            ac = abs(np.float64(cin[r, j]))
            if ac > lrow[j]:  # rare: the exact test
                s = srow[j]
                mag = ac / s
                if (mag > edge or (edge_overflows and mag == edge)) and ac < np.inf and s > 0 and s < np.inf:
                    clipped += 1
        if rht:
            for b0 in range(0, cols, 16):
                for k in range(16):
                    acc = 0.0
                    for m in range(16):
                        acc += out[b0 + m] * h_inv[m, k]
                    back[b0 + k] = acc
            src = back
        else:
            src = out
        if keep:
            for j in range(cols):
                x_hat_out[r, j] = src[j]
        row_nan = False
        if all_finite and factor != 0.0:  # the common case, branch-free
            for j in range(cols):
                d = src[j] - np.float64(x[r, j])
                a = abs(d)
                row_nan |= a != a
                max_abs = a if a > max_abs else max_abs
                d = d * factor
                sq[j] = d * d
        else:
            for j in range(cols):
                xv = np.float64(x[r, j])
                d = src[j] - xv if abs(xv) < np.inf else 0.0
                a = abs(d)
                row_nan |= a != a
                max_abs = a if a > max_abs else max_abs
                d = _descale(d, e, factor)
                sq[j] = d * d
        nan |= row_nan
        err[r] = _row_sum(sq, cols)
    return max_abs, nan, clipped, zeroed


@_jit  # type: ignore[misc]
def rht_forward(x: Any, h: Any, in_order32: bool, lo: int, hi: int, out: Any) -> None:
    """Rows lo..hi of x (2-D, float32 or float64, last axis a multiple of 16) times H blockwise into
    out (x's dtype): each output the 16 products summed in order from 0.0 in float64 and rounded once
    to out's dtype, or with `in_order32` (float32 x) summed in float32 (Transformer Engine)."""
    cols = x.shape[1]
    h32 = h.astype(np.float32)
    for r in range(lo, hi):
        for b0 in range(0, cols, 16):
            for k in range(16):
                if in_order32:
                    acc32 = np.float32(0.0)
                    for m in range(16):
                        acc32 = acc32 + np.float32(x[r, b0 + m]) * h32[m, k]
                    out[r, b0 + k] = acc32
                else:
                    acc = 0.0
                    for m in range(16):
                        acc += np.float64(x[r, b0 + m]) * h[m, k]
                    out[r, b0 + k] = acc


@_jit  # type: ignore[misc]
def exact_grow(partials: Any, n: int, values: Any) -> int:
    """`ExactSum.add`'s loop over finite `values` (Shewchuk's partials, as `math.fsum`): partials[:n]
    grown in place (room for n + len(values) entries); returns the new count."""
    for t in range(values.shape[0]):
        x = values[t]
        i = 0
        for k in range(n):
            y = partials[k]
            if abs(x) < abs(y):
                x, y = y, x
            hi = x + y
            lo = y - (hi - x)
            if lo != 0.0:
                partials[i] = lo
                i += 1
            x = hi
        partials[i] = x
        n = i + 1
    return n
