"""Compiled one-pass codec kernels: encode, stochastic rounding and decode, one element at a time.

Engine: numba (LLVM). Why: it compiles plain Python loops to vectorised machine code (AVX2 here) with
no C toolchain at install time (numba and llvmlite wheels for the common platforms), keeps the kernels readable
next to the numpy reference, releases the GIL so our own thread pool runs them in parallel, and can
*specialise*: a kernel is built per (format, policy, input dtype) as a closure over that case's
constants, so LLVM folds every policy branch away and each specialisation is a straight-line loop
body — one read of the input, one write of the codes, no temporaries. torch's vectorised integer
ops were the other candidate; they run one operator per pass (≈ 15 passes for a full policy), which
is what the numpy codec already does. A C extension would need a compiler on every install.

Layout of the family (element functions, inlined into loop kernels):

* `_float_elem`: the cast of one float32/float64 bit pattern to a float format's code under a
  policy, as integer arithmetic on the bits. Rounding is one of
  `_round_nearest_even` (add-and-shift in the target's normal range, a float "magic number" add
  below it — the numpy reference's shortcut), `_round_e8m0_exponent_field` (E8M0 under the
  ml_dtypes/torch reading of float32 subnormals) or `_round_general` (every mode, stochastic
  included: the value sig·2^(e-p) gets the quantum exponent qe = max(e, emin) - m, the rounded
  significand n and the code ((qe - qe_min) << m) + n); a shared tail applies flushing, ±Inf, NaN
  payloads, signs and the unsigned-E8M0 rules as selects. `_int_elem` does INT8/INT4 in float.
* `encode_kernel(fmt, policy, dtype)` builds the loop: deterministic, or for stochastic rounding a
  loop over 1024-element tiles that first fills the tile's 1024 Philox-4x32-10 words (256 calls,
  vectorised; the stream of `formats.philox`) and then rounds the tile with them.
* `decode_all_valid` / `decode_checked`: codes → float32 through the exact value table
  (`codec._decode_table`), the range check fused into the pass where the code dtype needs one;
  `decode_shifted` where that table is a plain shift of the code (BF16).

Each kernel works on an index range [lo, hi) of flat arrays and returns the first index whose value
the policy refuses (NaN into a NaN-less format under nan_to_finite='raise', zero/negative into E8M0
under 'raise') or -1; `codec` splits arrays over its thread pool and raises the error.

Caching: kernels are compiled at first use (about 1 s each, 3 s for a stochastic one, on this
2-core machine) and kept in memory; with a writable
cache directory numba also stores them on disk (`cache=True`: the package's `__pycache__`, else
NUMBA_CACHE_DIR or the user cache), so a later process loads them in milliseconds. A read-only
install without a writable cache directory compiles in memory only. LOWPREC_CODEC_CACHE=0 turns the
disk cache off.

Block quantizers. MX is built on these kernels in `simulations.quant._mx_kernels` (its conventions
are simulations' knowledge, so the loop lives there and imports `_float_elem`, `float_plan`, the bit
casts and Philox from here): a loop over blocks (a thread range is a range of blocks) that takes the
block amax as the unsigned max of its |x| bits, derives the E8M0 scale code by the convention's
rule, and casts x · r (r the element multiplier of that code, exact for a power of two) with
`_float_elem` — one read of x (the block stays in L1 between the amax and the element pass), one
write of the codes. Not yet: NVFP4 (its numpy path, several passes, already beats torchao's eager
reference by the issue's margin); its element step would be `_float_elem` on x / (block_scale ·
tensor_scale) formed in a float64 register, its scale `_float_elem` under the E4M3FN scale policy.
"""

from __future__ import annotations

import hashlib
import os
from collections import namedtuple
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np
from numba import njit  # type: ignore[import-untyped]
from numba.core import types as nbtypes  # type: ignore[import-untyped]
from numba.extending import intrinsic  # type: ignore[import-untyped]

from .philox import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, TILE
from .policy import (
    CastPolicy,
    NanPayload,
    NanToFinite,
    Overflow,
    Rounding,
    SrFraction,
    Subnormals,
    UnsignedNegative,
    UnsignedZero,
)
from .specs import FloatFormat, Format, IntFormat

# ------------------------------------------------------------------------------------------------
# compile options
# ------------------------------------------------------------------------------------------------

_DISK_CACHE = os.environ.get("LOWPREC_CODEC_CACHE", "1") != "0"

# The disk cache and the modules a kernel reads. numba keys a cached kernel on the content of the
# file that defines it (and its closure's values), not on the modules whose globals it compiles in:
# `Rounding.DOWN`'s number from `policy`, Philox's constants, `quant`'s scale-rule enums. Change one
# of those files alone (a branch switch, a merge, a mutation test's revert) and numba would load a
# kernel compiled against the old values — a silent wrong answer, seen once as P3109 `down` rounding
# to +Inf after the rounding enum grew. So lowprec's kernels are cached under a stamp that also holds
# `KERNEL_SOURCES_FINGERPRINT`: the SHA-256 of every file a kernel may take globals from (all of
# `formats/`, `simulations/quant/`, and every `*_kernels.py`; tests/test_kernel_cache.py checks that
# the kernel modules import nothing else of lowprec). Any change there recompiles on first use.

_PACKAGE_ROOT = Path(__file__).parent.parent  # holds formats/, simulations/ …: a checkout's root, an installed lowprec/


def kernel_source_files(root: Path = _PACKAGE_ROOT) -> list[Path]:
    """The files whose content the kernels' cache stamp covers (see above), sorted."""
    files = set((root / "formats").rglob("*.py")) | set((root / "simulations" / "quant").rglob("*.py"))
    files |= set((root / "simulations").rglob("*_kernels.py"))
    return sorted(p for p in files if "__pycache__" not in p.parts)


def kernel_sources_fingerprint(root: Path = _PACKAGE_ROOT) -> str:
    """SHA-256 (hex) of the relative path and content of every `kernel_source_files(root)`."""
    h = hashlib.sha256()
    for path in kernel_source_files(root):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


KERNEL_SOURCES_FINGERPRINT = kernel_sources_fingerprint()


