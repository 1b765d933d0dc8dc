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

import functools
import math
from typing import Any

import numpy as np
from numba import njit  # type: ignore[import-untyped]

from lowprec.formats import CastPolicy, Format, IntFormat, Rounding
from lowprec.formats import _kernels as K

__all__ = ["abs_mask", "block_amax", "block_amax_bits", "cast_kernel", "descale_factor", "exact_grow", "recipe_sums",
           "rht_forward", "stats_first", "stats_second"]



def _jit(fn: Any) -> Any:
    """`formats._kernels._jit` (njit, nogil, the disk cache where writable) with numpy's error model:
    x / 0 is ±inf or NaN, as in numpy, not a ZeroDivisionError."""
    if K._DISK_CACHE:
        try:
            return njit(nogil=True, cache=True, error_model="numpy")(fn)
        except RuntimeError:  # no writable cache directory
            pass
    return njit(nogil=True, cache=False, error_model="numpy")(fn)


# Writing for LLVM's vectoriser: arrays are read flat with unsigned indices (numba's signed indices
# carry a wraparound check that keeps a loop scalar), one simple loop per step, and the reductions are
# integer ones (counts; a maximum of |d| taken on its bit pattern, where NaN sorts above every
# number), because a floating-point max or a mixed reduction leaves a loop scalar without fast-math.
_ABS64 = np.uint64(0x7FFFFFFFFFFFFFFF)
_INF64 = np.uint64(0x7FF0000000000000)
_TINY = 2.0**-1000
_TIGHT = 1.0 - 2.0**-40


@_jit  # type: ignore[misc]
def _u(i: int) -> Any:
    return np.uint64(i)


@_jit  # type: ignore[misc]
def _pairwise_leaf(a: Any, lo: int, n: int) -> float:
    """numpy's pairwise sum of a run of at most 128 elements a[lo:lo + n]."""
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[_u(lo + i)]
        return res
    r0 = a[_u(lo)]
    r1 = a[_u(lo + 1)]
    r2 = a[_u(lo + 2)]
    r3 = a[_u(lo + 3)]
    r4 = a[_u(lo + 4)]
    r5 = a[_u(lo + 5)]
    r6 = a[_u(lo + 6)]
    r7 = a[_u(lo + 7)]
    i = 8
    stop = n - (n % 8)
    while i < stop:
        r0 += a[_u(lo + i)]
        r1 += a[_u(lo + i + 1)]
        r2 += a[_u(lo + i + 2)]
        r3 += a[_u(lo + i + 3)]
        r4 += a[_u(lo + i + 4)]
        r5 += a[_u(lo + i + 5)]
        r6 += a[_u(lo + i + 6)]
        r7 += a[_u(lo + i + 7)]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[_u(lo + i)]
        i += 1
    return res


#: the scratch `_pairwise` walks its split tree in: 192 nodes (start, length, expanded) and 96 partial
#: sums — enough for any row (the tree is at most 64 levels deep); one per kernel call, not per row
_WORK = 4 * 192


@_jit  # type: ignore[misc]
def _pairwise(a: Any, lo: int, n: int, work: Any) -> float:
    """numpy's pairwise sum of a[lo:lo + n] (float64), operation for operation: runs over 128 split
    at half (rounded down to a multiple of 8) and the halves' sums added. Without recursion (numba's
    disk cache does not keep recursive functions): the split tree walked with explicit stacks, kept in
    `work` (float64[_WORK], see there: starts and lengths are integers below 2^53, exact)."""
    if n <= 128:
        return _pairwise_leaf(a, lo, n)
    nv = 0
    work[0] = lo  # node t: work[3t] start, work[3t + 1] length, work[3t + 2] expanded; sums from 576
    work[1] = n
    work[2] = 0.0
    top = 1
    while top > 0:
        top -= 1
        l = np.int64(work[3 * top])
        m = np.int64(work[3 * top + 1])
        if m <= 128:
            work[576 + nv] = _pairwise_leaf(a, l, m)
            nv += 1
        elif work[3 * top + 2] != 0.0:
            nv -= 1
            work[576 + nv - 1] = work[576 + nv - 1] + work[576 + nv]  # left + right
        else:
            m2 = m // 2
            m2 -= m2 % 8
            work[3 * top + 2] = 1.0
            work[3 * top + 3] = l + m2  # the right half
            work[3 * top + 4] = m - m2
            work[3 * top + 5] = 0.0
            work[3 * top + 6] = l  # the left half, walked first
            work[3 * top + 7] = m2
            work[3 * top + 8] = 0.0
            top += 3
    return work[576]


