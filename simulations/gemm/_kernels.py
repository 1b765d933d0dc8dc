"""Compiled loops of the tensor-core model: fused steps chained over K, the CUDA-core FP32 operations
of promotion and epilogue, and the exact reference (numba, nogil, cached on disk where it can be).

Representation. An operand is two float64 arrays: its values (every operand type is exact in
float64) and 2^e(x), where e(x), its *alignment exponent*, is the exponent of x's leading bit
clamped below at the format's smallest normal exponent (0.0 for a zero, 1.0 for Inf/NaN): the
largest exponent of a step is then a float maximum of products, which vectorises. A is read as
rows (M, K), B as (K, N): the kernels run over a tile's columns innermost.

One fused step (isa.DotUnit) for output (i, j) over products k0 … k0+L-1 and accumulator c:

    e_max = max(E_c, max_k e(a_ik) + e(b_kj) [+ e(scale_a) + e(scale_b)])   (zero products left out)
    T     = Σ_k cut(a_ik · b_kj [· scale_a · scale_b] · 2^(F - e_max)) + cut(c · 2^(F - e_max))
    D     = round_out(T · 2^(e_max - F))

with cut = truncation toward zero (or nearest-even for the what-if alignment) and E_c = e(c), or the
unit's zero exponent when c = 0. Zero products never raise e_max: a zero term counts with the zero
exponent, which lies below every non-zero C's exponent (FP32: -126 > -133, FP16: -14 > -21 …), and
C is always a term — so only a zero C brings the zero exponent in, and the rule is applied there.
Every product and shift is exact in float64 (significands of at most 11 bits each, scale products
of at most 8; |T| < 2^50), so T is the exact integer sum the hardware's adder forms; Inf and NaN
propagate through the same float arithmetic as through the hardware (Inf·0 and Inf - Inf: NaN).
"""

from __future__ import annotations

import math
import os
from typing import Any, Callable

import numpy as np
from numba import njit  # type: ignore[import-untyped]
from numba.core import types as nbtypes  # type: ignore[import-untyped]
from numba.extending import intrinsic  # type: ignore[import-untyped]

_DISK_CACHE = os.environ.get("LOWPREC_CODEC_CACHE", "1") != "0"

#: the Kulisch accumulator of the exact reference: 32-bit digits (held in int64 with headroom for
#: 2^30 additions) from 2^XMIN (below float64's smallest subnormal, 2^-1074) to 2^(XMIN + 32·NL)
XMIN = -1088
NL = 70


def _jit(**flags: Any) -> Callable[[Callable[..., Any]], Any]:
    def wrap(fn: Callable[..., Any]) -> Any:
        if _DISK_CACHE:
            try:
                return njit(nogil=True, cache=True, **flags)(fn)
            except RuntimeError:  # no writable cache directory
                pass
        return njit(nogil=True, cache=False, **flags)(fn)
    return wrap


# ------------------------------------------------------------------------------------------------
# bit casts (float64 ↔ int64 in a register)
# ------------------------------------------------------------------------------------------------

def _bits_typer(typingctx: Any, x: Any) -> Any:
    if not (isinstance(x, nbtypes.Float) and getattr(x, "bitwidth", 0) == 64):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(nbtypes.int64))

    return nbtypes.int64(x), codegen


def _float_typer(typingctx: Any, b: Any) -> Any:
    if not (isinstance(b, nbtypes.Integer) and getattr(b, "bitwidth", 0) == 64):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(nbtypes.float64))

    return nbtypes.float64(b), codegen


_bits: Any = intrinsic(_bits_typer)
_float: Any = intrinsic(_float_typer)


# ------------------------------------------------------------------------------------------------
# one fused step
# ------------------------------------------------------------------------------------------------

#: small helpers inlined into the loops by numba itself, so that LLVM sees (and vectorises) the
#: whole per-column loop: each is written without branches (selects only)
_inline = njit(nogil=True, inline="always")


@_inline  # type: ignore[misc]
def pow2(n: int) -> float:
    """2^n for -1022 ≤ n ≤ 1023, built from its bits."""
    return _float(np.int64(n + 1023) << 52)


@_inline  # type: ignore[misc]
def exponent(x: float) -> int:
    """floor(log2 |x|) of a normal float64 x; -1023 for 0, 1024 for Inf/NaN."""
    return ((_bits(x) >> 52) & 0x7FF) - 1023