def _install_cache_locators() -> bool:
    """Put lowprec's cache locators first in numba's list: for a function defined under lowprec's
    `formats/` or `simulations/` they behave as numba's own (NUMBA_CACHE_DIR, else the package's
    `__pycache__`, else the user cache) with `KERNEL_SOURCES_FINGERPRINT` added to the source
    stamp; for anything else they step aside. False (and no disk cache) where this numba has no
    such list to extend."""
    try:
        from numba.core import caching  # type: ignore[import-untyped]

        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")  # public in newer numba
        bases = (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator)
        if not isinstance(impl._locator_classes, list):
            return False
    except (ImportError, AttributeError):
        return False
    if any(getattr(c, "_lowprec", False) for c in impl._locator_classes):
        return True
    ours = tuple(os.path.realpath(_PACKAGE_ROOT / d) + os.sep for d in ("formats", "simulations"))

    def make(base: type) -> type:
        class Locator(base):  # type: ignore[misc, valid-type]
            _lowprec = True

            def get_source_stamp(self) -> Any:
                return (super().get_source_stamp(), KERNEL_SOURCES_FINGERPRINT)

            @classmethod
            def from_function(cls, py_func: Any, py_file: str) -> Any:
                if not os.path.realpath(py_file).startswith(ours):
                    return None
                return super().from_function(py_func, py_file)

        Locator.__name__ = Locator.__qualname__ = "Lowprec" + base.__name__
        return Locator

    impl._locator_classes[:0] = [make(b) for b in bases]
    return True


if _DISK_CACHE and not _install_cache_locators():
    _DISK_CACHE = False


def _jit(fn: Callable[..., Any]) -> Any:
    """njit(nogil) with the disk cache when a writable cache location exists, else in memory."""
    if _DISK_CACHE:
        try:
            return njit(nogil=True, cache=True)(fn)
        except RuntimeError:  # numba found no writable cache directory (read-only install)
            pass
    return njit(nogil=True, cache=False)(fn)


_inline = _jit  # helpers: LLVM inlines them into the loop kernels
_ir_inline = njit(nogil=True, inline="always")  # inlined by numba (LLVM would keep Philox a call)

# rounding modes, policy choices and NaN layouts as small integers (compile-time constants)
_RNE, _AWAY, _TZ, _UP, _DOWN, _SR, _ODD = range(7)
_ROUNDING_ID = {Rounding.NEAREST_EVEN: _RNE, Rounding.NEAREST_AWAY: _AWAY,
                Rounding.TOWARD_ZERO: _TZ, Rounding.UP: _UP, Rounding.DOWN: _DOWN,
                Rounding.STOCHASTIC: _SR, Rounding.TO_ODD: _ODD}
# where a NaN input's code comes from (`FloatFormat.nan_kind`)
_NK_NONE, _NK_NEGZERO, _NK_UTOP, _NK_TOP, _NK_BLOCK = range(5)
_NAN_KIND_ID = {"none": _NK_NONE, "negative_zero": _NK_NEGZERO, "unsigned_top": _NK_UTOP,
                "top": _NK_TOP, "block": _NK_BLOCK}
# stochastic rounding's fraction rules (`SrFraction`)
_SRF_TRUNC, _SRF_EVEN, _SRF_ODD, _SRF_HALF = range(4)
_SRF_ID = {SrFraction.TRUNCATE: _SRF_TRUNC, SrFraction.NEAREST_EVEN: _SRF_EVEN,
           SrFraction.NEAREST_ODD: _SRF_ODD, SrFraction.HALF: _SRF_HALF}
_CANONICAL, _ALL_ONES, _ALL_ONES_NEGATIVE, _TRUNCATE, _QUIET_TRUNCATE = range(5)
_PAYLOAD_ID = {NanPayload.CANONICAL: _CANONICAL, NanPayload.ALL_ONES: _ALL_ONES,
               NanPayload.ALL_ONES_NEGATIVE: _ALL_ONES_NEGATIVE, NanPayload.TRUNCATE: _TRUNCATE,
               NanPayload.QUIET_TRUNCATE: _QUIET_TRUNCATE}
_RAISE, _TO_ZERO, _SIGNED_MAX, _NEGATED_ZERO = range(4)  # NanToFinite
_NTF_ID = {NanToFinite.RAISE: _RAISE, NanToFinite.ZERO: _TO_ZERO,
           NanToFinite.SIGNED_MAX: _SIGNED_MAX, NanToFinite.NEGATED_ZERO: _NEGATED_ZERO}
_U_RAISE, _U_NAN, _U_KEEP = range(3)  # unsigned zero: SMALLEST = keep; negative: MAGNITUDE = keep
_UZERO_ID = {UnsignedZero.RAISE: _U_RAISE, UnsignedZero.NAN: _U_NAN, UnsignedZero.SMALLEST: _U_KEEP}
_UNEG_ID = {UnsignedNegative.RAISE: _U_RAISE, UnsignedNegative.NAN: _U_NAN,
            UnsignedNegative.MAGNITUDE: _U_KEEP}
# how the kernel reads its input: float32; float64 rounded once; float64 → float32 first (RNE)
_IN_F32, _IN_F64, _IN_F64_VIA_F32 = range(3)

# ------------------------------------------------------------------------------------------------
# bit casts and Philox-4x32-10
# ------------------------------------------------------------------------------------------------


def _bits_of_typer(typingctx: Any, x: Any) -> Any:
    """The IEEE bit pattern of a float32/float64 scalar as uint32/uint64 (a register bit cast)."""
    if not isinstance(x, nbtypes.Float):
        return None
    ut = nbtypes.uint32 if x.bitwidth == 32 else nbtypes.uint64

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(ut))

    return ut(x), codegen


_bits_of: Any = intrinsic(_bits_of_typer)


def _shl_typer(typingctx: Any, a: Any, s: Any) -> Any:
    """a << s in a's own unsigned width (numba would widen uint32 << uint32 to 64 bits, which
    LLVM cannot narrow back for a variable shift); the caller keeps s below the width."""
    if not (isinstance(a, nbtypes.Integer) and isinstance(s, nbtypes.Integer)):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        amount = context.cast(builder, args[1], s, a)
        return builder.shl(args[0], amount)

    return a(a, s), codegen


