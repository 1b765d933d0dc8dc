"""The compiled MX block quantizer: one fused pass per block — amax, E8M0 scale code under the named
convention, element scaling and the element cast — on the numba kernels of `formats._kernels`.

This is the compiled twin of `simulations.mx.quantize_mx`'s numpy path (the readable reference,
which stays): the same arithmetic, operation for operation, so the codes are bit-identical for
every block convention (`simulations.quant.conventions`: ocp, torchao, transformer_engine), every
scale rule, element format, element policy (stochastic rounding included) and input dtype. Which
path runs follows the codec's switch (`LOWPREC_CODEC`, `formats.codec.codec_path`): `numpy` forces
the reference, `fast` the kernel, `auto` the kernel for arrays of at least `codec.FAST_MIN`
elements. Without numba the numpy path runs (the codec warns once).

One kernel loop per block (blocks are rows of the grouped array, `quant._blockwise`):

1. amax: the unsigned max of the block's |x| bit patterns (NaN > Inf > finite, as `amax_bits`;
   under `AmaxNaN.IGNORE` a NaN counts as 0);
2. the E8M0 scale code by `MXScale`: EXACT from the amax's exponent and fraction bits (the
   `ScaleRule` formulas become "fraction ≥ T" for a per-rule constant T), EXPONENT_FIELD from the
   float32 bits, FLOAT32_LOG2 as d = fl32(amax / max_elem) and then a table per float32 binade of
   d (the code is base[e] + (mantissa ≥ thr[e]), the table built from the numpy reference's own
   `float32_log2_ceil_codes`, so the two agree by construction; the slow sweep checks every d),
   RECIPROCAL_ROUND_UP from d = fl32(amax · fl32(1 / max_elem))'s bits;
3. the element multiplier r = table[code] in the input's dtype (torchao rceil's NaN scale: the
   NaN amax itself); a NaN r makes every scaled element that NaN; an ocp NaN/Inf block is scaled
   to +0 (zero codes);
4. each element: `_float_elem` of the bits of x · r under the element policy's plan, then the
   element cast's NaN rule (torchao's FP6/FP4 NaN code formula).

Stochastic rounding (ocp with a stochastic policy) uses the numpy path's stream exactly: chunk ci of
`_blockwise.CHUNK_BLOCKS` blocks has the Philox key the reference's `encode(…, rng=rngs[ci])` draws,
and an element's counter is its index within the chunk. A kernel is specialised per (element plan,
scale kind, element scaling, amax NaN rule, NaN rule, stochastic) and cached like the codec's.
"""

from __future__ import annotations

from collections import namedtuple
from functools import lru_cache
from typing import Any, Callable

import numpy as np

from lowprec.formats import CastPolicy, FloatFormat, Rounding
from lowprec.formats import _kernels as K
from lowprec.formats.codec import check_policy, map_on_threads
from lowprec.formats.philox import stochastic_key

from ._blockwise import CHUNK_BLOCKS
from .conventions import (
    AmaxNaN,
    BlockConvention,
    ElementCast,
    MXElementScaling,
    MXRule,
    MXScale,
    float32_log2_ceil_codes,
    mx_element_multipliers,
)
from .scale_rules import E8M0_BIAS, ScaleRule

__all__ = ["log2_tables", "mx_block_kernel", "quantize_mx_compiled"]

_S_EXACT, _S_EXP_FIELD, _S_LOG2, _S_RECIP_UP = range(4)
_SCALE_KIND = {MXScale.EXACT: _S_EXACT, MXScale.EXPONENT_FIELD: _S_EXP_FIELD,
               MXScale.FLOAT32_LOG2: _S_LOG2, MXScale.RECIPROCAL_ROUND_UP: _S_RECIP_UP}
_NAN_NONE, _NAN_FLOATX = range(2)

MXPlan = namedtuple("MXPlan", [
    # the input's bit layout (uint32 for float32, uint64 for float64) and whether rounding is stochastic
    "abs_mask", "inf_bits", "p", "mmask", "hid", "bias", "u_zero", "stochastic",
])

_F32_ZERO = np.float32(0.0)