@_inline  # type: ignore[misc]
def lead_exponent(x: float, emin: int, zero_exponent: int) -> int:
    """e(x) of an accumulator value: its leading bit's exponent clamped at emin; zero → zero_exponent;
    Inf/NaN → 0 (the result is non-finite whatever the alignment)."""
    e = exponent(x)
    e = e if e > emin else emin
    e = 0 if e == 1024 else e
    return zero_exponent if x == 0.0 else e


@_inline  # type: ignore[misc]
def round_out(total: float, q0: int, kept: int, emin: int, emax: int, nearest: bool) -> float:
    """D from the step's exact sum `total` · 2^q0: rounded to `kept` fraction bits (quantum
    2^(max(e, emin) - kept)), toward zero or to nearest-even; ±Inf from 2^(emax+1); −0 → +0;
    Inf and NaN pass (NaN is made canonical by the caller). Branch-free: a zero sum gives 0 and a
    non-finite one itself through the same arithmetic (its exponent reads as 1024)."""
    v = total * pow2(q0)
    e = exponent(v)
    q = (e if e > emin else emin) - kept
    r = v * pow2(-q)
    r = np.rint(r) if nearest else np.trunc(r)
    res = r * pow2(q)
    res = math.copysign(math.inf, res) if abs(res) >= pow2(emax + 1) else res
    return res + 0.0


@_jit()
def chain_plain(av: Any, ap: Any, bv: Any, bp: Any, c: Any, k_lo: int, k_hi: int, step: int,
                frac_bits: int, zero_exponent: int, nearest_align: bool, kept: int, emin: int,
                emax: int, nearest_out: bool, c_emin: int, d_emin: int,
                sav: Any, sap: Any, sbv: Any, sbp: Any, scale_block: int) -> None:
    """Steps of `step` products over K ∈ [k_lo, k_hi) for every output of the tile, in place on c
    (float64 (Mt, Nt), the accumulator values). av/ap are A's rows (Mt, K), bv/bp B's columns as
    (K, Nt): values and 2^e(x) (0 for a zero). T-FDPA; with scale_block > 0, ST-FDPA: the products
    of K block b are multiplied by sav[i, b] · sbv[b, j] and their alignment exponents raised by
    those of the scales (2^e in sap, sbp).

    Loop order: step, row, then the tile's columns innermost (elementwise, so the compiler
    vectorises the maximum and the sums without reassociating anything); one step's slab of B
    stays in cache while every row uses it."""
    mt, nt = c.shape
    mp = np.empty(nt)  # max of 2^e(a)·2^e(b) per column, then e_max
    total = np.empty(nt)
    scale = np.empty(nt)
    mult = np.ones(nt)
    cemin = c_emin
    for k0 in range(k_lo, k_hi, step):
        k1 = k0 + step
        b = k0 // scale_block if scale_block > 0 else 0
        for i in range(mt):
            acc = c[i]
            mp[:] = 0.0
            for k in range(k0, k1):
                x = ap[i, k]
                row = bp[k]
                for j in range(nt):
                    y = x * row[j]
                    mp[j] = y if y > mp[j] else mp[j]
            for j in range(nt):
                m = mp[j]
                if scale_block > 0:
                    mult[j] = sav[i, b] * sbv[b, j]
                    m *= sap[i, b] * sbp[b, j]
                ec = lead_exponent(acc[j], cemin, zero_exponent)
                e_max = max(exponent(m), ec)  # m = 0 (every product zero) reads as 2^-1023
                s = pow2(frac_bits - e_max)
                scale[j] = mult[j] * s
                total[j] = np.rint(acc[j] * s) if nearest_align else np.trunc(acc[j] * s)
                mp[j] = e_max
            for k in range(k0, k1):
                x = av[i, k]
                row = bv[k]
                if nearest_align:
                    for j in range(nt):
                        total[j] += np.rint(x * row[j] * scale[j])
                else:
                    for j in range(nt):
                        total[j] += np.trunc(x * row[j] * scale[j])
            for j in range(nt):
                acc[j] = round_out(total[j], int(mp[j]) - frac_bits, kept, emin, emax, nearest_out)
        cemin = d_emin