_shl: Any = intrinsic(_shl_typer)


def _float_of_typer(typingctx: Any, bits: Any, like: Any) -> Any:
    """The float whose bit pattern is `bits` (uint32 → float32, uint64 → float64; `like` is a float
    of that type, for the signature)."""
    if not (isinstance(bits, nbtypes.Integer) and isinstance(like, nbtypes.Float)):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        return builder.bitcast(args[0], context.get_value_type(like))

    return like(bits, like), codegen


_float_of: Any = intrinsic(_float_of_typer)


_U32 = np.uint32
_U64 = np.uint64
_M0 = np.uint64(PHILOX_M0)
_M1 = np.uint64(PHILOX_M1)
_S32 = np.uint64(32)
_LOW32 = np.uint64(0xFFFFFFFF)
_KW0 = np.uint64(PHILOX_W0)
_KW1 = np.uint64(PHILOX_W1)


@_ir_inline  # type: ignore[misc]
def _philox_round(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any) -> Any:
    """One Philox round on 32-bit words held in uint64 lanes: only their low 32 bits are
    meaningful (a product's low half is kept unmasked; every multiplicand is masked, which the
    compiler folds into a 32×32 → 64-bit vector multiply, and outputs are truncated)."""
    p0 = _M0 * (c0 & _LOW32)
    p1 = _M1 * (c2 & _LOW32)
    return (p1 >> _S32) ^ c1 ^ k0, p1, (p0 >> _S32) ^ c3 ^ k1, p0


@_ir_inline  # type: ignore[misc]
def _philox(n: Any, key0: Any, key1: Any) -> Any:
    """Philox-4x32-10 of counter (n lo, n hi, 0, 0) under key (key0, key1): four uint32 words."""
    c0 = _U64(n) & _LOW32
    c1 = _U64(n) >> _S32
    c2 = _U64(0)
    c3 = _U64(0)
    k0 = _U64(key0)
    k1 = _U64(key1)
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    k0 = (k0 + _KW0) & _LOW32
    k1 = (k1 + _KW1) & _LOW32
    c0, c1, c2, c3 = _philox_round(c0, c1, c2, c3, k0, k1)
    return _U32(c0), _U32(c1), _U32(c2), _U32(c3)


@_inline  # type: ignore[misc]
def _philox_tile(words: Any, t: int, k0: Any, k1: Any) -> None:
    """The 1024 random words of tile t in element order: counter (t << 8) | k gives the words of
    elements k, k + 256, k + 512, k + 768 (a vectorised loop over k)."""
    n0 = np.uint64(t) << np.uint64(8)
    for k in range(256):
        w = _philox(n0 | np.uint64(k), k0, k1)
        words[np.uint64(k)] = w[0]
        words[np.uint64(k + 256)] = w[1]
        words[np.uint64(k + 512)] = w[2]
        words[np.uint64(k + 768)] = w[3]


@njit(nogil=True)  # type: ignore[misc]
def philox_words(counters: np.ndarray, key0: int, key1: int) -> np.ndarray:
    """(n, 4) uint32 Philox words of uint64 counters, for tests of the compiled generator."""
    out = np.empty((counters.shape[0], 4), np.uint32)
    k0 = _U32(key0)
    k1 = _U32(key1)
    for i in range(counters.shape[0]):
        w = _philox(counters[i], k0, k1)
        out[i, 0] = w[0]
        out[i, 1] = w[1]
        out[i, 2] = w[2]
        out[i, 3] = w[3]
    return out


# ------------------------------------------------------------------------------------------------
# float formats: the plan (constants of one specialisation) and the element function
# ------------------------------------------------------------------------------------------------

FloatPlan = namedtuple(
    "FloatPlan",
    [
        # source bit layout, in the work type (uint32 for float32 sources, uint64 otherwise)
        "sign_src", "abs_mask", "inf_bits", "p", "mmask", "hid", "zero", "one", "c31", "c32", "p1",
        # target layout and rounding constants
        "emin_b", "sh0", "shmax", "m", "hid_t", "maxc", "over_code", "inf_code",
        "ss", "sbit", "nan_base", "quiet", "mmask_t", "magmask_t",
        # choices (Python ints/bools: folded away by LLVM)
        # the nearest-even shortcut (`_round_nearest_even`)
        "fast_rne", "add_const", "sub_branch", "min_normal_bits", "magic", "magic_bits", "no_over",
        # the E8M0 exponent-field shortcut (`_round_e8m0_exponent_field`)
        "e8m0_fast", "e8m0_add", "e8m0_lsb",
        "rnd", "over_nan", "inf_nan", "flush", "subnormals", "signed", "nan_kind", "no_negzero", "payload",
        # stochastic rounding with N random bits (`SrFraction`): default rule, q = N (N + 1 for
        # the half rule), 32 - N, the rule
        "sr_default", "sr_q", "sr_shift", "sr_rule", "one64", "mask32",
        "ntf", "uzero", "uneg", "exp_field", "in_kind", "below_src",
    ],
)


@_inline  # type: ignore[misc]
def _sr_decide(r: Any, shift: Any, u: Any, p: Any) -> Any:
    """Stochastic rounding with N random bits (`SrFraction`): the fraction r / 2^shift cut to q
    bits (t), its N random bits srb (the top N bits of ~u); up iff t + srb ≥ 2^N, or for the half
    rule 2t' + ... as `codec._sr_up`. All in uint64 (r < 2^54, t ≤ 2^33)."""
    r64 = np.uint64(r)
    sh = np.uint64(shift)
    q = p.sr_q
    cut = min(sh, q)
    t_left = _shl(r64, np.uint64(q - cut))
    k = np.uint64(sh - cut)  # bits dropped below the q kept
    kc = min(k, np.uint64(60))  # r < 2^54: beyond, nothing is kept and the remainder is below half
    t = t_left if sh <= q else np.uint64(r64 >> kc)
    if p.sr_rule == _SRF_EVEN or p.sr_rule == _SRF_ODD:
        rem = r64 & np.uint64(_shl(p.one64, kc) - p.one64)
        half = _shl(p.one64, np.uint64(max(kc, p.one64) - p.one64))
        t_odd = (t & p.one64) == p.one64
        tie_up = t_odd if p.sr_rule == _SRF_EVEN else (not t_odd)
        if (k > np.uint64(0)) & ((rem > half) | ((rem == half) & tie_up)):
            t = np.uint64(t + p.one64)
    srb = np.uint64((np.uint64(u) ^ p.mask32) >> p.sr_shift)
    top = _shl(p.one64, q)
    if p.sr_rule == _SRF_HALF:
        return np.uint64(t + srb + srb + p.one64) >= top
    return np.uint64(t + srb) >= top