# ------------------------------------------------------------------------------------------------
# scale codes (one per block; scalar code)
# ------------------------------------------------------------------------------------------------


@K._inline  # type: ignore[misc]
def _scale_exact(amax: Any, q: Any, emax: Any, thr: Any) -> Any:
    """EXACT: X = e − emax + (fraction ≥ thr), clamped to [−127, 127] (amax 0: −127); NaN/Inf: 0xFF."""
    if amax >= q.inf_bits:
        return 0xFF
    if amax == q.u_zero:
        return 0
    e_raw = np.int64(amax >> q.p)
    frac = amax & q.mmask
    if e_raw == 0:  # subnormal: normalise (frexp's view of the same value)
        e = np.int64(1) - q.bias
        while (frac & q.hid) == q.u_zero:
            frac = frac + frac
            e -= 1
        frac = frac & q.mmask
    else:
        e = e_raw - q.bias
    x = e - emax + (np.int64(frac) >= thr)
    return np.int64(min(max(x, -E8M0_BIAS), E8M0_BIAS) + E8M0_BIAS)


@K._inline  # type: ignore[misc]
def _scale_exponent_field(b: Any, emax: Any, rule: Any, m: Any) -> Any:
    """EXPONENT_FIELD (torchao floor / ceil / even) of float32 amax bits b."""
    if b > np.uint32(0x7F800000):
        return 0xFF
    bits = np.int64(b)
    if rule == 3:  # even
        bits = (bits + (np.int64(1) << (22 - m))) & np.int64(0xFF800000)
    e = ((bits >> 23) & 0xFF) - 127
    if rule == 1:  # ceil
        e += np.int64((b & np.uint32(0x7FFFFF)) > np.uint32(0))
    return np.int64(min(max(e - emax, -E8M0_BIAS), E8M0_BIAS + 1) + E8M0_BIAS)


@K._inline  # type: ignore[misc]
def _scale_float32_log2(b: Any, max_elem: Any, base: Any, thr: Any) -> Any:
    """FLOAT32_LOG2 (torchao rceil): d = fl32(amax / max_elem); table lookup by d's binade."""
    d = K._float_of(b, _F32_ZERO) / max_elem
    db = K._bits_of(d)
    if db > np.uint32(0x7F800000):
        return 0xFF
    if db == np.uint32(0x7F800000):
        return 0xFE
    e = np.int64(db >> np.uint32(23))
    return base[e] + np.int64(np.int64(db & np.uint32(0x7FFFFF)) >= thr[e])


@K._inline  # type: ignore[misc]
def _scale_reciprocal_round_up(b: Any, recip: Any) -> Any:
    """RECIPROCAL_ROUND_UP (Transformer Engine float_to_e8m0) of d = fl32(amax · fl32(1/max_elem))."""
    d = K._float_of(b, _F32_ZERO) * recip
    db = K._bits_of(d)
    if db > np.uint32(0x7F800000):
        return 0xFF
    if db == np.uint32(0x7F800000):
        return 0xFE
    field = np.int64(db >> np.uint32(23))
    mant = np.int64(db & np.uint32(0x7FFFFF))
    up = (mant > 0) and (field != 0xFE) and not ((field == 0) and (mant <= 0x400000))
    return field + np.int64(up)


# ------------------------------------------------------------------------------------------------
# the loop kernel of one specialisation
# ------------------------------------------------------------------------------------------------


# runtime settings of a call (int64 array `c`): per-block choices cost nothing next to the elements,
# and keeping them out of the specialisation keeps the number of compiled kernels small
(_C_SCALE, _C_ZERO_BAD, _C_ONE_AT_ZERO, _C_IGNORE_NAN, _C_NAN_RULE, _C_EMAX, _C_THR, _C_RULE, _C_M,
 _C_NAN_REBIAS, _C_NAN_ROUND, _C_NAN_SHIFT, _C_SIGN_SHIFT) = range(13)