@_jit  # type: ignore[misc]
def _row_sum_in(a: Any, n: int, work: Any) -> float:
    """`np.add.reduce` of a row: 0.0 plus its pairwise sum (`work`: `_pairwise`'s scratch)."""
    return 0.0 + _pairwise(a, 0, n, work)


@_jit  # type: ignore[misc]
def _row_sum(a: Any, n: int) -> float:
    """`_row_sum_in` with its own scratch."""
    return _row_sum_in(a, n, np.empty(_WORK))


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
def _float_of_bits(b: Any) -> float:
    return K._float_of(b, 0.0)


@_jit  # type: ignore[misc]
def stats_first(x: Any, lo: int, hi: int, row_sums: Any) -> Any:
    """Rows lo..hi of x (2-D float32/float64, C-contiguous): each row's Σx over its finite elements
    (into row_sums[r]); returns (finite count, exact zeros, amax of the finite elements)."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    buf = np.empty(cols)
    work = np.empty(_WORK)
    finite: Any = 0
    zeros: Any = 0
    amax = np.uint64(0)
    for r in range(lo, hi):
        base = r * cols
        for j in range(cols):
            v = np.float64(xf[_u(base + j)])
            b = K._bits_of(v) & _ABS64
            fin = b < _INF64
            zeros += np.int64(v == 0)
            finite += np.int64(fin)
            amax = max(amax, b if fin else np.uint64(0))
            buf[_u(j)] = v if fin else 0.0
        row_sums[r] = _row_sum_in(buf, cols, work)
    return finite, zeros, _float_of_bits(amax)


@_jit  # type: ignore[misc]
def stats_second(x: Any, lo: int, hi: int, e: int, factor: float, mean: float, sumsq: Any, m2: Any, m4: Any,
                 col_sumsq: Any, col_count: Any, channels: bool) -> int:
    """Rows lo..hi of x: row sums of (x/2^e)², of d² and of d⁴ with d = (x − mean)/2^e (finite
    elements; the others count 0), and, with `channels`, each column's Σ(x/2^e)² and finite count
    added in row order into col_sumsq / col_count (which start at 0 for the chunk); returns the
    count of finite elements."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    b1 = np.empty(cols)
    b2 = np.empty(cols)
    b3 = np.empty(cols)
    work = np.empty(_WORK)
    finite: Any = 0
    for r in range(lo, hi):
        base = r * cols
        if factor != 0.0:
            for j in range(cols):
                v = np.float64(xf[_u(base + j)])
                fin = abs(v) < np.inf
                finite += np.int64(fin)
                xs = v * factor
                d = (v - mean) * factor
                d2 = d * d
                b1[_u(j)] = xs * xs if fin else 0.0
                b2[_u(j)] = d2 if fin else 0.0
                b3[_u(j)] = d2 * d2 if fin else 0.0
        else:
            for j in range(cols):
                v = np.float64(xf[_u(base + j)])
                fin = abs(v) < np.inf
                finite += np.int64(fin)
                xs = _descale(v, e, factor)
                d = _descale(v - mean, e, factor)
                d2 = d * d
                b1[_u(j)] = xs * xs if fin else 0.0
                b2[_u(j)] = d2 if fin else 0.0
                b3[_u(j)] = d2 * d2 if fin else 0.0
        if channels:
            for j in range(cols):
                col_sumsq[_u(j)] += b1[_u(j)]
                col_count[_u(j)] += np.int64(abs(xf[_u(base + j)]) < np.inf)
        sumsq[r] = _row_sum_in(b1, cols, work)
        m2[r] = _row_sum_in(b2, cols, work)
        m4[r] = _row_sum_in(b3, cols, work)
    return finite


@_jit  # type: ignore[misc]
def _clip_limit(edge: float, s: float) -> float:
    """Below this |cin|, |cin| / s is surely inside the edge: fl(|cin| / s) ≥ edge needs |cin| ≥
    edge · s · (1 − 2^-53), and the limit edge · s · (1 − 2^-40) lies below that whatever the rounding
    of its two products — for a normal s; below 2^-1000, where s may be subnormal and its products
    lose relative precision, 0 (every element takes the exact test). An infinite or NaN limit lets no
    element through: there the exact test could only say "not clipped"."""
    return edge * s * _TIGHT if s >= _TINY else 0.0