@_inline  # type: ignore[misc]
def _round_general(a: Any, sgn: Any, a32: Any, u: Any, p: Any, U: Any) -> Any:
    """(magnitude code, NaN from overflow) of the finite magnitude bits `a` under any rounding
    mode: the codec's formula (sig·2^(e-p) → quantum exponent max(e, emin) - m → n → code)."""
    e_raw = U(a >> p.p)
    sig = U(a & p.mmask)
    if p.below_src:  # E8M0 from float32: a subnormal is sig·2 at biased exponent 0 (2^-127 = 1.0·2^0)
        if e_raw != p.zero:
            sig = U(sig | p.hid)
        else:
            sig = U(sig + sig)
        e1 = e_raw
    else:
        if e_raw != p.zero:
            sig = U(sig | p.hid)
        e1 = max(e_raw, p.one)
    eb = max(e1, p.emin_b)
    shift = U(U(eb - e1) + p.sh0)
    sc = min(shift, p.shmax)
    n = U(sig >> sc)
    unit = _shl(p.one, sc)
    r = U(sig & U(unit - p.one))
    half = U(unit >> p.one)
    rs = sgn if p.signed else p.zero  # unsigned formats round |x|
    # the parity of the rounded-down code: the mantissa's last bit, or with no mantissa bits the
    # exponent field's (E8M0: the code of 2^emin below 2^emin; P3109 K8P1: zero below it)
    if p.m > 0:
        odd = U(n & p.one) == p.one
    elif p.subnormals:
        odd = U(U(U(eb - p.emin_b) + n) & p.one) == p.one
    else:
        odd = U(U(eb - p.emin_b) & p.one) == p.one
    if p.rnd == _RNE:
        inc = (r > half) | ((r == half) & (half != p.zero) & odd)
    elif p.rnd == _AWAY:
        inc = (r >= half) & (r != p.zero)
    elif p.rnd == _TZ:
        inc = False
    elif p.rnd == _UP:
        inc = (r != p.zero) & (rs == p.zero)
    elif p.rnd == _DOWN:
        inc = (r != p.zero) & (rs == p.one)
    elif p.rnd == _ODD:
        inc = (r != p.zero) & (not odd)
    elif p.sr_default:  # stochastic: up iff u < floor(2^32 · r / 2^shift)
        short = min(shift, p.c32)  # both shifts computed, one selected: no branch in the loop
        # (shift 0 — an FP32 target — has r = 0: the amount is capped at 31 to stay defined)
        thr_left = _shl(r, min(U(p.c32 - short), p.c31))
        thr_right = U(r >> min(U(shift - short), p.p1))
        thr = thr_left if shift <= p.c32 else thr_right
        inc = U(u) < thr
    else:
        inc = _sr_decide(r, shift, u, p)
    n = U(n + U(inc))
    ex = U(U(eb - p.emin_b) << p.m)
    if p.subnormals:
        code = U(ex + n)
    else:  # no zero, no subnormals: below 2^emin gives 2^emin (E8M0)
        code = U(U(ex + max(n, p.hid_t)) - p.hid_t)
    if p.exp_field:  # ml_dtypes/torch read a float32 subnormal's exponent field as if normal
        if (a32 > _U32(0x400000)) & (a32 < _U32(0x800000)):
            code = p.one
    # overflow: IEEE 754 §7.4 — a directed rounding toward zero still gives ±max
    if p.rnd == _TZ:
        toward_zero = True
    elif p.rnd == _UP:
        toward_zero = rs == p.one
    elif p.rnd == _DOWN:
        toward_zero = rs == p.zero
    else:
        toward_zero = False
    over = code > p.maxc
    nan = over & (not toward_zero) & p.over_nan
    if over:
        code = p.maxc if toward_zero else p.over_code
    return code, nan


@_inline  # type: ignore[misc]
def _round_nearest_even(a: Any, p: Any, U: Any) -> Any:
    """(magnitude code, NaN from overflow) under nearest-even with a subnormal target range: in the
    target's normal range add half a quantum minus one plus the kept last bit, and shift (the carry
    into the exponent is the right carry); below it add a float "magic number" 2^(qe_min + p), which
    the FPU rounds to the subnormal quantum, nearest-even, exactly. Beyond the last value that rounds
    to max: overflow."""
    code = U(U(U(a + p.add_const) + U(U(a >> p.sh0) & p.one)) >> p.sh0)
    if p.sub_branch:
        if a < p.min_normal_bits:
            code = U(_bits_of(_float_of(a, p.magic) + p.magic) - p.magic_bits)
    over = a > p.no_over
    if over:
        code = p.over_code
    return code, over & p.over_nan


@_inline  # type: ignore[misc]
def _round_e8m0_exponent_field(a: Any, p: Any, U: Any) -> Any:
    """(code, NaN from overflow) of float32 magnitude bits `a` in E8M0 when float32 subnormals are
    read by their exponent field (ml_dtypes, torch): a normal value's code is its exponent field
    after rounding the mantissa into it (add a constant per mode, nearest-even adding the field's
    last bit, then shift); a subnormal above 2^-127 gives 2^-126 (code 1), any other 2^-127 (0)."""
    e_raw = U(a >> p.p)
    # a subnormal's rule (code 1 iff a > 2^22) is the same add-and-shift with the add 2^22 - 1:
    # selecting the add, not the code, keeps one shift and lets LLVM narrow the codes with packs
    add = U(U(p.hid >> p.one) - p.one) if e_raw == p.zero else U(p.e8m0_add + U(e_raw & p.e8m0_lsb))
    code = U(U(a + add) >> p.p)
    over = code > p.maxc
    if over:
        code = p.over_code
    return code, over & p.over_nan