@K._ir_inline  # type: ignore[misc]
def _elem(v: Any, u: Any, floatx_nan: bool, c: Any, ep: Any, U: Any) -> Any:
    """(code, refused) of one scaled value: the element plan's cast, or torchao's FP6/FP4 NaN code."""
    if floatx_nan and v != v:
        bits = np.int64(K._bits_of(np.float32(v)))
        mag = bits & np.int64(0x7FFFFFFF)
        shift = c[_C_NAN_SHIFT]
        n = (mag + c[_C_NAN_REBIAS] + c[_C_NAN_ROUND] + ((mag >> shift) & 1)) >> shift
        return U((n & 0xFF) | (((bits >> 31) & 1) << c[_C_SIGN_SHIFT])), False
    if ep.in_kind == K._IN_F64_VIA_F32:
        b = U(K._bits_of(np.float32(v)))
    else:
        b = U(K._bits_of(v))
    return K._float_elem(b, np.uint32(0), u, ep, U)


def _mx_loops(q: Any, ep: Any, U: Any) -> Callable[..., int]:
    """The block loop of one specialisation (element plan `ep`, input bit layout `q`): a closure over
    constants only, so numba's disk cache keys it by their values."""

    def kernel(x: Any, bs: int, codes: Any, scodes: Any, blo: int, bhi: int, c: Any, max_elem: Any,
               recip: Any, base: Any, thr: Any, mult: Any, keys0: Any, keys1: Any) -> int:
        scale_kind = c[_C_SCALE]
        ignore_nan = c[_C_IGNORE_NAN] != 0
        zero_bad = c[_C_ZERO_BAD] != 0
        one_at_zero = c[_C_ONE_AT_ZERO] != 0
        floatx_nan = c[_C_NAN_RULE] == _NAN_FLOATX
        k0 = np.uint32(0)
        k1 = np.uint32(0)
        first = 0
        for b in range(blo, bhi):
            start = b * bs
            amax = q.u_zero
            if ignore_nan:
                for j in range(bs):
                    a = U(K._bits_of(x[np.uint64(start + j)]) & q.abs_mask)
                    amax = max(amax, q.u_zero if a > q.inf_bits else a)
            else:
                for j in range(bs):
                    amax = max(amax, U(K._bits_of(x[np.uint64(start + j)]) & q.abs_mask))
            if scale_kind == _S_EXACT:
                sc = _scale_exact(amax, q, c[_C_EMAX], c[_C_THR])
            elif scale_kind == _S_EXP_FIELD:
                sc = _scale_exponent_field(np.uint32(amax), c[_C_EMAX], c[_C_RULE], c[_C_M])
            elif scale_kind == _S_LOG2:
                sc = _scale_float32_log2(np.uint32(amax), max_elem, base, thr)
            else:
                sc = _scale_reciprocal_round_up(np.uint32(amax), recip)
            scodes[np.uint64(b)] = np.uint8(sc)
            r = mult[np.uint64(sc)]
            if one_at_zero and sc == 0xFF:
                r = K._float_of(amax, r)  # torchao multiplies by the NaN amax itself
            # a block whose every scaled element is r: the ocp NaN/Inf block (r = +0 from the
            # table) or a NaN multiplier (a NaN r wins over the elements, as torch's broadcast)
            if (zero_bad and sc == 0xFF) or (r != r):
                code, refused = _elem(r, np.uint32(0), floatx_nan, c, ep, U)  # exact: no random bits
                if refused:
                    return start
                for j in range(bs):
                    codes[np.uint64(start + j)] = np.uint8(code)
                continue
            if q.stochastic:
                ci = b // CHUNK_BLOCKS
                k0 = np.uint32(keys0[ci])
                k1 = np.uint32(keys1[ci])
                first = (b - ci * CHUNK_BLOCKS) * bs  # element index within the chunk
            any_refused = False
            if floatx_nan:
                for j in range(bs):
                    code, refused = _elem(x[np.uint64(start + j)] * r, np.uint32(0), True, c, ep, U)
                    codes[np.uint64(start + j)] = np.uint8(code)
                    any_refused |= refused
            else:
                for j in range(bs):
                    if q.stochastic:
                        i = first + j
                        n = (np.uint64(i >> 10) << np.uint64(8)) | np.uint64(i & 255)
                        w = K._philox(n, k0, k1)
                        word = (i >> 8) & 3
                        u = w[0] if word == 0 else (w[1] if word == 1 else (w[2] if word == 2 else w[3]))
                    else:
                        u = np.uint32(0)
                    code, refused = _elem(x[np.uint64(start + j)] * r, u, False, c, ep, U)
                    codes[np.uint64(start + j)] = np.uint8(code)
                    any_refused |= refused
            if any_refused:
                return start
        return -1

    return kernel