@_jit()
def chain_group_sums(gs: Any, zs: Any, c: Any, k_lo: int, k_hi: int, step: int, group: int,
                     frac_bits: int, zero_exponent: int, nearest_align: bool, kept: int, emin: int,
                     emax: int, nearest_out: bool, c_emin: int, d_emin: int,
                     sav: Any, sap: Any, sbv: Any, sbp: Any, scale_block: int) -> None:
    """GST-FDPA steps (layouts as chain_plain) from the group sums: gs[g, i, j] = Σ_{k in group g}
    a_ik·b_kj and zs[g, i, j] = Σ |a_ik·b_kj| for the groups of K ∈ [k_lo, k_hi) (g = 0 the group at
    k_lo), each exact (the caller forms them where that is provable: FP4 products, by matrix
    products). Each group sum is multiplied by its scale product and aligned on the scale product's
    exponent (of sap · sbp); a group whose products are all zero (zs = 0), or whose scale product is
    zero, is a zero term. Loops run over a tile's columns innermost (contiguous rows of gs)."""
    mt, nt = c.shape
    n_groups = step // group
    e_max = np.empty(nt, np.int64)
    mult = np.empty((n_groups, nt))
    scale = np.empty(nt)
    tot = np.empty(nt)
    cemin = c_emin
    for s0 in range(0, (k_hi - k_lo) // group, n_groups):
        for i in range(mt):
            acc = c[i]
            for j in range(nt):
                e_max[j] = lead_exponent(acc[j], cemin, zero_exponent)
            for g in range(n_groups):
                b = (k_lo + (s0 + g) * group) // scale_block
                ea = exponent(sap[i, b])
                sva = sav[i, b]
                srow_v = sbv[b]
                srow_p = sbp[b]
                z = zs[s0 + g, i]
                m = mult[g]
                for j in range(nt):
                    m[j] = sva * srow_v[j]
                    cand = ea + exponent(srow_p[j])
                    take = (z[j] != 0.0) & (m[j] != 0.0)
                    e_max[j] = max(e_max[j], cand) if take else e_max[j]
            for j in range(nt):
                scale[j] = pow2(frac_bits - e_max[j])
                t = acc[j] * scale[j]
                tot[j] = np.rint(t) if nearest_align else np.trunc(t)
            for g in range(n_groups):
                row = gs[s0 + g, i]
                m = mult[g]
                for j in range(nt):
                    t = (row[j] * m[j]) * scale[j]
                    tot[j] += np.rint(t) if nearest_align else np.trunc(t)
            for j in range(nt):
                acc[j] = round_out(tot[j], e_max[j] - frac_bits, kept, emin, emax, nearest_out)
        cemin = d_emin


# ------------------------------------------------------------------------------------------------
# CUDA-core FP32 arithmetic (promotion, epilogue): IEEE binary32, round to nearest even, gradual
# underflow, NaN results canonical (0x7FFFFFFF as NVIDIA's FADD/FMUL/FFMA return them)
# ------------------------------------------------------------------------------------------------

@_jit()
def _f32(x: float) -> float:
    """x (float64) rounded once to FP32, as float64; NaN → NaN."""
    return float(np.float32(x))


@_jit()
def f32_add(x: float, y: float) -> float:
    """FADD: the float64 sum of two FP32 values rounded to FP32 (double rounding through binary64
    is innocuous for +, 53 ≥ 2·24 + 2)."""
    return _f32(x + y)


@_jit()
def f32_mul(x: float, y: float) -> float:
    """FMUL: the product of two FP32 values is exact in float64; one rounding to FP32."""
    return _f32(x * y)


@_jit()
def _two_prod(x: float, y: float) -> tuple[float, float]:
    """(p, e) with p = fl(x·y) and x·y = p + e exactly (Dekker/Veltkamp, no FMA needed; valid
    while |x|, |y| < 2^995 and |x·y| above 2^-969, which every operand product here is)."""
    p = x * y
    split = 134217729.0  # 2^27 + 1
    t = split * x
    xh = t - (t - x)
    xl = x - xh
    t = split * y
    yh = t - (t - y)
    yl = y - yh
    e = ((xh * yh - p) + xh * yl + xl * yh) + xl * yl
    return p, e


@_jit()
def f32_fma(a: float, b: float, c: float) -> float:
    """FFMA: a·b + c for FP32 a, b, c rounded once to FP32. a·b is exact in float64; the sum is
    formed round-to-odd in binary64 (fl(s) with its last bit set when the addition was inexact),
    which makes the final rounding to FP32 the correct one (Boldo & Melquiond, 2008)."""
    p = a * b
    s = p + c
    if not math.isfinite(s):
        return _f32(s)
    # TwoSum: s + r == p + c exactly
    bb = s - p
    r = (p - (s - bb)) + (c - bb)
    if r != 0.0:
        bits = _bits(s)
        if (bits & 1) == 0:
            if (r > 0.0) == (s > 0.0):
                bits += 1  # away from zero, toward the exact value
            else:
                bits -= 1
            s = _float(bits)
    return _f32(s)


@_jit()
def promote_tile(acc: Any, partial: Any, sa: Any, sb: Any, kb: int, fused: bool) -> None:
    """acc ← FFMA(sa[i, kb] · sb[j, kb], partial, acc) (DeepGEMM's promotion with block scales;
    the scale product is one FMUL) or, with fused False, acc ← FADD(acc, partial)."""
    mt, nt = acc.shape
    for i in range(mt):
        for j in range(nt):
            if fused:
                s = f32_mul(sa[i, kb], sb[kb, j])
                acc[i, j] = f32_fma(s, partial[i, j], acc[i, j])
            else:
                acc[i, j] = f32_add(acc[i, j], partial[i, j])


@_jit()
def epilogue_tile(acc: Any, sa: Any, sb: Any, c: Any, with_c: bool, scaled: bool) -> None:
    """D = s_a · (s_b · acc) [+ C]: vLLM's CUTLASS ScaledEpilogue (two FMULs, B's scale first) and,
    with C, ScaledEpilogueBias (the outer product an FFMA with C); without scales D = acc [+ C] (FADD)."""
    mt, nt = acc.shape
    for i in range(mt):
        for j in range(nt):
            v = acc[i, j]
            if scaled:
                v = f32_mul(sb[0, j], v)
                v = f32_fma(sa[i, 0], v, c[i, j]) if with_c else f32_mul(sa[i, 0], v)
            elif with_c:
                v = f32_add(v, c[i, j])
            acc[i, j] = v


# ------------------------------------------------------------------------------------------------
# the exact reference: Σ_k (s_a · a_ik)(s_b · b_kj) + c_ij, every term exact, summed in a Kulisch
# accumulator (or, where the operands' exponent span provably fits, in float64 without error)
# ------------------------------------------------------------------------------------------------

@_jit()
def _kadd(limbs: Any, x: float) -> None:
    """limbs += x (x finite): x's 53-bit significand split over three 32-bit digits."""
    if x == 0.0:
        return
    bits = _bits(x)
    neg = bits < 0
    biased = (bits >> 52) & 0x7FF
    mant = bits & ((1 << 52) - 1)
    if biased == 0:
        biased = 1
    else:
        mant |= 1 << 52
    o = biased - 1075 - XMIN
    idx = o >> 5
    sh = o & 31
    v1 = (mant & 0xFFFFFFFF) << sh
    v2 = (mant >> 32) << sh
    d0 = v1 & 0xFFFFFFFF
    d1 = (v1 >> 32) + (v2 & 0xFFFFFFFF)
    d2 = v2 >> 32
    if neg:
        limbs[idx] -= d0
        limbs[idx + 1] -= d1
        limbs[idx + 2] -= d2
    else:
        limbs[idx] += d0
        limbs[idx + 1] += d1
        limbs[idx + 2] += d2


@_jit()
def _kvalue(limbs: Any, work: Any) -> float:
    """The accumulator's value rounded once to float64 (nearest even)."""
    n = limbs.shape[0]
    for t in range(n):
        work[t] = limbs[t]
    for t in range(n - 1):  # signed carries: every digit but the top one into [0, 2^32)
        carry = work[t] >> 32
        work[t] -= carry << 32
        work[t + 1] += carry
    sign = 1.0
    if work[n - 1] < 0:
        sign = -1.0
        for t in range(n):
            work[t] = -work[t]
        for t in range(n - 1):
            carry = work[t] >> 32
            work[t] -= carry << 32
            work[t + 1] += carry
    h = n - 1
    while h >= 0 and work[h] == 0:
        h -= 1
    if h < 0:
        return 0.0
    # the leading 54 bits (53 and a guard bit) of the top three digits N = hi·2^64 + mid·2^32 + lo,
    # and a sticky bit for everything below them
    hi = work[h]
    mid = work[h - 1] if h >= 1 else 0
    lo = work[h - 2] if h >= 2 else 0
    sticky = False
    for t in range(h - 2):
        if work[t] != 0:
            sticky = True
            break
    nb = 0  # bit length of hi (1 … 32)
    x = hi
    while x > 0:
        nb += 1
        x >>= 1
    s = nb + 10  # N >> s keeps 54 bits (11 ≤ s ≤ 42)
    r = hi << (64 - s)
    if s <= 32:
        r += (mid << (32 - s)) + (lo >> s)
        sticky = sticky or (lo & ((1 << s) - 1)) != 0
    else:
        r += mid >> (s - 32)
        sticky = sticky or lo != 0 or (mid & ((1 << (s - 32)) - 1)) != 0
    mant = r >> 1
    if (r & 1) == 1 and (sticky or (mant & 1) == 1):
        mant += 1
    return sign * math.ldexp(float(mant), s + 1 + 32 * (h - 2) + XMIN)


@_jit()
def _kadd_product(limbs: Any, x: float, y: float) -> float:
    """limbs += x·y exactly (two terms from TwoProduct); a non-finite product is returned instead."""
    p, e = _two_prod(x, y)
    if not math.isfinite(p):
        return p
    _kadd(limbs, p)
    _kadd(limbs, e)
    return 0.0


@_jit()
def exact_tile(av: Any, bv: Any, sa: Any, sb: Any, block: int, c: Any, out: Any,
               exact: Any, error: Any, fixed_point: bool) -> None:
    """exact[i, j] = Σ_b (sa[i, b] · sb[b, j]) · Σ_{k in block b} a_ik · b_kj + c_ij, rounded once
    to float64; error[i, j] = out[i, j] − exact, rounded once (av (Mt, K), bv (K, Nt)). With
    fixed_point the block sums are formed in float64 (the caller proved them exact); otherwise
    every product goes to the accumulator. Non-finite terms give the IEEE result of their float64
    sum (and the error is 0 where out equals that Inf)."""
    mt, nt = out.shape
    k = av.shape[1]
    n_blocks = sa.shape[1]
    limbs = np.zeros((nt, NL), np.int64)
    work = np.zeros(NL, np.int64)
    t = np.empty(nt)
    special = np.empty(nt)
    for i in range(mt):
        limbs[:, :] = 0
        special[:] = 0.0
        for b in range(n_blocks):
            k0 = b * block
            k1 = min(k, k0 + block)
            if fixed_point:
                t[:] = 0.0
                for kk in range(k0, k1):
                    x = av[i, kk]
                    row = bv[kk]
                    for j in range(nt):
                        t[j] += x * row[j]
                for j in range(nt):
                    # two FP32 values (or powers of two): their product is exact in float64
                    special[j] += _kadd_product(limbs[j], t[j], sa[i, b] * sb[b, j])
            else:
                for kk in range(k0, k1):
                    x = av[i, kk]
                    for j in range(nt):
                        special[j] += _kadd_product(limbs[j], x * bv[kk, j], sa[i, b] * sb[b, j])
        for j in range(nt):
            cij = c[i, j]
            if math.isfinite(cij):
                _kadd(limbs[j], cij)
            else:
                special[j] += cij
            o = out[i, j]
            sp = special[j]
            if not math.isfinite(sp):
                exact[i, j] = sp
                error[i, j] = 0.0 if o == sp else o - sp
                continue
            exact[i, j] = _kvalue(limbs[j], work)
            if math.isfinite(o):
                _kadd(limbs[j], -o)
                error[i, j] = -_kvalue(limbs[j], work)  # the accumulator holds exact − out
            else:
                error[i, j] = o


# ------------------------------------------------------------------------------------------------
# operands: the representability check and 2^e(x) in one pass
# ------------------------------------------------------------------------------------------------

@_jit()
def scan_operand(v: Any, powers: Any, emin: int, mantissa_bits: int, max_value: float, has_zero: bool,
                 has_nan: bool, has_inf: bool, signed: bool, subnormals: bool) -> tuple[int, int, int]:
    """One pass over a flat float64 array: (first index not exactly a value of the format or -1,
    the largest leading exponent, the smallest quantum exponent of its finite non-zero values), and
    powers[i] = 2^e(v[i]) (0 for a zero, 1 for Inf/NaN). A value is exact when it is a multiple of
    its quantum 2^(max(e, emin) - mantissa_bits) no larger than max_value (see operands)."""
    bad = -1
    top = -(1 << 30)
    low = 1 << 30
    for i in range(v.shape[0]):
        x = v[i]
        ok = True
        if x != x:
            ok = has_nan
            powers[i] = 1.0
        elif not math.isfinite(x):
            ok = has_inf and (signed or x > 0.0)
            powers[i] = 1.0
        elif x == 0.0:
            ok = has_zero
            powers[i] = 0.0
        elif ((_bits(x) >> 52) & 0x7FF) == 0:  # a float64 subnormal: below every format here
            ok = False
            powers[i] = 0.0
        else:
            e = exponent(x)
            ee = e if e > emin else emin
            q = ee - mantissa_bits
            scaled = x * pow2(-q)
            ok = scaled == np.trunc(scaled) and abs(x) <= max_value and (signed or x > 0.0) \
                and (subnormals or e >= emin)
            powers[i] = pow2(ee)
            top = max(top, e)
            low = min(low, q)
        if not ok and bad < 0:
            bad = i
    return bad, top, low