@_inline  # type: ignore[misc]
def _float_elem(b: Any, a32: Any, u: Any, p: Any, U: Any) -> Any:
    """(code, refused) of one input bit pattern `b` (U = its unsigned type); `a32` the float32
    magnitude bits (for E8M0's exponent-field rule); `u` the element's 32 random bits."""
    sgn = U(b >> p.sign_src)
    a = U(b & p.abs_mask)
    if p.fast_rne:
        code, nan = _round_nearest_even(a, p, U)
    elif p.e8m0_fast:
        code, nan = _round_e8m0_exponent_field(a, p, U)
    else:
        code, nan = _round_general(a, sgn, a32, u, p, U)
    if p.flush:
        if (code > p.zero) & (code < p.hid_t):
            code = p.zero
    is_inf = a == p.inf_bits
    is_nan_in = a > p.inf_bits
    if is_inf:
        code = p.inf_code
    nan = nan | is_nan_in | (is_inf & p.inf_nan)
    refused = False
    if p.signed:
        if p.no_negzero:  # the -0 code is NaN: a negative underflow is +0
            if code != p.zero:
                code = U(code | U(sgn << p.ss))
        else:
            code = U(code | U(sgn << p.ss))
    else:
        zero = a == p.zero
        neg_nonzero = (sgn == p.one) & (not is_nan_in) & (not zero)
        if p.uneg == _U_RAISE:
            refused = neg_nonzero
        elif p.uneg == _U_NAN:
            nan = nan | neg_nonzero
        if p.uzero == _U_RAISE:
            refused = refused | zero
        elif p.uzero == _U_NAN:
            nan = nan | zero
        else:  # smallest: 2^-127, code 0
            if zero:
                code = p.zero
    if p.nan_kind == _NK_NONE:  # NaN into a format without NaN
        if p.ntf == _RAISE:
            refused = refused | nan
        elif nan:
            if p.ntf == _TO_ZERO:
                code = p.zero
            elif p.ntf == _SIGNED_MAX:
                code = U(p.maxc | U(sgn << p.ss))
            else:  # negated zero
                code = U(U(p.one - sgn) << p.ss)
    elif nan:
        if p.nan_kind == _NK_NEGZERO:
            code = p.sbit
        elif p.nan_kind == _NK_UTOP:
            code = p.magmask_t
        elif p.payload == _ALL_ONES_NEGATIVE:
            code = U(p.magmask_t | p.sbit)
        elif p.nan_kind == _NK_TOP:
            code = U(p.magmask_t | U(sgn << p.ss))
        elif p.payload == _CANONICAL:
            code = U(p.nan_base | p.quiet | U(sgn << p.ss))
        elif p.payload == _ALL_ONES:
            code = U(p.nan_base | p.mmask_t | U(sgn << p.ss))
        else:
            top = U(U(a & p.mmask) >> p.sh0)
            if p.payload == _QUIET_TRUNCATE:
                code = U(p.nan_base | p.quiet | top | U(sgn << p.ss))
            else:  # truncate: a payload that truncates to zero becomes 1
                if top == p.zero:
                    top = p.one
                code = U(p.nan_base | top | U(sgn << p.ss))
    return code, refused