# ------------------------------------------------------------------------------------------------
# plans, tables and the driver
# ------------------------------------------------------------------------------------------------

_MANT = 1 << 23


@lru_cache(maxsize=None)
def log2_tables(max_elem: float) -> tuple[np.ndarray, np.ndarray]:
    """(base, thr), int64[256]: for a float32 d = fl32(amax / max_elem) with exponent field e < 255
    and mantissa bits t, `float32_log2_ceil_codes(d)` is base[e] + (t ≥ thr[e]) (thr 2^23: never).
    Found by bisection on the reference function itself, per binade (where the code is monotone
    and takes at most two values; checked here, and for every d by the slow sweep)."""
    fields = np.arange(255, dtype=np.uint32) << np.uint32(23)

    def codes_at(mant: np.ndarray) -> np.ndarray:
        return float32_log2_ceil_codes((fields | mant.astype(np.uint32)).view(np.float32)).astype(np.int64)

    lo = np.zeros(255, np.int64)
    hi = np.full(255, _MANT - 1, np.int64)
    base, top = codes_at(lo), codes_at(hi)
    if np.any((top - base < 0) | (top - base > 1)):
        raise AssertionError("float32_log2_ceil_codes is not a one-step function on a binade")
    while np.any(hi - lo > 1):  # invariant: code(lo) = base, code(hi) = top
        mid = (lo + hi) // 2
        c = codes_at(mid)
        lo = np.where(c == base, mid, lo)
        hi = np.where(c == base, hi, mid)
    thr = np.where(top == base, _MANT, hi)
    return np.append(base, 0xFF), np.append(thr, _MANT)


def _exact_fraction_threshold(rule: ScaleRule, elem: FloatFormat, p: int) -> int:
    """T such that the ScaleRule adds one to X iff amax's fraction bits (p of them) are ≥ T."""
    if rule is ScaleRule.FLOOR:
        return 1 << p  # never
    if rule is ScaleRule.CEIL:
        return 1  # sig > 1
    if rule is ScaleRule.RCEIL:  # sig > max_elem / 2^emax, a value with the element's mantissa bits
        c = elem.max / 2.0**elem.emax
        return int((c - 1.0) * 2**p) + 1
    return (1 << p) - (1 << (p - elem.mantissa_bits - 1))  # EVEN: sig ≥ 2 − 2^−(m+1)


def _plan(pol: CastPolicy, dtype: np.dtype) -> tuple[Any, Any]:
    """(MXPlan, U): the compile-time constants of the input's bit layout."""
    wide = dtype == np.float64
    U: Any = np.uint64 if wide else np.uint32
    p, bias = (52, 1023) if wide else (23, 127)
    return MXPlan(abs_mask=U((1 << (63 if wide else 31)) - 1), inf_bits=U(0x7FF0000000000000 if wide else 0x7F800000),
                  p=U(p), mmask=U((1 << p) - 1), hid=U(1 << p), bias=bias, u_zero=U(0),
                  stochastic=pol.rounding is Rounding.STOCHASTIC), U