@_jit  # type: ignore[misc]
def _row_tail(x: Any, cin: Any, base: int, cols: int, out: Any, s_grid: Any, sr: int, bc: int, back: Any, sq: Any,
              work: Any, h_inv: Any, edge: float, edge_overflows: bool, e: int, factor: float, all_finite: bool,
              x_hat_out: Any) -> Any:
    """A row once its dequantized values `out` are known (x and cin flat, the row at base; its
    blocks of bc elements decoded by s_grid[sr, ·]): flushed and clipped counts from cin, x̂ (out,
    or out transformed back by h_inv when it is 16 × 16) and its Σ((x̂ − x)/2^e)², the largest |x̂ − x|
    as a bit pattern (a NaN above every number) over the finite elements of x; returns (row sum,
    max bits, clipped, flushed)."""
    zeroed: Any = 0
    for j in range(cols):
        c = np.float64(cin[_u(base + j)])
        zeroed += np.int64((abs(c) < np.inf) & (c != 0) & (out[_u(j)] == 0))
    clipped = 0
    for b0 in range(0, cols, bc):
        s = s_grid[sr, b0 // bc]
        lim = _clip_limit(edge, s)
        b1 = min(cols, b0 + bc)
        cand: Any = 0
        for j in range(b0, b1):
            cand += np.int64(abs(np.float64(cin[_u(base + j)])) > lim)
        if cand:  # rare: the exact test, as `clipped_mask`
            for j in range(b0, b1):
                ac = abs(np.float64(cin[_u(base + j)]))
                mag = ac / s
                if ((mag > edge) or (edge_overflows and mag == edge)) and ac < np.inf and s > 0 and s < np.inf:
                    clipped += 1
    if h_inv.shape[0] == 16:
        hf = h_inv.reshape(-1)
        for b0 in range(0, cols, 16):  # each output summed over the block in order, as numpy's product
            _block16(out, b0, hf, back, b0)
        src = back
    else:
        src = out
    if x_hat_out.shape[0] > 0:
        for j in range(cols):
            x_hat_out[_u(base + j)] = src[_u(j)]
    mx = np.uint64(0)
    if all_finite and factor != 0.0:  # the common case, branch-free
        for j in range(cols):
            d = src[_u(j)] - np.float64(x[_u(base + j)])
            mx = max(mx, K._bits_of(d) & _ABS64)
            d = d * factor
            sq[_u(j)] = d * d
    else:
        for j in range(cols):
            xv = np.float64(x[_u(base + j)])
            d = src[_u(j)] - xv if abs(xv) < np.inf else 0.0
            mx = max(mx, K._bits_of(d) & _ABS64)
            d = _descale(d, e, factor)
            sq[_u(j)] = d * d
    return _row_sum_in(sq, cols, work), mx, clipped, zeroed


@_jit  # type: ignore[misc]
def _result(mx: Any) -> Any:
    """(max |x̂ − x|, whether it was NaN) from the largest bit pattern."""
    return _float_of_bits(mx), mx > _INF64


@_jit  # type: ignore[misc]
def recipe_sums(x: Any, codes: Any, table: Any, scales: Any, br: int, bc: int, round32: bool, cin: Any,
                h_inv: Any, edge: float, edge_overflows: bool, e: int, factor: float, all_finite: bool, lo: int,
                hi: int, err: Any, x_hat_out: Any) -> Any:
    """One recipe on rows lo..hi of a chunk x (2-D, C-contiguous, as codes and cin): the dequantized
    values x̂ = decode × scale (table[code] · scales[r // br, c // bc], rounded to float32 with
    `round32`), transformed back by h_inv (16 × 16, Hᵀ) when it is non-empty; per row
    Σ((x̂ − x)/2^e)² over the finite elements of x (into err[r]; `all_finite`: x has no other);
    returns (max |x̂ − x| over them, whether one was NaN, clipped count, flushed count). Clipped:
    |cin| / scale beyond `edge` (or at it when `edge_overflows`), for a finite cin under a positive
    finite scale; flushed: cin ≠ 0 finite and its dequantized value 0 (cin: the values that entered
    the cast). With a non-empty x_hat_out (flat), x̂ is written there (tests)."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    cf = codes.reshape(-1)
    inf = cin.reshape(-1)
    out = np.empty(cols)
    back = np.empty(cols)
    sq = np.empty(cols)
    work = np.empty(_WORK)
    mx = np.uint64(0)
    clipped = 0
    zeroed = 0
    for r in range(lo, hi):
        sr = r // br
        base = r * cols
        for b0 in range(0, cols, bc):
            s = scales[sr, b0 // bc]
            for j in range(b0, min(cols, b0 + bc)):
                out[_u(j)] = table[_u(cf[_u(base + j)])] * s
        if round32:
            for j in range(cols):
                out[_u(j)] = np.float64(np.float32(out[_u(j)]))
        err[r], m, c, z = _row_tail(xf, inf, base, cols, out, scales, sr, bc, back, sq, work, h_inv, edge,
                                    edge_overflows, e, factor, all_finite, x_hat_out)
        mx = max(mx, m)
        clipped += c
        zeroed += z
    max_abs, nan = _result(mx)
    return max_abs, nan, clipped, zeroed


@_jit  # type: ignore[misc]
def block_amax(x: Any, bc: int, lo: int, hi: int, out: Any) -> None:
    """out[r, b] = max |x| over x[r, b·bc:(b + 1)·bc] for rows lo..hi, a NaN element making it NaN
    (as `np.max` of the group's |x| in float64)."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    for r in range(lo, hi):
        base = r * cols
        for b0 in range(0, cols, bc):
            m = np.uint64(0)
            for j in range(b0, min(cols, b0 + bc)):
                m = max(m, K._bits_of(np.float64(xf[_u(base + j)])) & _ABS64)
            out[r, b0 // bc] = np.nan if m > _INF64 else _float_of_bits(m)


@_jit  # type: ignore[misc]
def block_amax_bits(x: Any, br: int, bc: int, mask: Any, lo: int, hi: int, out: Any) -> None:
    """out[i, b] = the largest |x| bit pattern over the block of br × bc elements at (i·br, b·bc) (an
    unsigned view: NaN > Inf > finite; `quant._blockwise.amax_bits` of the block), for block rows
    lo..hi; out and mask (the bits below the sign) are uint32 for float32 x, uint64 for float64 x."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    for i in range(lo, hi):
        for b0 in range(0, cols, bc):
            m = mask - mask
            for r in range(i * br, (i + 1) * br):
                base = r * cols
                for j in range(b0, b0 + bc):
                    m = max(m, K._bits_of(xf[_u(base + j)]) & mask)
            out[i, b0 // bc] = m


def _cast_loops(ep: Any, U: Any, integer: bool, out_mask: int) -> Any:
    """The fused kernel of a scaled element cast (`quantize_scaled`'s element step, NVFP4's under
    the ocp quotient rule) and the lab's sums: each element of `src` scaled in float64 by its block's
    factor a (src · a, or src / a with `divide`, 0 where a is not positive) and cast by the codec's
    own element function under its plan `ep` (`formats._kernels`: `_int_elem` on INT grids,
    `_float_elem` otherwise, reading a float64 input as the codec's loaders do), so the codes are
    the codec's; then decoded × the block's decode scale s (rounded to float32 with `round32`) and
    `_row_tail`. A closure over the plan's constants, compiled per format and policy as the codec's
    kernels are."""
    via32 = ep.in_kind == K._IN_F64_VIA_F32
    mask = np.uint16(out_mask)

    def kernel(x: Any, src: Any, a_grid: Any, s_grid: Any, br: int, bc: int, divide: bool, round32: bool,
               table: Any, h_inv: Any, edge: float, edge_overflows: bool, e: int, factor: float, all_finite: bool,
               lo: int, hi: int, err: Any, x_hat_out: Any, codes_out: Any) -> Any:
        cols = x.shape[1]
        xf = x.reshape(-1)
        sf = src.reshape(-1)
        out = np.empty(cols)
        back = np.empty(cols)
        sq = np.empty(cols)
        work = np.empty(_WORK)
        scaled = np.empty(cols)
        codes = np.empty(cols, np.uint16)
        keep_codes = codes_out.shape[0] > 0
        mx = np.uint64(0)
        clipped = 0
        zeroed = 0
        refused = False
        for r in range(lo, hi):
            sr = r // br
            base = r * cols
            for b0 in range(0, cols, bc):  # the scaled values, block by block
                a = a_grid[sr, b0 // bc]
                b1 = min(cols, b0 + bc)
                if not divide:
                    for j in range(b0, b1):
                        scaled[_u(j)] = np.float64(sf[_u(base + j)]) * a
                elif a > 0:
                    for j in range(b0, b1):
                        scaled[_u(j)] = np.float64(sf[_u(base + j)]) / a
                else:
                    for j in range(b0, b1):
                        scaled[_u(j)] = 0.0
            for j in range(cols):  # the cast: the codec's element function, in a loop of its own
                if integer:
                    if via32:
                        ci, ref = K._int_elem(np.float64(np.float32(scaled[_u(j)])), np.uint32(0), ep)
                    else:
                        ci, ref = K._int_elem(scaled[_u(j)], np.uint32(0), ep)
                    codes[_u(j)] = np.uint16(ci) & mask
                else:
                    if via32:
                        b = U(K._bits_of(np.float32(scaled[_u(j)])))
                    else:
                        b = U(K._bits_of(scaled[_u(j)]))
                    cf, ref = K._float_elem(b, np.uint32(0), np.uint32(0), ep, U)
                    codes[_u(j)] = np.uint16(cf & U(out_mask))
                refused |= ref
            if keep_codes:
                for j in range(cols):
                    codes_out[_u(base + j)] = codes[_u(j)]
            for b0 in range(0, cols, bc):  # decoded × the block's decode scale
                s = s_grid[sr, b0 // bc]
                for j in range(b0, min(cols, b0 + bc)):
                    out[_u(j)] = table[_u(codes[_u(j)])] * s
            if round32:
                for j in range(cols):
                    out[_u(j)] = np.float64(np.float32(out[_u(j)]))
            err[r], m, c, z = _row_tail(xf, sf, base, cols, out, s_grid, sr, bc, back, sq, work, h_inv, edge,
                                        edge_overflows, e, factor, all_finite, x_hat_out)
            mx = max(mx, m)
            clipped += c
            zeroed += z
        max_abs, nan = _result(mx)
        return max_abs, nan, clipped, zeroed, refused

    return kernel


@functools.lru_cache(maxsize=None)
def _cast_compiled(ep: Any, U: Any, integer: bool, out_mask: int) -> Any:
    return _jit(_cast_loops(ep, U, integer, out_mask))


@functools.lru_cache(maxsize=None)
def cast_kernel(fmt: Format, policy: CastPolicy) -> Any | None:
    """The fused cast kernel (`_cast_loops`) of an element format and policy on float64 scaled
    values, or None where there is none (stochastic rounding, E8M0's float32 exponent-field rule)."""
    if policy.rounding is Rounding.STOCHASTIC:
        return None
    out_mask = (1 << (8 * np.dtype(fmt.code_dtype).itemsize)) - 1
    if isinstance(fmt, IntFormat):
        return _cast_compiled(K.int_plan(fmt, policy, np.dtype(np.float64)), None, True, out_mask)
    ep, U = K.float_plan(fmt, policy, np.dtype(np.float64))
    if ep.exp_field:
        return None
    return _cast_compiled(ep, U, False, out_mask)


def abs_mask(dtype: np.dtype) -> Any:
    """The bits below the sign of a float32 (uint32) or float64 (uint64) pattern."""
    return np.uint32(0x7FFFFFFF) if np.dtype(dtype) == np.float32 else np.uint64(0x7FFFFFFFFFFFFFFF)


@_jit  # type: ignore[misc]
def _block16(src: Any, s0: int, h: Any, dst: Any, d0: int) -> None:
    """dst[d0 + k] = Σ_m src[s0 + m] · h[16m + k] for k < 16, summed in float64 in order from 0.0 (h flat float64)."""
    x0 = np.float64(src[_u(s0 + 0)])
    x1 = np.float64(src[_u(s0 + 1)])
    x2 = np.float64(src[_u(s0 + 2)])
    x3 = np.float64(src[_u(s0 + 3)])
    x4 = np.float64(src[_u(s0 + 4)])
    x5 = np.float64(src[_u(s0 + 5)])
    x6 = np.float64(src[_u(s0 + 6)])
    x7 = np.float64(src[_u(s0 + 7)])
    x8 = np.float64(src[_u(s0 + 8)])
    x9 = np.float64(src[_u(s0 + 9)])
    x10 = np.float64(src[_u(s0 + 10)])
    x11 = np.float64(src[_u(s0 + 11)])
    x12 = np.float64(src[_u(s0 + 12)])
    x13 = np.float64(src[_u(s0 + 13)])
    x14 = np.float64(src[_u(s0 + 14)])
    x15 = np.float64(src[_u(s0 + 15)])
    for k in range(16):  # 16 independent sums, each over m in order
        acc = 0.0
        acc = acc + x0 * h[_u(k)]
        acc = acc + x1 * h[_u(16 + k)]
        acc = acc + x2 * h[_u(32 + k)]
        acc = acc + x3 * h[_u(48 + k)]
        acc = acc + x4 * h[_u(64 + k)]
        acc = acc + x5 * h[_u(80 + k)]
        acc = acc + x6 * h[_u(96 + k)]
        acc = acc + x7 * h[_u(112 + k)]
        acc = acc + x8 * h[_u(128 + k)]
        acc = acc + x9 * h[_u(144 + k)]
        acc = acc + x10 * h[_u(160 + k)]
        acc = acc + x11 * h[_u(176 + k)]
        acc = acc + x12 * h[_u(192 + k)]
        acc = acc + x13 * h[_u(208 + k)]
        acc = acc + x14 * h[_u(224 + k)]
        acc = acc + x15 * h[_u(240 + k)]
        dst[_u(d0 + k)] = acc


@_jit  # type: ignore[misc]
def _block16_f32(src: Any, s0: int, h: Any, dst: Any, d0: int) -> None:
    """As `_block16` with every product and sum in float32 (h flat float32): Transformer Engine's order."""
    x0 = np.float32(src[_u(s0 + 0)])
    x1 = np.float32(src[_u(s0 + 1)])
    x2 = np.float32(src[_u(s0 + 2)])
    x3 = np.float32(src[_u(s0 + 3)])
    x4 = np.float32(src[_u(s0 + 4)])
    x5 = np.float32(src[_u(s0 + 5)])
    x6 = np.float32(src[_u(s0 + 6)])
    x7 = np.float32(src[_u(s0 + 7)])
    x8 = np.float32(src[_u(s0 + 8)])
    x9 = np.float32(src[_u(s0 + 9)])
    x10 = np.float32(src[_u(s0 + 10)])
    x11 = np.float32(src[_u(s0 + 11)])
    x12 = np.float32(src[_u(s0 + 12)])
    x13 = np.float32(src[_u(s0 + 13)])
    x14 = np.float32(src[_u(s0 + 14)])
    x15 = np.float32(src[_u(s0 + 15)])
    for k in range(16):  # 16 independent sums, each over m in order
        acc = np.float32(0.0)
        acc = acc + x0 * h[_u(k)]
        acc = acc + x1 * h[_u(16 + k)]
        acc = acc + x2 * h[_u(32 + k)]
        acc = acc + x3 * h[_u(48 + k)]
        acc = acc + x4 * h[_u(64 + k)]
        acc = acc + x5 * h[_u(80 + k)]
        acc = acc + x6 * h[_u(96 + k)]
        acc = acc + x7 * h[_u(112 + k)]
        acc = acc + x8 * h[_u(128 + k)]
        acc = acc + x9 * h[_u(144 + k)]
        acc = acc + x10 * h[_u(160 + k)]
        acc = acc + x11 * h[_u(176 + k)]
        acc = acc + x12 * h[_u(192 + k)]
        acc = acc + x13 * h[_u(208 + k)]
        acc = acc + x14 * h[_u(224 + k)]
        acc = acc + x15 * h[_u(240 + k)]
        dst[_u(d0 + k)] = acc


@_jit  # type: ignore[misc]
def rht_forward(x: Any, h: Any, in_order32: bool, lo: int, hi: int, out: Any) -> None:
    """Rows lo..hi of x (2-D, float32 or float64, C-contiguous, last axis a multiple of 16) times H
    blockwise into out (x's dtype): each output the 16 products summed in order from 0.0 in float64
    and rounded once to out's dtype, or with `in_order32` (float32 x) summed in float32 (Transformer
    Engine)."""
    cols = x.shape[1]
    xf = x.reshape(-1)
    of = out.reshape(-1)
    hf = np.ascontiguousarray(h).reshape(-1)
    h32 = hf.astype(np.float32)
    acc = np.empty(16)
    for b0 in range(lo * cols, hi * cols, 16):
        if in_order32:
            _block16_f32(xf, b0, h32, of, b0)
        else:
            _block16(xf, b0, hf, acc, 0)
            for k in range(16):
                of[_u(b0 + k)] = acc[_u(k)]


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