def float_plan(fmt: FloatFormat, policy: CastPolicy, dtype: np.dtype) -> tuple[Any, Any]:
    """(plan, U): the constants of one (format, policy, input dtype) specialisation."""
    if dtype == np.float32:
        in_kind = _IN_F32
    elif policy.float64_via_float32:
        in_kind = _IN_F64_VIA_F32
    else:
        in_kind = _IN_F64
    src32 = in_kind != _IN_F64
    U: Any
    if src32:
        U, width, p, sbias = np.uint32, 32, 23, 127
    else:
        U, width, p, sbias = np.uint64, 64, 52, 1023
    m = fmt.mantissa_bits
    maxc = fmt.max_magnitude_code
    has_nonfinite_code = fmt.has_inf or fmt.has_nan
    # finite overflow saturates under saturate and saturate_propagate; ±Inf only under saturate
    sat_finite = policy.overflow is not Overflow.NONFINITE
    sat_inf = policy.overflow is Overflow.SATURATE
    nonfinite = maxc + 1 if fmt.has_inf else 0  # Inf, or NaN (set by the flags below)
    over_code = maxc if sat_finite else nonfinite
    inf_code = maxc if sat_inf else nonfinite
    over_nan = (not sat_finite) and (not fmt.has_inf) and has_nonfinite_code
    e_all = ((1 << fmt.exponent_bits) - 1) << m
    sh0 = p - m
    rebias = (sbias - fmt.bias) << p
    sub_branch = fmt.emin + sbias > 1  # the target's subnormals lie in the source's normal range
    fast_rne = (policy.rounding is Rounding.NEAREST_EVEN and fmt.subnormals and sh0 > 0 and m > 0
                and (sub_branch or rebias == 0))
    real: Any = np.float32 if width == 32 else np.float64
    magic = real(2.0 ** (fmt.emin - m + p)) if fast_rne else real(1.0)
    if fast_rne:
        max_bits = (((maxc >> m) - fmt.bias + sbias) << p) | ((maxc & ((1 << m) - 1)) << sh0)
        no_over = max_bits + (1 << (sh0 - 1)) - (maxc & 1)  # a tie at max + half rounds to even
        add_const = ((1 << (sh0 - 1)) - 1 - rebias) % (1 << width)
    else:
        no_over = add_const = 0
    exp_field = src32 and not fmt.subnormals and policy.e8m0_float32_subnormals == "exponent_field"
    e8m0_fast = exp_field and m == 0 and policy.rounding not in (Rounding.STOCHASTIC, Rounding.TO_ODD)
    half_mant = 1 << (p - 1)
    e8m0_add = {Rounding.NEAREST_EVEN: half_mant - 1, Rounding.NEAREST_AWAY: half_mant,
                Rounding.UP: (1 << p) - 1}.get(policy.rounding, 0)
    plan = FloatPlan(
        sign_src=U(width - 1), abs_mask=U((1 << (width - 1)) - 1),
        inf_bits=U(((1 << (width - 1 - p)) - 1) << p), p=U(p), mmask=U((1 << p) - 1),
        hid=U(1 << p), zero=U(0), one=U(1), c31=U(31), c32=U(32), p1=U(p + 1),
        emin_b=U(fmt.emin + sbias), sh0=U(sh0), shmax=U(p + 2), m=U(m), hid_t=U(1 << m),
        maxc=U(maxc), over_code=U(over_code),
        inf_code=U(inf_code), ss=U(fmt.sign_shift if fmt.signed else 0),
        sbit=U(1 << fmt.sign_shift), nan_base=U(e_all), quiet=U(1 << (m - 1) if m > 0 else 0),
        mmask_t=U((1 << m) - 1), magmask_t=U(fmt.magnitude_mask),
        fast_rne=fast_rne, add_const=U(add_const), sub_branch=sub_branch and fast_rne,
        min_normal_bits=U(max(fmt.emin + sbias, 0) << p), magic=magic,
        magic_bits=U(int(np.array(magic).view(U))), no_over=U(no_over),
        e8m0_fast=e8m0_fast, e8m0_add=U(e8m0_add),
        e8m0_lsb=U(1 if policy.rounding is Rounding.NEAREST_EVEN else 0),
        rnd=_ROUNDING_ID[policy.rounding], over_nan=over_nan,
        inf_nan=(not sat_inf) and (not fmt.has_inf),
        flush=fmt.subnormals and policy.subnormals is Subnormals.FLUSH,
        subnormals=fmt.subnormals, signed=fmt.signed, nan_kind=_NAN_KIND_ID[fmt.nan_kind],
        no_negzero=fmt.signed and not fmt.has_negative_zero,
        payload=_PAYLOAD_ID[policy.nan_payload], ntf=_NTF_ID[policy.nan_to_finite],
        # a format with a zero takes ±0 as its zero code, whatever the unsigned-zero rule
        uzero=_U_KEEP if fmt.has_zero else _UZERO_ID[policy.unsigned_zero],
        uneg=_UNEG_ID[policy.unsigned_negative],
        sr_default=policy.sr_default,
        sr_q=np.uint64(policy.sr_bits + (1 if policy.sr_fraction is SrFraction.HALF else 0)),
        sr_shift=np.uint64(32 - policy.sr_bits), sr_rule=_SRF_ID[policy.sr_fraction],
        one64=np.uint64(1), mask32=np.uint64(0xFFFFFFFF),
        exp_field=exp_field,
        in_kind=in_kind, below_src=fmt.emin + sbias < 1,
    )
    return plan, U


@_inline  # type: ignore[misc]
def _sr_span(x: Any, out: Any, lo: int, hi: int, k0: Any, k1: Any, plan: Any, U: Any, OUT: Any) -> int:
    """Stochastic rounding of elements lo..hi-1 one by one (partial tiles): one Philox call each."""
    for i in range(lo, hi):
        n = (np.uint64(i >> 10) << np.uint64(8)) | np.uint64(i & 255)
        w = _philox(n, k0, k1)
        word = (i >> 8) & 3
        u = w[0] if word == 0 else (w[1] if word == 1 else (w[2] if word == 2 else w[3]))
        code, refused = _float_elem(_load(x, i, plan), _load_a32(x, i, plan), u, plan, U)
        if refused:
            return i
        out[np.uint64(i)] = OUT(code)
    return -1


@_inline  # type: ignore[misc]
def _first_refused(x: Any, lo: int, hi: int, plan: Any, U: Any) -> int:
    """Index of the first element in lo..hi-1 that the policy refuses (-1: none)."""
    for i in range(lo, hi):
        code, refused = _float_elem(_load(x, i, plan), _load_a32(x, i, plan), _U32(0), plan, U)
        if refused:
            return i
    return -1


def _float_loops(plan: Any, U: Any, OUT: Any) -> Callable[..., int]:
    """The loop kernel of one float specialisation: a closure over its constants only, so numba's
    disk cache keys it by their values. Deterministic and stochastic kernels are separate closures,
    so a deterministic one never carries (or compiles) the Philox code."""

    out_mask = U(np.iinfo(OUT).max)  # codes fit the output type; the mask tells LLVM so, which
    # lets it narrow a vector of 32-bit codes with packs instead of element-by-element inserts

    def deterministic(x: Any, out: Any, lo: int, hi: int, key0: int, key1: int) -> int:
        any_refused = False
        for i in range(lo, hi):
            code, refused = _float_elem(_load(x, i, plan), _load_a32(x, i, plan), _U32(0), plan, U)
            out[np.uint64(i)] = OUT(code & out_mask)
            any_refused |= refused
        return _first_refused(x, lo, hi, plan, U) if any_refused else -1

    def stochastic(x: Any, out: Any, lo: int, hi: int, key0: int, key1: int) -> int:
        k0 = _U32(key0)
        k1 = _U32(key1)
        t_first = (lo + TILE - 1) // TILE
        t_last = hi // TILE  # full tiles: [t_first, t_last)
        if t_first >= t_last:
            return _sr_span(x, out, lo, hi, k0, k1, plan, U, OUT)
        head = _sr_span(x, out, lo, t_first * TILE, k0, k1, plan, U, OUT)
        if head >= 0:
            return head
        any_refused = False
        words = np.empty(TILE, np.uint32)  # one tile's random words (4 KiB, reused)
        for t in range(t_first, t_last):
            _philox_tile(words, t, k0, k1)
            base = t * TILE
            for j in range(TILE):
                code, refused = _float_elem(_load(x, base + j, plan), _load_a32(x, base + j, plan),
                                            words[np.uint64(j)], plan, U)
                out[np.uint64(base + j)] = OUT(code)
                any_refused |= refused
        if any_refused:
            return _first_refused(x, t_first * TILE, t_last * TILE, plan, U)
        return _sr_span(x, out, t_last * TILE, hi, k0, k1, plan, U, OUT)

    return stochastic if plan.rnd == _SR else deterministic