def _settings(elem: FloatFormat, conv: BlockConvention, mxr: MXRule, dtype: np.dtype) -> np.ndarray:
    """The runtime settings array `c` of the kernel (see the _C_ indices)."""
    m = elem.mantissa_bits
    c = np.zeros(13, np.int64)
    c[_C_SCALE] = _SCALE_KIND[mxr.scale]
    c[_C_ZERO_BAD] = mxr.element_scaling is MXElementScaling.EXACT
    c[_C_ONE_AT_ZERO] = mxr.element_scaling is MXElementScaling.RECIPROCAL_ONE_AT_ZERO
    c[_C_IGNORE_NAN] = conv.mx_amax_nan is AmaxNaN.IGNORE
    floatx_nan = conv.mx_element_cast is ElementCast.TORCH_CLAMPED and not elem.has_nan
    c[_C_NAN_RULE] = _NAN_FLOATX if floatx_nan else _NAN_NONE
    c[_C_EMAX] = elem.emax
    c[_C_THR] = _exact_fraction_threshold(mxr.rule, elem, 52 if dtype == np.float64 else 23)
    c[_C_RULE] = {ScaleRule.FLOOR: 0, ScaleRule.CEIL: 1, ScaleRule.RCEIL: 2, ScaleRule.EVEN: 3}[mxr.rule]
    c[_C_M] = m
    c[_C_NAN_REBIAS] = (elem.bias - 127) << 23
    c[_C_NAN_ROUND] = (1 << (22 - m)) - 1
    c[_C_NAN_SHIFT] = 23 - m
    c[_C_SIGN_SHIFT] = elem.bits - 1
    return c


@lru_cache(maxsize=None)
def _compiled(q: Any, ep: Any, U: Any) -> Any:
    return K._jit(_mx_loops(q, ep, U))


def mx_block_kernel(elem: FloatFormat, pol: CastPolicy, conv: BlockConvention, mxr: MXRule,
                    dtype: np.dtype) -> Any | None:
    """The compiled kernel of one MX specialisation, or None where the element cast has none."""
    if conv.mx_element_cast is ElementCast.E2M1_THRESHOLDS:
        return None
    q, U = _plan(pol, np.dtype(dtype))
    ep, _ = K.float_plan(elem, pol, np.dtype(dtype))
    return _compiled(q, ep, U)


def quantize_mx_compiled(blocks: np.ndarray, elem: FloatFormat, pol: CastPolicy, conv: BlockConvention,
                         mxr: MXRule, rngs: list[np.random.Generator] | None, threads: int,
                         codes_out: np.ndarray, scales_out: np.ndarray) -> bool:
    """Writes the codes (uint8, n_blocks × block_size, C-contiguous) and scale codes (uint8,
    n_blocks) of `blocks` (float32/float64) as the numpy path of `quantize_mx` computes them; False
    when the kernel cannot (no kernel for the element cast, or the policy refuses an element: the
    caller runs the reference, which raises its error)."""
    check_policy(elem, pol)  # as the reference's `encode` does
    kernel = mx_block_kernel(elem, pol, conv, mxr, blocks.dtype)
    if kernel is None:
        return False
    x = np.ascontiguousarray(blocks)
    nb, bs = x.shape
    flat = x.reshape(-1)
    codes = codes_out.reshape(-1)  # a view (contiguous): the kernel writes the caller's arrays
    scodes = scales_out.reshape(-1)
    if mxr.scale is MXScale.EXACT:
        mult = np.ldexp(np.ones(256, x.dtype), (E8M0_BIAS - np.arange(256)).astype(np.int32))
        mult[0xFF] = 0.0  # the NaN/Inf block: every element scaled to +0
    else:
        mult = mx_element_multipliers(mxr.element_scaling).astype(x.dtype)
    base, thr = log2_tables(float(elem.max))
    if rngs is not None:
        keys = np.array([stochastic_key(r) for r in rngs], np.uint64)
    else:
        keys = np.zeros(1, np.uint64)
    keys0 = (keys & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    keys1 = (keys >> np.uint64(32)).astype(np.uint32)
    args = (_settings(elem, conv, mxr, x.dtype), np.float32(elem.max), np.float32(1.0) / np.float32(elem.max),
            base, thr, mult, keys0, keys1)

    def part(r: tuple[int, int]) -> int:
        return int(kernel(flat, bs, codes, scodes, r[0], r[1], *args))

    per = -(-nb // max(1, threads))
    ranges = [(lo, min(nb, lo + per)) for lo in range(0, nb, per)] or [(0, 0)]
    refused = map_on_threads(part, ranges)
    return not any(i >= 0 for i in refused)