@_inline  # type: ignore[misc]
def _load(x: Any, i: int, plan: Any) -> Any:
    """The work bit pattern of element i: its float32 or float64 bits, or the bits of its float32
    rounding (float64 input under float64_via_float32; numba unifies the branches, so these arrive
    zero-extended to uint64, which the uint32 plan arithmetic reads unchanged)."""
    if plan.in_kind == _IN_F64_VIA_F32:
        return _bits_of(np.float32(x[np.uint64(i)]))
    return _bits_of(x[np.uint64(i)])


@_inline  # type: ignore[misc]
def _load_a32(x: Any, i: int, plan: Any) -> Any:
    """float32 magnitude bits of element i where the E8M0 exponent-field rule needs them."""
    if plan.exp_field:
        if plan.in_kind == _IN_F32:
            return _U32(_bits_of(x[np.uint64(i)]) & _U32(0x7FFFFFFF))
        return _U32(_bits_of(np.float32(x[np.uint64(i)])) & _U32(0x7FFFFFFF))
    return _U32(0)


# ------------------------------------------------------------------------------------------------
# integer grids
# ------------------------------------------------------------------------------------------------

IntPlan = namedtuple("IntPlan", ["rnd", "fmin", "fmax", "clamp", "half", "fzero", "two32", "sign_bit",
                                 "bits_zero", "mask", "ntf", "nan_neg", "nan_pos", "in_kind",
                                 "sr_default", "sr_scale", "sr_top", "sr_shift", "sr_rule", "mask32"])


@_inline  # type: ignore[misc]
def _int_elem(v: Any, u: Any, p: Any) -> Any:
    """(code, refused) of one value on an integer grid: round |v| under the policy's mode, restore
    the sign, clamp to [min, max], two's complement bits (as `codec._encode_int`). All in v's own
    float type (exact: the grid's integers and a float's floor and fraction are representable),
    one conversion to int32 at the end."""
    nan = v != v
    neg = (_bits_of(v) >> p.sign_bit) != p.bits_zero
    mag = abs(v)
    if not mag <= p.clamp:  # beyond the grid (or NaN): any value past 2^bits clamps the same
        mag = p.clamp
    if p.rnd == _RNE:
        r = np.rint(mag)  # ties to even
    elif p.rnd == _AWAY:
        fl = np.floor(mag)  # (not floor(mag + 0.5): that sum rounds for 0.5 - 2^-25)
        r = fl + p.half + p.half if mag - fl >= p.half else fl
    elif p.rnd == _TZ:
        r = np.floor(mag)
    elif p.rnd == _UP:
        r = np.floor(mag) if neg else np.ceil(mag)
    elif p.rnd == _DOWN:
        r = np.ceil(mag) if neg else np.floor(mag)
    elif p.rnd == _ODD:  # an inexact value goes to the odd neighbour
        fl = np.floor(mag)
        even = np.floor(fl * p.half) == fl * p.half
        r = fl + p.half + p.half if (mag != fl) & even else fl
    elif p.sr_default:  # stochastic: up iff u < floor(2^32 · frac) (exact: frac · 2^32 is an integer < 2^32)
        fl = np.floor(mag)
        r = fl + p.half + p.half if np.uint64(u) < np.uint64((mag - fl) * p.two32) else fl
    else:  # stochastic with N random bits (`SrFraction`), in float64 (every sum below 2^35 is exact)
        fl = np.floor(mag)
        scaled = np.float64(mag - fl) * p.sr_scale
        if p.sr_rule == _SRF_EVEN:
            t = np.rint(scaled)
        elif p.sr_rule == _SRF_ODD:
            tf = np.floor(scaled)
            d = scaled - tf
            t_even = np.floor(tf * 0.5) * 2.0 == tf
            t = tf + 1.0 if (d > 0.5) | ((d == 0.5) & t_even) else tf
        else:
            t = np.floor(scaled)
        srb = np.float64((np.uint64(u) ^ p.mask32) >> p.sr_shift)
        if p.sr_rule == _SRF_HALF:
            up = t + srb + srb + 1.0 >= p.sr_top
        else:
            up = t + srb >= p.sr_top
        r = fl + p.half + p.half if up else fl
    val = -r if neg else r
    val = min(max(val, p.fmin), p.fmax)
    refused = False
    if nan:
        if p.ntf == _RAISE:
            refused = True
        val = p.nan_neg if neg else p.nan_pos
    return np.int32(val) & p.mask, refused


@_inline  # type: ignore[misc]
def _load_value(x: Any, i: int, plan: Any) -> Any:
    """Element i as a float of the array's type (rounded to float32 first under via-float32)."""
    if plan.in_kind == _IN_F64_VIA_F32:
        return np.float32(x[np.uint64(i)])
    return x[np.uint64(i)]


def int_plan(fmt: IntFormat, policy: CastPolicy, dtype: np.dtype) -> Any:
    mx, mn = int(fmt.max), int(fmt.min)
    nan_pos = mx if policy.nan_to_finite is NanToFinite.SIGNED_MAX else 0
    nan_neg = ((-mx if fmt.signed else 0) if policy.nan_to_finite is NanToFinite.SIGNED_MAX else 0)
    in_kind = (_IN_F32 if dtype == np.float32 else
               _IN_F64_VIA_F32 if policy.float64_via_float32 else _IN_F64)
    # the loader's value type follows the array (numba unifies both branches of `_load_value`:
    # float64 arrays give float64 values, the float32 rounding widened exactly under via-float32)
    wide = dtype != np.float32
    real: Any = np.float64 if wide else np.float32
    q = policy.sr_bits + (1 if policy.sr_fraction is SrFraction.HALF else 0)
    return IntPlan(sr_default=policy.sr_default, sr_scale=np.float64(2.0**q), sr_top=np.float64(2.0**q),
                   sr_shift=np.uint64(32 - policy.sr_bits), sr_rule=_SRF_ID[policy.sr_fraction],
                   mask32=np.uint64(0xFFFFFFFF),
                   rnd=_ROUNDING_ID[policy.rounding], fmin=real(mn), fmax=real(mx),
                   clamp=real(1 << fmt.bits), half=real(0.5), fzero=real(0.0), two32=real(2.0**32),
                   sign_bit=np.uint64(63) if wide else np.uint32(31),
                   bits_zero=np.uint64(0) if wide else np.uint32(0),
                   mask=np.int32((1 << fmt.bits) - 1),
                   ntf=_NTF_ID[policy.nan_to_finite], nan_neg=real(nan_neg),
                   nan_pos=real(nan_pos), in_kind=in_kind)


@_inline  # type: ignore[misc]
def _int_sr_span(x: Any, out: Any, lo: int, hi: int, k0: Any, k1: Any, plan: Any, OUT: Any) -> int:
    for i in range(lo, hi):
        n = (np.uint64(i >> 10) << np.uint64(8)) | np.uint64(i & 255)
        w = _philox(n, k0, k1)
        word = (i >> 8) & 3
        u = w[0] if word == 0 else (w[1] if word == 1 else (w[2] if word == 2 else w[3]))
        code, refused = _int_elem(_load_value(x, i, plan), u, plan)
        if refused:
            return i
        out[np.uint64(i)] = OUT(code)
    return -1


@_inline  # type: ignore[misc]
def _int_first_nan(x: Any, lo: int, hi: int) -> int:
    for i in range(lo, hi):
        if x[np.uint64(i)] != x[np.uint64(i)]:
            return i
    return -1


def _int_loops(plan: Any, OUT: Any) -> Callable[..., int]:
    """The loop kernel of one integer-grid specialisation (see `_float_loops`)."""

    def deterministic(x: Any, out: Any, lo: int, hi: int, key0: int, key1: int) -> int:
        any_refused = False
        for i in range(lo, hi):
            code, refused = _int_elem(_load_value(x, i, plan), _U32(0), plan)
            out[np.uint64(i)] = OUT(code)
            any_refused |= refused
        return _int_first_nan(x, lo, hi) if any_refused else -1

    def stochastic(x: Any, out: Any, lo: int, hi: int, key0: int, key1: int) -> int:
        k0 = _U32(key0)
        k1 = _U32(key1)
        t_first = (lo + TILE - 1) // TILE
        t_last = hi // TILE
        if t_first >= t_last:
            return _int_sr_span(x, out, lo, hi, k0, k1, plan, OUT)
        head = _int_sr_span(x, out, lo, t_first * TILE, k0, k1, plan, OUT)
        if head >= 0:
            return head
        any_refused = False
        words = np.empty(TILE, np.uint32)
        for t in range(t_first, t_last):
            _philox_tile(words, t, k0, k1)
            base = t * TILE
            for j in range(TILE):
                code, refused = _int_elem(_load_value(x, base + j, plan), words[np.uint64(j)], plan)
                out[np.uint64(base + j)] = OUT(code)
                any_refused |= refused
        if any_refused:
            return _int_first_nan(x, t_first * TILE, t_last * TILE)
        return _int_sr_span(x, out, t_last * TILE, hi, k0, k1, plan, OUT)

    return stochastic if plan.rnd == _SR else deterministic


# ------------------------------------------------------------------------------------------------
# specialisation cache
# ------------------------------------------------------------------------------------------------

_OUT_TYPES = {"uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32}


@lru_cache(maxsize=None)
def _compiled(plan: Any, U: Any, OUT: Any) -> Any:
    if isinstance(plan, IntPlan):
        return _jit(_int_loops(plan, OUT))
    return _jit(_float_loops(plan, U, OUT))


def encode_kernel(fmt: Format, policy: CastPolicy, dtype: np.dtype) -> Any:
    """The compiled kernel `k(x, out, lo, hi, key0, key1) -> first refused index or -1` of one
    (format, policy, input dtype); built at first use, then cached (in memory and, where possible,
    on disk). Policies that differ only in their name share a kernel."""
    OUT = _OUT_TYPES[fmt.code_dtype]
    if isinstance(fmt, IntFormat):
        return _compiled(int_plan(fmt, policy, dtype), None, OUT)
    plan, U = float_plan(fmt, policy, dtype)
    return _compiled(plan, U, OUT)


# ------------------------------------------------------------------------------------------------
# decode
# ------------------------------------------------------------------------------------------------


def _decode_all_valid(codes: Any, table: Any, out: Any, lo: int, hi: int) -> None:
    """out[i] = table[codes[i]] where every value of the code dtype is a valid code."""
    for i in range(lo, hi):
        out[np.uint64(i)] = table[codes[np.uint64(i)]]


def _decode_checked(codes: Any, table: Any, out: Any, lo: int, hi: int) -> Any:
    """out[i] = table[clip(codes[i])]; returns (min, max) of the codes for the range check."""
    last = table.shape[0] - 1
    cmin = np.int64(0)
    cmax = np.int64(0)
    if hi > lo:
        cmin = np.int64(codes[lo])
        cmax = cmin
    for i in range(lo, hi):
        c = np.int64(codes[np.uint64(i)])
        cmin = min(cmin, c)
        cmax = max(cmax, c)
        out[np.uint64(i)] = table[np.uint64(min(max(c, np.int64(0)), last))]
    return cmin, cmax


def _decode_shifted(codes: Any, out_bits: Any, lo: int, hi: int, shift: Any) -> None:
    """out_bits[i] = codes[i] << shift: decode where the value table is exactly that (BF16, whose
    codes are the top half of a float32, NaN payloads included under the ml_dtypes/torch rules)."""
    for i in range(lo, hi):
        out_bits[np.uint64(i)] = _shl(np.uint32(codes[np.uint64(i)]), shift)


decode_shifted = _jit(_decode_shifted)
decode_all_valid = _jit(_decode_all_valid)
decode_checked = _jit(_decode_checked)
